"""The benchmark's one table: every figure beside its goal, PASS or FAIL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.measure import pct
from bench.sizes import GOALS

# --- the table --------------------------------------------------------------------------


def fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def verdict(ok: bool | None) -> str:
    return "-" if ok is None else ("PASS" if ok else "FAIL")


def per(cols: dict[str, dict[str, Any]], key: str) -> list[Any]:
    return [cols.get(name, {}).get(key) for name in ("direct", "v1", "chat")]


def judge(values: Sequence[Any], ok: Any) -> str:
    """PASS/FAIL for the two chat-bff columns (v1, chat)."""
    marks = []
    for label, value in zip(("v1", "chat"), values, strict=True):
        marks.append(f"{label} {verdict(None if value is None else bool(ok(value)))}")
    return ", ".join(marks)


class Rows:
    """The table's rows: section headers and labelled figures, rendered in blocks."""

    def __init__(self) -> None:
        self.rows: list[list[str]] = []

    def section(self, title: str, headers: Sequence[str]) -> None:
        self.rows.append([f"== {title}", *headers])

    def add(
        self, label: str, values: Sequence[Any], goal: str = "", check: str = "", d: int = 1
    ) -> None:
        self.rows.append([label, *(fmt(v, d) for v in values), goal, check])

    def note(self, text: str) -> None:
        self.rows.append([text, "", "", "", "", ""])

    def render(self) -> str:
        rows = self.rows
        blocks: list[list[list[str]]] = []
        for r in rows:
            if r[0].startswith("==") or not blocks:
                blocks.append([])
            blocks[-1].append(r)
        lines: list[str] = []
        for block in blocks:
            ncols = max(len(r) for r in block)
            widths = [max(len(r[i]) if i < len(r) else 0 for r in block) for i in range(ncols)]
            lines.append("")
            for r in block:
                cells = (r + [""] * ncols)[:ncols]
                lines.append(
                    "  ".join(
                        (c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]))
                        for i, c in enumerate(cells)
                    ).rstrip()
                )
        return "\n".join(lines)


def startup_rows(rows: Rows, i2: dict[str, Any]) -> None:
    rows.section(
        "issue 2: direct vs chat-bff", ["direct", "/v1/chat/compl.", "/api/chat", "goal", "result"]
    )
    starts = [s["startup_s"] for s in i2["startup"]]
    rss = [s["idle_rss_mb"] for s in i2["startup"]]
    startup = pct(starts, 50)
    idle = pct(rss, 50)
    rows.add(
        f"start-up s (median of {len(starts)})",
        ["", startup, startup],
        "< 2 s",
        verdict(startup is not None and startup < GOALS["startup_s"]),
        2,
    )
    cpu = pct([s["startup_cpu_s"] for s in i2["startup"] if "startup_cpu_s" in s], 50)
    if cpu is not None:
        rows.add("start-up CPU s (median)", ["", cpu, cpu], "", "", 2)
    rows.add(
        "idle RSS MB",
        ["", idle, idle],
        "< 120 MB",
        verdict(idle is not None and idle < GOALS["idle_rss_mb"]),
    )
    for delay in (0, 5):
        if f"ttft1_d{delay}" not in i2:
            continue  # --only nonstream
        cols = i2[f"ttft1_d{delay}"]
        p50 = per(cols, "ttft_p50_ms")
        p99 = per(cols, "ttft_p99_ms")
        rows.add(f"TTFT p50 ms, 1 stream, {delay} ms pacing", p50, d=2)
        added = [None if v is None or p50[0] is None else v - p50[0] for v in p50]
        rows.add(
            "  added TTFT p50 ms",
            ["", *added[1:]],
            f"<= {GOALS['added_ttft_p50_ms_1']:g} ms",
            judge(added[1:], lambda v: v <= GOALS["added_ttft_p50_ms_1"]),
            2,
        )
        rows.add(f"TTFT p99 ms, 1 stream, {delay} ms pacing", p99, d=2)
        rows.add(
            "  added TTFT p99 ms",
            ["", *(None if v is None or p99[0] is None else v - p99[0] for v in p99[1:])],
            d=2,
        )


