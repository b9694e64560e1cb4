"""Issue 3: a persisted conversation run against the stateless stream, on SQLite and Postgres."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.client import get, post, run_requests
from bench.measure import CHAT, Load, measure, one_at_a_time
from bench.processes import Upstream, catalogue, start_service
from bench.sizes import NATIVE_MARK, PG_ADMIN_URL, Size, model

# --- issue 3: persisted runs ------------------------------------------------------------


async def sql_counts(port: int) -> dict[str, int]:
    results, _ = await run_requests(
        port, [get("/__bench/sql", port=port)], concurrency=1, capture=True
    )
    data: dict[str, int] = results[0].json()
    return data


def joined(a: Load, b: Load) -> Load:
    """Two windows of the same requests as one."""
    return Load(
        a.results + b.results,
        a.wall_s + b.wall_s,
        None
        if a.service_cpu_s is None or b.service_cpu_s is None
        else a.service_cpu_s + b.service_cpu_s,
        a.upstream_cpu_s + b.upstream_cpu_s,
        a.client_cpu_s + b.client_cpu_s,
        a.expected_tokens,
    )


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}


WRITE_VERBS = ("INSERT", "UPDATE", "DELETE", "REPLACE", "UPSERT")


async def create_conversations(port: int, count: int, chunks: int) -> list[str]:
    body = {"title": "bench", "model": model(chunks, 0)}
    requests = [post("/api/conversations", body, port=port)] * count
    results, _ = await run_requests(port, requests, concurrency=min(8, count), capture=True)
    ids = []
    for r in results:
        if r.status not in (200, 201):
            raise RuntimeError(f"could not create a conversation: {r.status} {r.body[:300]!r}")
        ids.append(str(r.json()["id"]))
    return ids


def send_requests(port: int, ids: Sequence[str], chunks: int) -> list[bytes]:
    body = {"content": "Say something.", "model": model(chunks, 0)}
    return [
        post(f"/api/conversations/{cid}/messages", body, port=port, accept="text/event-stream")
        for cid in ids
    ]


async def db_batches(database_url: str, title: str) -> tuple[int, int, int]:
    """From the database itself: (runs, run_events rows, distinct insert batches) of the
    runs of the conversations titled `title`. Each `append_many` batch shares one `created_at`."""
    query = (
        "SELECT count(DISTINCT e.run_id), count(*), count(DISTINCT e.run_id || '/' || "
        "CAST(e.created_at AS TEXT)) FROM run_events e JOIN runs r ON r.id = e.run_id "
        "WHERE r.conversation_id IN (SELECT id FROM conversations WHERE title = $1)"
    )
    if database_url.startswith("sqlite"):
        path = database_url.split("///", 1)[1]
        with contextlib.closing(sqlite3.connect(path)) as conn:
            row = conn.execute(query.replace("$1", "?"), (title,)).fetchone()
        return int(row[0]), int(row[1]), int(row[2])
    import asyncpg  # type: ignore[import-untyped]

    conn = await asyncpg.connect(database_url.replace("+asyncpg", ""))
    try:
        row = await conn.fetchrow(query, title)
    finally:
        await conn.close()
    return int(row[0]), int(row[1]), int(row[2])


async def issue3_on(
    size: Size, upstream: Upstream, database_url: str, tag: str, log: Any
) -> dict[str, Any]:
    c = size.persisted_chunks
    models_json = catalogue([(c, 0), (5, 0)])
    service = await start_service(
        upstream=upstream,
        database_url=database_url,
        models_json=models_json,
        app_spec=["bench.instrumented:create", "--factory"],
        tag=f"i3-{tag}",
    )
    port = service.port
    out: dict[str, Any] = {"startup_s": service.startup_s, "idle_rss_mb": service.idle_rss_mb}
    try:
        # Warm-up both paths as they are measured (answer length, concurrency): the pools
        # (the database's connections, each with its statements prepared; the upstream's)
        # grow to what that load holds before either window, not inside the first one.
        k = size.persisted_concurrency
        warm = await create_conversations(port, k, c)
        await run_requests(port, send_requests(port, warm, c), concurrency=k, marker=NATIVE_MARK)
        await run_requests(port, [CHAT.request(port, c, 0)] * k, concurrency=k, marker=NATIVE_MARK)

        # time to first token, one stream at a time
        ids = await create_conversations(port, size.persisted_ttft_n, 5)
        n = size.persisted_ttft_n
        ttft = await one_at_a_time(
            [
                ("stateless", port, [CHAT.request(port, 5, 0)] * n, NATIVE_MARK),
                ("persisted", port, send_requests(port, ids, 5), NATIVE_MARK),
            ],
            n,
            5,
        )
        out["ttft1"] = ttft

        # CPU and statements under load. Each path is measured twice, in the order
        # persisted, stateless, stateless, persisted: a window costs more the later it
        # runs in the process's life (the heap's growth, the 30 s memory timer), by 5-10%
        # under load, so one order alone moves the ratio by as much either way.
        title = f"bench-{tag}-{uuid.uuid4().hex[:8]}"
        body = {"title": title, "model": model(c, 0)}
        created, _ = await run_requests(
            port,
            [post("/api/conversations", body, port=port)] * (2 * size.persisted_runs),
            concurrency=8,
            capture=True,
        )
        ids = [str(r.json()["id"]) for r in created]
        sql: dict[str, Counter[str]] = {"persisted": Counter(), "stateless": Counter()}

        async def window(kind: str, requests: list[bytes]) -> Load:
            before = await sql_counts(port)
            load = await measure(
                port,
                requests,
                concurrency=size.persisted_concurrency,
                service=service,
                upstream=upstream,
                marker=NATIVE_MARK,
                expected_tokens=c,
            )
            # The last batch and the run's end are written before `run_end` is sent, so
            # the counts are complete once every stream has ended; the usage rows a
            # stateless stream leaves are written on a 100 ms timer: counted in its window.
            await asyncio.sleep(0.25)
            after = await sql_counts(port)
            sql[kind].update(delta(after, before) if after else {})
            return load

        half, chat = ids[: size.persisted_runs], [CHAT.request(port, c, 0)] * size.persisted_runs
        first = await window("persisted", send_requests(port, half, c))
        stateless = joined(await window("stateless", chat), await window("stateless", chat))
        persisted = joined(
            first, await window("persisted", send_requests(port, ids[len(half) :], c))
        )
        stmts = dict(sql["persisted"])
        tokens = persisted.tokens or 1
        total = stmts.get("statements", 0)
        writes = sum(v for k, v in stmts.items() if k.removeprefix("verb:") in WRITE_VERBS)
        runs, rows, batches = await db_batches(database_url, title)
        persisted.extra = {
            "sql": stmts,
            # Opened inside the window: each costs a few ms of CPU, once in a process's life.
            "connects": stmts.get("connects", 0),
            "statements_per_1k_chunks": total / tokens * 1000,
            "writes_per_50_chunks": writes / tokens * 50,
            "commits_per_50_chunks": stmts.get("commits", 0) / tokens * 50,
            "writes_per_run": writes / max(1, len(ids)),
            "statements_per_run": total / max(1, len(ids)),
            "db_runs": runs,
            "db_event_rows": rows,
            "db_event_batches": batches,
            "db_event_batches_per_50_chunks": batches / tokens * 50,
        }
        stmts = dict(sql["stateless"])
        stateless.extra = {
            "sql": stmts,
            "statements_per_1k_chunks": stmts.get("statements", 0) / (stateless.tokens or 1) * 1000,
            "writes_per_50_chunks": 0.0,
        }
        out["load"] = {"stateless": stateless.summary(), "persisted": persisted.summary()}
        log(f"persisted vs stateless on {tag}: done")
    finally:
        service.stop()
    return out


@contextlib.asynccontextmanager
async def postgres_database() -> Any:
    import asyncpg

    name = f"chatbff_bench_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    admin = await asyncpg.connect(PG_ADMIN_URL, timeout=5)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"
    finally:
        admin = await asyncpg.connect(PG_ADMIN_URL, timeout=5)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


async def issue3(size: Size, upstream: Upstream, tmp: Path, log: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    out["sqlite"] = await issue3_on(
        size, upstream, f"sqlite+aiosqlite:///{tmp / 'issue3.db'}", "sqlite", log
    )
    try:
        async with postgres_database() as url:
            out["postgres"] = await issue3_on(size, upstream, url, "postgres", log)
    except (OSError, ImportError) as exc:
        out["postgres"] = {"skipped": f"Postgres not reachable on 127.0.0.1:5432 ({exc})"}
        log(out["postgres"]["skipped"])
    return out
