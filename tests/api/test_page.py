"""`GET /` and `GET /docs` are served from the package: no CDN, no other origin."""

from __future__ import annotations

import re

from tests.fakes.db import ApiClient

EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["'](?:https?:)?//""", re.IGNORECASE)


async def test_the_page_and_its_assets_come_from_the_service(api: ApiClient) -> None:
    page = await api.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert not EXTERNAL.search(page.text)
    for asset in re.findall(r"""(?:src|href)="(/ui/[^"]+)\"""", page.text):
        served = await api.get(asset)
        assert served.status_code == 200, asset
        assert served.headers["x-content-type-options"] == "nosniff"
    script = await api.get("/ui/app.js")
    assert script.headers["content-type"].startswith("text/javascript")
    assert "new EventSource" in script.text


async def test_the_docs_load_swagger_ui_from_the_service(api: ApiClient) -> None:
    docs = await api.get("/docs")
    assert docs.status_code == 200
    assert not EXTERNAL.search(docs.text)
    assets = re.findall(r"""["'](/docs-assets/[^"']+)["']""", docs.text)
    assert {a.rsplit("/", 1)[1] for a in assets} >= {"swagger-ui-bundle.js", "swagger-ui.css"}
    for asset in assets:
        assert (await api.get(asset)).status_code == 200, asset
    assert (await api.get("/openapi.json")).status_code == 200


async def test_only_the_shipped_files_are_served(api: ApiClient) -> None:
    for path in ("/ui/index.html", "/ui/..%2Fapp.js", "/docs-assets/index.j2", "/ui/nope.js"):
        answer = await api.get(path)
        assert answer.status_code == 404, path
        assert answer.json()["error"]["code"]
