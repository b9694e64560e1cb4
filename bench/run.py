"""The chat-bff benchmark: `python -m bench.run [--quick]` (a script, not a test).

Side by side in one run, against the same fake OpenAI upstream (`bench.upstream`, its own
process on 127.0.0.1): a direct connection to the upstream vs chat-bff's
`/v1/chat/completions` and `/api/chat` streams (issue 2), and a persisted conversation run
vs the stateless `/api/chat` stream on SQLite and on Postgres (issue 3). chat-bff is a real
`uvicorn` process (one worker); the load generator (`bench.client`) is this process.

CPU is the chat-bff process's own utime+stime from /proc/<pid>/stat over the measured
window, nothing subtracted. On a 2-core machine the upstream and the load generator
share the cores with it; their CPU is reported too. Figures are printed as one table and
written to bench/results.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.persisted import issue3
from bench.processes import Upstream, has_module, reference_ms, uvicorn_flags
from bench.report import table
from bench.sizes import FULL, GOALS, QUICK, RESULTS, ROOT
from bench.streaming import issue2

# --- main -------------------------------------------------------------------------------


def environment(server: str) -> dict[str, Any]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "server": server,
        "git_commit": commit,
        "client": "bench.client, asyncio Protocols"
        + (" on uvloop" if has_module("uvloop") else ""),
        "load_average_at_end": os.getloadavg(),
    }


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="chat-bff-bench-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def main_async(quick: bool, only: str | None) -> dict[str, Any]:
    size = QUICK if quick else FULL
    began = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - began:6.1f}s] {message}", file=sys.stderr, flush=True)

    upstream = Upstream.start()
    results: dict[str, Any] = {"quick": quick, "size": size.__dict__, "goals": GOALS}
    # Other work on the machine skews wall-clock figures (CPU per chunk much less): say so.
    results["load_average_at_start"] = os.getloadavg()
    results["reference_ms_at_start"] = reference_ms()
    try:
        with scratch() as tmp:
            results["issue2"] = (
                await issue2(size, upstream, tmp, log, nonstream_only=only == "nonstream")
                if only != "3"
                else {}
            )
            wanted = only in (None, "3")
            results["issue3"] = await issue3(size, upstream, tmp, log) if wanted else {}
    finally:
        upstream.stop()
    results["reference_ms_at_end"] = reference_ms()
    results["environment"] = environment(results["issue2"].get("server", " ".join(uvicorn_flags())))
    results["elapsed_s"] = round(time.perf_counter() - began, 1)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts (~1 minute)")
    parser.add_argument(
        "--only",
        choices=["2", "3", "nonstream"],
        help="run one issue's part only (nonstream: issue 2's non-streaming requests)",
    )
    args = parser.parse_args()
    runner = asyncio.run
    if has_module("uvloop"):
        import uvloop

        runner = uvloop.run
    results = runner(main_async(args.quick, args.only))
    RESULTS.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(table(results))
    env = results["environment"]
    print(
        f"\n{env['server']}, Python {env['python']}, {env['cpus']} CPUs, commit "
        f"{env['git_commit']}; {results['elapsed_s']} s; load average at start "
        f"{results['load_average_at_start'][0]:.1f}, at end {env['load_average_at_end'][0]:.1f}; "
        f"reference loop {results['reference_ms_at_start']} ms at start, "
        f"{results['reference_ms_at_end']} ms at end (see bench.processes.reference_ms); "
        f"written to {RESULTS.relative_to(ROOT)}"
    )


if __name__ == "__main__":
    main()
