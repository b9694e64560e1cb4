"""Zip containers (XLSX) checked from their central directory before anything inflates.

An archive bomb is a few kilobytes that inflate to gigabytes: it is refused here, from
the sizes and ratios the directory declares, and the inflating reader that follows
(`bounded_open`) stops at the declared size, so a lying directory cannot exceed it.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass

from app.domain.files import FileRejected

XLSX_MEMBERS = ("[Content_Types].xml", "xl/workbook.xml")


@dataclass(frozen=True)
class ArchiveLimits:
    max_members: int = 2_000
    max_total_bytes: int = 200 * 1024 * 1024  # inflated, all members together
    max_member_bytes: int = 100 * 1024 * 1024
    max_ratio: int = 200  # inflated / compressed, per member of any real size


def is_xlsx(data: bytes) -> bool:
    """Whether a zip holds a workbook (its content types and workbook part)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return False
    return all(member in names for member in XLSX_MEMBERS)


def check_archive(data: bytes, limits: ArchiveLimits) -> None:
    """Refuse a zip whose declared contents are too many, too large or too compressed."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise FileRejected("The spreadsheet is not a readable XLSX archive.") from exc
    if len(infos) > limits.max_members:
        raise FileRejected(f"The spreadsheet has too many parts ({len(infos)}).")
    total = 0
    for info in infos:
        total += info.file_size
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > limits.max_member_bytes or (
            info.file_size > 1024 * 1024 and ratio > limits.max_ratio
        ):
            raise FileRejected(
                "The spreadsheet looks like an archive bomb: a part inflates to "
                f"{info.file_size} bytes from {info.compress_size}."
            )
    if total > limits.max_total_bytes:
        raise FileRejected(
            f"The spreadsheet inflates to {total} bytes, over the limit of "
            f"{limits.max_total_bytes}."
        )