def saturated_rows(rows: Rows, i2: dict[str, Any]) -> None:
    streams = i2["saturated"]["direct"]["requests"]
    sat = i2["saturated"]
    rows.add(f"{streams} streams, 0 ms: chunks/s", per(sat, "chunks_per_s"), "", "", 0)
    rows.add(
        "  chunks/s goal",
        ["", *per(sat, "chunks_per_s")[1:]],
        ">= 15,000",
        judge(per(sat, "chunks_per_s")[1:], lambda v: v >= GOALS["chunks_per_s"]),
        0,
    )
    cpu = per(sat, "cpu_ms_per_1k_chunks")
    rows.add(
        "  chat-bff CPU ms / 1k chunks",
        ["", *cpu[1:]],
        f"<= {GOALS['cpu_ms_per_1k']:g}",
        judge(cpu[1:], lambda v: v <= GOALS["cpu_ms_per_1k"]),
    )
    rows.add("  TTFT p50 ms", per(sat, "ttft_p50_ms"))
    rows.add("  TTFT p99 ms", per(sat, "ttft_p99_ms"))
    rows.add(
        "  upstream CPU ms / client CPU ms",
        [f"{fmt(c['upstream_cpu_ms'], 0)} / {fmt(c['client_cpu_ms'], 0)}" for c in sat.values()],
    )
    rows.add(
        "  failed / short streams", [f"{c['failed']} / {c['short_streams']}" for c in sat.values()]
    )


def paced_rows(rows: Rows, i2: dict[str, Any]) -> None:
    streams = i2["saturated"]["direct"]["requests"]
    paced = i2["paced"]
    rows.add(f"{streams} streams, 5 ms: chunks/s", per(paced, "chunks_per_s"), d=0)
    cpu = per(paced, "cpu_ms_per_1k_chunks")
    rows.add(
        "  chat-bff CPU ms / 1k chunks",
        ["", *cpu[1:]],
        f"<= {GOALS['cpu_ms_per_1k']:g}",
        judge(cpu[1:], lambda v: v <= GOALS["cpu_ms_per_1k"]),
    )
    rows.add("  TTFT p50 ms", per(paced, "ttft_p50_ms"))
    rows.add("  TTFT p99 ms", per(paced, "ttft_p99_ms"))
    gaps = per(paced, "gap_p99_ms")
    rows.add("  inter-chunk gap p50 ms", per(paced, "gap_p50_ms"), d=2)
    rows.add("  inter-chunk gap p99 ms", gaps, d=2)
    rows.add("  inter-chunk gap max ms", per(paced, "gap_max_ms"), d=2)
    rows.add("  tokens per read (1 = no bursts)", per(paced, "tokens_per_read"), d=2)
    over = [None if v is None or gaps[0] is None else v - gaps[0] for v in gaps[1:]]
    rows.add("  gap p99 over direct ms", ["", *over], "<= 10 ms", judge(over, lambda v: v <= 10), 2)
    rows.add(
        "  failed / short streams",
        [f"{c['failed']} / {c['short_streams']}" for c in paced.values()],
    )


def nonstream_rows(rows: Rows, i2: dict[str, Any]) -> None:
    ns = i2["nonstream"]
    rps = per(ns, "requests_per_s")
    rows.add(
        "non-streaming req/s, concurrency 50",
        rps,
        ">= 300",
        judge(rps[1:], lambda v: v >= GOALS["nonstream_requests_per_s"]),
        0,
    )
    cpu = [
        None
        if ns.get(name, {}).get("service_cpu_ms") is None
        else ns[name]["service_cpu_ms"] / max(1, ns[name]["requests"])
        for name in ("v1", "chat")
    ]
    rows.add(
        "  chat-bff CPU ms / request",
        ["", *cpu],
        "<= 2 ms",
        judge(cpu, lambda v: v <= GOALS["nonstream_cpu_ms"]),
        2,
    )
    rows.add("  failed", [c["failed"] for c in ns.values()])


