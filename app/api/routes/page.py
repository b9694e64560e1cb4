"""The built-in page (`GET /`) and the API docs (`GET /docs`), served without a CDN.

The page is plain HTML, CSS and JavaScript shipped in the package (`app/api/page/`): no
build step, nothing fetched from elsewhere, so it works offline and behind strict egress.
Swagger UI's files come from the `swagger-ui-bundle-v2` package for the same reason.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Annotated

import swagger_ui_bundle
from fastapi import HTTPException
from fastapi import Path as PathParam
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, Response

from app.api.routing import api_router

router = api_router(include_in_schema=False)

PAGE = files("app.api") / "page"
PAGE_FILES = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
DOCS_FILES = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}
# Revalidated on every load (an upgrade must not leave an old script running), cheap
# thanks to the ETag FileResponse sends.
CACHE = {"cache-control": "no-cache", "x-content-type-options": "nosniff"}
NAME = Annotated[str, PathParam(max_length=64)]


@router.get("/", response_class=HTMLResponse)
async def page() -> Response:
    return HTMLResponse(PAGE.joinpath("index.html").read_text(encoding="utf-8"), headers=CACHE)


def _shipped(folder: Path, media_types: dict[str, str], name: str) -> Response:
    """One of the files listed for `folder`; any other name is a 404."""
    media_type = media_types.get(name)
    if media_type is None:
        raise HTTPException(status_code=404)
    return FileResponse(folder / name, media_type=media_type, headers=CACHE)


@router.get("/ui/{name}")
async def page_asset(name: NAME) -> Response:
    return _shipped(Path(str(PAGE)), PAGE_FILES, name)


@router.get("/docs", response_class=HTMLResponse)
async def docs() -> Response:
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="chat-bff API",
        swagger_js_url="/docs-assets/swagger-ui-bundle.js",
        swagger_css_url="/docs-assets/swagger-ui.css",
        swagger_favicon_url="/docs-assets/favicon-32x32.png",
    )


@router.get("/docs-assets/{name}")
async def docs_asset(name: NAME) -> Response:
    return _shipped(Path(str(swagger_ui_bundle.swagger_ui_path)), DOCS_FILES, name)
