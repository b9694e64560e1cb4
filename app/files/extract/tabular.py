"""CSV as a table, JSON as a summary of its shape followed by the text itself."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from app.domain.files import Extraction, FileRejected
from app.files.extract.budget import Budget, TextBuilder
from app.files.extract.xlsx import cell_text, table_rows


def _delimiter(text: str) -> str:
    try:
        return csv.Sniffer().sniff(text[:8192], delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def extract_csv(data: bytes, budget: Budget) -> Extraction:
    text = data.decode("utf-8-sig", errors="replace")
    reader = csv.reader(io.StringIO(text), delimiter=_delimiter(text))
    total = 0
    kept: list[list[str]] = []
    try:
        for row in reader:
            if not row:
                continue
            total += 1
            if len(kept) < budget.limits.max_rows:
                kept.append([cell_text(v) for v in row])
            elif total % 1000 == 0:
                budget.check_time()
    except csv.Error as exc:
        raise FileRejected(f"The CSV could not be read: {exc}.") from exc
    columns = len(kept[0]) if kept else 0
    out = TextBuilder(budget.limits.max_chars)
    out.add(f"CSV: {total} rows (header included), {columns} columns.\n\n")
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


def extract_json(data: bytes, budget: Budget) -> Extraction:
    try:
        value = json.loads(data.decode("utf-8-sig"))
    except (ValueError, RecursionError) as exc:
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