def persisted_rows(rows: Rows, i3: dict[str, Any], size: dict[str, Any]) -> None:
    dbs = [k for k in ("sqlite", "postgres") if "load" in i3.get(k, {})]
    headers = [f"{db} {kind}" for db in dbs for kind in ("stateless", "persisted")]
    rows.section("issue 3: persisted run vs stateless /api/chat", [*headers, "goal", "result"])

    def cols3(part: str, key: str) -> list[Any]:
        return [i3[db][part][kind].get(key) for db in dbs for kind in ("stateless", "persisted")]

    def pad(values: list[Any]) -> list[Any]:
        return (values + [""] * len(headers))[: len(headers)]

    if not dbs:
        return
    load0 = i3[dbs[0]]["load"]["persisted"]
    rows.add(
        f"runs x chunks, concurrency {size['persisted_concurrency']}",
        pad([f"{load0['requests']} x {size['persisted_chunks']}"] * len(headers)),
    )
    cpu3 = cols3("load", "cpu_ms_per_1k_chunks")
    ratios = [cpu3[i + 1] / cpu3[i] if cpu3[i] else None for i in range(0, len(cpu3), 2)]
    rows.add("CPU ms / 1k chunks", pad(cpu3))
    rows.add(
        "  persisted / stateless CPU",
        pad([x for r in ratios for x in ("", r)]),
        f"<= {GOALS['persisted_cpu_ratio']}x",
        " ".join(
            f"{db} {verdict(r is not None and r <= GOALS['persisted_cpu_ratio'])}"
            for db, r in zip(dbs, ratios, strict=True)
        ),
        2,
    )
    extra = [
        x
        for db in dbs
        for x in (
            "",
            (
                i3[db]["load"]["persisted"]["service_cpu_ms"]
                - i3[db]["load"]["stateless"]["service_cpu_ms"]
            )
            / max(1, i3[db]["load"]["persisted"]["requests"]),
        )
    ]
    rows.add("  extra CPU ms per persisted run", pad(extra))
    rows.add("chunks/s", pad(cols3("load", "chunks_per_s")), d=0)
    rows.add("DB statements / 1k chunks", pad(cols3("load", "statements_per_1k_chunks")), d=2)
    wr = cols3("load", "writes_per_50_chunks")
    rows.add(
        "DB writes / 50 chunks",
        pad(wr),
        "<= 1",
        " ".join(
            f"{db} {verdict(wr[2 * i + 1] is not None and wr[2 * i + 1] <= 1.0)}"
            for i, db in enumerate(dbs)
        ),
        2,
    )
    rows.add("  write statements per run", pad(cols3("load", "writes_per_run")))
    rows.add("  all statements per run", pad(cols3("load", "statements_per_run")))
    rows.add("  database connections opened", pad(cols3("load", "connects")))
    rows.add("DB commits / 50 chunks", pad(cols3("load", "commits_per_50_chunks")), d=2)
    rows.add(
        "  run_events rows / batches (DB side)",
        pad(
            [
                x
                for db in dbs
                for x in (
                    "",
                    f"{i3[db]['load']['persisted'].get('db_event_rows')} / "
                    f"{i3[db]['load']['persisted'].get('db_event_batches')}",
                )
            ]
        ),
    )
    rows.add(
        "  event batches / 50 chunks (DB side)",
        pad(cols3("load", "db_event_batches_per_50_chunks")),
        d=2,
    )
    t50 = cols3("ttft1", "ttft_p50_ms")
    rows.add("TTFT p50 ms, 1 stream", pad(t50), d=2)
    rows.add(
        "  added vs stateless p50 ms",
        pad(
            [
                x
                for i in range(0, len(t50), 2)
                for x in (
                    "",
                    None if t50[i] is None or t50[i + 1] is None else t50[i + 1] - t50[i],
                )
            ]
        ),
        d=2,
    )
    rows.add("TTFT p99 ms, 1 stream", pad(cols3("ttft1", "ttft_p99_ms")), d=2)
    rows.add(
        "  failed / short",
        pad(
            [
                f"{i3[db]['load'][k]['failed']} / {i3[db]['load'][k]['short_streams']}"
                for db in dbs
                for k in ("stateless", "persisted")
            ]
        ),
    )


def table(results: dict[str, Any]) -> str:
    rows = Rows()
    i2, i3 = results["issue2"], results["issue3"]
    if "startup" in i2:
        startup_rows(rows, i2)
    if "saturated" in i2:  # not with --only nonstream
        saturated_rows(rows, i2)
        paced_rows(rows, i2)
    if "nonstream" in i2:
        nonstream_rows(rows, i2)
    persisted_rows(rows, i3, results["size"])
    for db in ("sqlite", "postgres"):
        if "skipped" in i3.get(db, {}):
            rows.note(f"{db}: {i3[db]['skipped']}")
    return rows.render()
