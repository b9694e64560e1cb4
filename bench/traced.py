"""uvicorn with a memory probe, for finding what an open stream holds (`bench.memory --trace`).

    BENCH_TRACE_DIR=/tmp/x python -m bench.traced <uvicorn args...>

Every SIGUSR1 writes `$BENCH_TRACE_DIR/snap-<n>.json` (n counts from 0): the objects the
garbage collector tracks, by type; the blocks Python has allocated; glibc's heap figures
(`mallinfo2`: in use, free but kept, mmapped). With `BENCH_TRACE_FRAMES=<k>` (k > 0) the
first SIGUSR1 also starts tracemalloc with k frames, and each writes `snap-<n>.pickle`, a
snapshot to diff (it holds only what was allocated after the first signal, so start-up
runs at full speed). Tracing costs several times the CPU: use it for diffs, never for the
RSS figures.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import signal
import sys
import tempfile
import tracemalloc
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

from app.observability.memory import glibc_heap


def heap() -> dict[str, int]:
    """glibc's view of the heap, in KB (empty where mallinfo2 is missing)."""
    found = glibc_heap()
    if found is None:
        return {}
    info = found[0]()
    return {
        "arena_kb": info.arena // 1024,
        "in_use_kb": info.uordblks // 1024,
        "free_kb": info.fordblks // 1024,
        "mmapped_kb": info.hblkhd // 1024,
    }


def pymalloc() -> dict[str, int]:
    """pymalloc's arenas (1 MiB each on 64-bit 3.10+): an arena goes back to the system
    only when every object in it is gone, so a few survivors keep whole arenas resident."""
    with tempfile.TemporaryFile("w+") as text:
        saved = os.dup(2)
        try:
            os.dup2(text.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        text.seek(0)
        report = text.read()
    wanted = {
        "# arenas allocated current": "arenas_current",
        "# arenas highwater mark": "arenas_highwater",
        "# bytes in allocated blocks": "allocated_bytes",
        "# bytes in available blocks": "available_bytes",
        "# bytes in unused pools": "unused_pool_bytes",
    }
    out: dict[str, int] = {}
    for line in report.splitlines():
        name, _, value = line.partition("=")
        key = wanted.get(name.strip())
        if key is not None:
            out[key] = int(value.strip().replace(",", ""))
    return out


_CODES = ("cr_code", "ag_code", "gi_code")


def stats() -> dict[str, Any]:
    gc.collect()
    objects = gc.get_objects()
    types = Counter(type(o).__qualname__ for o in objects)
    sizes: Counter[str] = Counter()
    for o in objects:
        sizes[type(o).__qualname__] += sys.getsizeof(o)
    frames: Counter[str] = Counter()
    for o in objects:
        code = (
            getattr(o, "cr_code", None)
            or getattr(o, "ag_code", None)
            or getattr(o, "gi_code", None)
        )
        if type(o).__name__ == "method":
            frames[f"method {type(o.__self__).__qualname__}.{o.__func__.__name__}"] += 1
        elif type(o).__name__ == "function":
            frames[f"function {o.__qualname__}"] += 1
        if code is not None:
            frames[
                f"{type(o).__name__} {code.co_filename.rsplit('/', 2)[-1]}:{code.co_qualname}"
            ] += 1
    return {
        "gc_objects": len(objects),
        "allocated_blocks": sys.getallocatedblocks(),
        "heap": heap(),
        "pymalloc": pymalloc(),
        "types": dict(types.most_common(80)),
        "frames": dict(frames.most_common(150)),
        "sizes": dict(sizes.most_common(80)),
    }


def main() -> None:
    frames = int(os.environ.get("BENCH_TRACE_FRAMES", "0"))
    out = Path(os.environ["BENCH_TRACE_DIR"])
    taken = 0

    def snapshot(_sig: int, _frame: FrameType | None) -> None:
        nonlocal taken
        if os.environ.get("BENCH_TRIM"):
            gc.collect()
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        if frames and not tracemalloc.is_tracing():
            gc.collect()
            tracemalloc.start(frames)
        (out / f"snap-{taken}.json").write_text(json.dumps(stats(), indent=1))
        if frames:
            tracemalloc.take_snapshot().dump(str(out / f"snap-{taken}.pickle"))
        (out / f"snap-{taken}.done").touch()
        taken += 1

    signal.signal(signal.SIGUSR1, snapshot)
    import uvicorn

    sys.argv = ["uvicorn", *sys.argv[1:]]
    uvicorn.main()


if __name__ == "__main__":
    main()
