"""CSV as a table (UTF-8 or a legacy code page, said so), JSON as a summary of its shape
followed by the text itself (JSON Lines as its records)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from app.domain.files import Extraction, FileRejected
from app.files.extract.budget import Budget, TextBuilder
from app.files.extract.xlsx import cell_text, table_rows
from app.files.sniff import is_json_lines
from app.files.text import decode_text


def _delimiter(text: str) -> str:
    try:
        return csv.Sniffer().sniff(text[:8192], delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def extract_csv(data: bytes, budget: Budget) -> Extraction:
    text, encoding = decode_text(data) or (data.decode("utf-8", errors="replace"), "utf-8")
    reader = csv.reader(io.StringIO(text), delimiter=_delimiter(text))
    total = columns = 0
    kept: list[list[str]] = []
    width = budget.limits.max_columns + 1  # one past the limit, so the cut is seen
    try:
        for row in reader:
            if not row:
                continue
            total += 1
            columns = columns or len(row)
            if len(kept) < budget.limits.max_rows:
                kept.append([cell_text(v) for v in row[:width]])
            elif total % 1000 == 0:
                budget.check_time()
    except csv.Error as exc:
        raise FileRejected(f"The CSV could not be read: {exc}.") from exc
    out = TextBuilder(budget.limits.max_chars)
    decoded = "" if encoding == "utf-8" else f" Decoded from {encoding}."
    out.add(f"CSV: {total} rows (header included), {columns} columns.{decoded}\n\n")
    table_rows(kept, out, budget, "csv")
    if total > len(kept):
        out.cut(f"rows after {len(kept)} left out of {total}")
    return Extraction(text=out.text(), truncated=out.truncated, note=out.note())


def _shape(value: Any, depth: int = 0) -> str:
    """`object with 2 keys (items: array of 200 items; first item: object ...)`: the top
    level with the shape of each value, deeper levels by their keys only."""
    if isinstance(value, dict):
        more = ", ..." if len(value) > 20 else ""
        if depth == 0:
            fields = ", ".join(f"{k}: {_shape(v, 1)}" for k, v in list(value.items())[:20])
            return f"object with {len(value)} keys ({fields}{more})"
        return f"object with {len(value)} keys ({', '.join(list(value)[:20])}{more})"
    if isinstance(value, list):
        inner = f"; first item: {_shape(value[0], depth + 1)}" if value and depth < 2 else ""
        return f"array of {len(value)} items{inner}"
    return type(value).__name__


def _json_lines(text: str, budget: Budget) -> Extraction:
    """JSON Lines: a summary of the records, then the lines as they are."""
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    budget.check_time()
    out = TextBuilder(budget.limits.max_chars)
    out.add(f"JSON Lines: {len(records)} records; first record: {_shape(records[0], 1)}.\n\n")
    if not out.add(text.strip()):
        out.cut(f"JSON Lines cut at {budget.limits.max_chars} characters of {len(text)}")
    return Extraction(text=out.text(), truncated=out.truncated, note=out.note())


def extract_json(data: bytes, budget: Budget) -> Extraction:
    text = data.decode("utf-8-sig", errors="replace")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        if is_json_lines(text):
            return _json_lines(text, budget)
        raise FileRejected("The JSON could not be parsed.") from exc
    budget.check_time()
    out = TextBuilder(budget.limits.max_chars)
    out.add(f"JSON: {_shape(value)}.\n\n")
    try:
        pretty = json.dumps(value, indent=1, ensure_ascii=False)
    except (ValueError, RecursionError) as exc:
        raise FileRejected("The JSON is nested too deeply.") from exc
    if not out.add(pretty):
        out.cut(f"JSON text cut at {budget.limits.max_chars} characters of {len(pretty)}")
    return Extraction(text=out.text(), truncated=out.truncated, note=out.note())
