"""`/api/files`: upload a file (multipart, streamed, capped), read its metadata and bytes,
delete it. Every id is its owner's: anyone else gets the 404 a missing id gets."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Path, Request, Response, status
from fastapi.responses import JSONResponse, StreamingResponse

from app.api import idempotency
from app.api.deps import CallerDep, DbDep, FilesDep, IdempotencyTtlDep
from app.api.idempotent_upload import upload_once
from app.api.routing import api_router
from app.api.schemas.files import FileOut
from app.api.uploads import read_file_part
from app.domain.files import MEDIA_TYPES, SUPPORTED_LIST

router = api_router(prefix="/api/files", tags=["files"])

FileId = Annotated[str, Path(description="File id (`file_...`).")]
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "No such file (or not yours)."}}
_UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {
                            "type": "string",
                            "format": "binary",
                            "description": f"The file: {SUPPORTED_LIST}.",
                        }
                    },
                }
            }
        },
    }
}


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=FileOut,
    summary="Upload a file (PDF, XLSX, CSV, JSON, PNG or JPEG, up to the size limit).",
    description="The type is decided from the file's bytes, not its name or Content-Type. "
    "Documents are read into text at once (so a broken one is refused here).",
    openapi_extra=_UPLOAD_BODY
    | idempotency.openapi(
        "Its request is the file's name and bytes: the same file sent again with the key "
        "answers the first upload's file (same id) and keeps no second copy, also when "
        "the caller is at the quota; once that file is deleted, it is stored anew."
    ),
    responses={
        400: {"description": "`invalid_upload`: not multipart, or no part named `file`."},
        408: {"description": "`upload_timeout`: the upload took too long."},
        413: {
            "description": "`file_too_large`: over the limit (named in the message); "
            "`upload_quota_exceeded`: the caller's stored files would pass their quota "
            "(`quota_bytes`, `used_bytes`; delete files to make room)."
        },
        415: {"description": "`unsupported_file_type`: the message lists what is accepted."},
        422: {"description": "`file_rejected`: unreadable, or an archive bomb."},
    },
)
async def upload_file(
    request: Request, files: FilesDep, db: DbDep, caller: CallerDep, ttl: IdempotencyTtlDep
) -> FileOut | JSONResponse:
    raw_key = request.headers.get(idempotency.HEADER)
    # A malformed key is refused before a byte is stored; the fingerprint comes later.
    key = None if raw_key is None else idempotency.request_key(raw_key, "POST", "", b"", ttl)
    name, chunks = await read_file_part(request)
    if key is not None:
        path = request.url.path
        outcome = await upload_once(files, db, caller.user_id, name, chunks, key, path)
        return JSONResponse(outcome.body, status_code=outcome.status)
    record = await files.upload(caller.user_id, name, chunks)
    _, extraction = await files.get(caller.user_id, record.id)
    return FileOut.from_record(record, extraction)


@router.get("/{file_id}", response_model=FileOut, summary="A file's metadata.", responses=NOT_FOUND)
async def get_file(file_id: FileId, files: FilesDep, caller: CallerDep) -> FileOut:
    record, extraction = await files.get(caller.user_id, file_id)
    return FileOut.from_record(record, extraction)


@router.get(
    "/{file_id}/content",
    response_class=StreamingResponse,
    summary="A file's bytes.",
    # The bytes go out as the type they were stored as, so each of those is documented:
    # `application/octet-stream` named none a download answers with.
    responses={
        200: {"content": {media_type: {} for media_type in MEDIA_TYPES.values()}},
        **NOT_FOUND,
    },
)
async def get_file_content(file_id: FileId, files: FilesDep, caller: CallerDep) -> Response:
    record, body = await files.content(caller.user_id, file_id)
    return StreamingResponse(
        body,
        media_type=record.media_type,
        headers={
            "Content-Length": str(record.size),
            "Content-Disposition": f"attachment; filename*=UTF-8''{quote(record.name)}",
            "X-Content-Type-Options": "nosniff",
        },
    )


@router.delete(
    "/{file_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    summary="Delete a file for good.",
    responses=NOT_FOUND,
)
async def delete_file(file_id: FileId, files: FilesDep, caller: CallerDep) -> Response:
    await files.delete(caller.user_id, file_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
