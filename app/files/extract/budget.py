"""How much a reader may produce, and until when."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from app.domain.files import FileRejected


@dataclass(frozen=True)
class ExtractLimits:
    max_chars: int = 200_000
    max_pages: int = 500
    max_sheets: int = 50
    max_rows: int = 2_000  # per sheet or CSV
    max_columns: int = 50
    max_cells: int = 100_000  # all sheets together


class ExtractionTimeout(FileRejected):
    code = "extraction_timeout"


@dataclass
class Budget:
    """The limits of one extraction, its deadline and what it has spent."""

    limits: ExtractLimits
    seconds: float
    deadline: float = field(init=False)
    cells: int = 0

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.seconds

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise ExtractionTimeout(
                f"The document took longer than {self.seconds:g} s to read; it was not used."
            )


class TextBuilder:
    """Text gathered up to `max_chars`; what would pass the limit is cut and noted."""

    def __init__(self, max_chars: int) -> None:
        self._parts: list[str] = []
        self._left = max_chars
        self.truncated = False
        self.notes: list[str] = []

    @property
    def full(self) -> bool:
        return self._left <= 0

    def add(self, text: str) -> bool:
        """Append `text`; False when it did not fit whole (the rest is cut)."""
        if self._left <= 0:
            self.truncated = True
            return False
        fits = len(text) <= self._left
        if not fits:
            text = text[: self._left]
            self.truncated = True
        self._parts.append(text)
        self._left -= len(text)
        return fits

    def cut(self, note: str) -> None:
        self.truncated = True
        self.notes.append(note)

    def text(self) -> str:
        return "".join(self._parts)

    def note(self) -> str | None:
        if not self.truncated:
            return None
        return "; ".join(self.notes) if self.notes else "text cut at the size limit"
