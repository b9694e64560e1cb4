"""Uploaded files: the kinds the service accepts, their records, and how they are refused.

The kind of a file is decided from its bytes (`app.files.sniff`), never from its name or
the client's Content-Type. Each kind has one media type:

    kind   media type                                                           read as
    pdf    application/pdf                                                      text
    xlsx   application/vnd.openxmlformats-officedocument.spreadsheetml.sheet   tables
    csv    text/csv                                                             table
    json   application/json                                                     summary
    png    image/png                                                            image
    jpeg   image/jpeg                                                           image

Refusals are errors with their own status so every surface answers them alike:
`FileTooLarge` 413 (the limit in the message), `UploadQuotaExceeded` 413 (the owner's
stored files would pass their quota), `UnsupportedFileType` 415 (the supported
list in the message), `FileRejected` 422 (a supported kind whose content is unsafe or
broken, such as an archive bomb dressed as a spreadsheet).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from app.domain.errors import ChatBffError

FileKind = Literal["pdf", "xlsx", "csv", "json", "png", "jpeg"]

MEDIA_TYPES: dict[FileKind, str] = {
    "pdf": "application/pdf",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "csv": "text/csv",
    "json": "application/json",
    "png": "image/png",
    "jpeg": "image/jpeg",
}
KIND_OF_MEDIA_TYPE: dict[str, FileKind] = {v: k for k, v in MEDIA_TYPES.items()}
IMAGE_KINDS: frozenset[FileKind] = frozenset({"png", "jpeg"})
SUPPORTED_LIST = "PDF, XLSX, CSV, JSON, PNG, JPEG"


def is_image(media_type: str) -> bool:
    return KIND_OF_MEDIA_TYPE.get(media_type) in IMAGE_KINDS


def megabytes(size: int) -> str:
    """`10485760` -> `10 MB` (binary megabytes, as upload limits are usually meant)."""
    mb = size / (1024 * 1024)
    return f"{mb:g} MB" if mb >= 1 else f"{size} bytes"


class FileTooLarge(ChatBffError):
    status = 413
    code = "file_too_large"

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"The file is larger than the limit of {megabytes(limit)} ({limit} bytes).",
            limit_bytes=limit,
        )


class UploadQuotaExceeded(ChatBffError):
    """The owner's stored files plus this one would pass the per-user quota: one user must
    not fill the disk and the database that everyone's files share."""

    status = 413
    code = "upload_quota_exceeded"

    def __init__(self, quota: int, used: int) -> None:
        super().__init__(
            f"Your stored files would pass your quota of {megabytes(quota)} ({quota} bytes); "
            f"{used} bytes are stored. Delete files to make room.",
            quota_bytes=quota,
            used_bytes=used,
        )


class UnsupportedFileType(ChatBffError):
    status = 415
    code = "unsupported_file_type"

    def __init__(self, detail: str = "") -> None:
        lead = f"{detail} " if detail else ""
        super().__init__(
            f"{lead}Unsupported file type; supported: {SUPPORTED_LIST}.",
            supported=[k.upper() for k in MEDIA_TYPES],
        )


class FileRejected(ChatBffError):
    status = 422
    code = "file_rejected"


@dataclass(frozen=True, slots=True)
class FileRecord:
    """A stored file's metadata (the bytes stay in the file store)."""

    id: str
    owner_id: str
    conversation_id: str | None
    name: str
    media_type: str
    size: int
    sha256: str
    storage_key: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Extraction:
    """What a document reads as for a model: text, and whether it had to be cut."""

    text: str
    truncated: bool = False
    note: str | None = None  # why it was cut or failed, for the stream and the log
    failed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "status": "failed" if self.failed else "ok",
            "truncated": self.truncated,
            "chars": len(self.text),
            "note": self.note,
        }

    @classmethod
    def from_json(cls, text: str, info: dict[str, Any]) -> Extraction:
        return cls(
            text=text,
            truncated=bool(info.get("truncated")),
            note=info.get("note"),
            failed=info.get("status") == "failed",
        )


class UploadTimeout(ChatBffError):
    status = 408
    code = "upload_timeout"


@dataclass(frozen=True, slots=True)
class InlineFile:
    """A file sent inline in a request that stores nothing (a stateless turn): read for
    that request only, never stored. `record.storage_key` is empty: the bytes are here."""

    record: FileRecord
    data: bytes = field(repr=False)
    text: Extraction | None = None
