"""uvicorn with a memory probe, for finding what an open stream holds (`bench.memory --trace`).

    BENCH_TRACE_DIR=/tmp/x python -m bench.traced <uvicorn args...>

Every SIGUSR1 writes `$BENCH_TRACE_DIR/snap-<n>.json` (n counts from 0): the objects the
garbage collector tracks, by type; the blocks Python has allocated; glibc's heap figures
(`mallinfo2`: in use, free but kept, mmapped). With `BENCH_TRACE_FRAMES=<k>` (k > 0) the
first SIGUSR1 also starts tracemalloc with k frames, and each writes `snap-<n>.pickle`, a
snapshot to diff (it holds only what was allocated after the first signal, so start-up
runs at full speed). Tracing costs several times the CPU: use it for diffs, never for the
RSS figures.

The census collects garbage first, so its heap figures leave out what only a full
collection frees; `before_collection` in each snapshot is RSS and glibc's heap as the
worker held them, and `snap-<n>.malloc.xml` glibc's free chunks by size. With
`BENCH_TRACE_GARBAGE=1` it also says what that garbage was (types, and the code of its
frames and coroutines): at 5,000 streams opening under load, the frames of thousands of
upstream connects that had timed out, held in reference cycles. With
`BENCH_TRACE_ISLANDS=1` it also walks glibc's main heap (after a trim) and names the chunks
still in use above the heap's top at the first snapshot: what a burst left behind, and the
pages each kind keeps resident among the free heap (`islands`).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import mmap
import os
import signal
import sys
import tempfile
import tracemalloc
import types
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any, cast

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


def sqlite_heap() -> dict[str, int]:
    """SQLite's own allocations (its page cache, statements), in KB: they come from glibc
    too and count in its bytes in use, but no Python census sees them. Empty where the
    library cannot be loaded by name."""
    try:
        lib = ctypes.CDLL("libsqlite3.so.0")
    except OSError:
        return {}
    lib.sqlite3_memory_used.restype = ctypes.c_int64
    lib.sqlite3_memory_highwater.restype = ctypes.c_int64
    lib.sqlite3_memory_highwater.argtypes = [ctypes.c_int]
    return {
        "sqlite_in_use_kb": lib.sqlite3_memory_used() // 1024,
        "sqlite_highwater_kb": lib.sqlite3_memory_highwater(0) // 1024,
    }


def malloc_info(path: Path) -> None:
    """glibc's `malloc_info` XML (free chunks by size, per arena) into `path`, as it was
    when the snapshot was asked for: how much of the free heap is in pieces too small
    for a trim to give back."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.fopen.restype = ctypes.c_void_p
        libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
        libc.fclose.argtypes = [ctypes.c_void_p]
    except (OSError, AttributeError):
        return
    stream = libc.fopen(str(path).encode(), b"w")
    if stream:
        libc.malloc_info(0, stream)
        libc.fclose(stream)


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


_CODES = {
    types.CoroutineType: "cr_code",
    types.AsyncGeneratorType: "ag_code",
    types.GeneratorType: "gi_code",
    types.FrameType: "f_code",
}


def _code(o: object) -> types.CodeType | None:
    """The code of a coroutine, generator or frame. Only on those types: `getattr` on any
    object can run its hooks (a pydantic model's deferred validator builds its schema when
    asked for a missing attribute, and the census would count what it built itself)."""
    attribute = _CODES.get(type(o))
    return None if attribute is None else cast(types.CodeType, getattr(o, attribute))


def smaps() -> dict[str, dict[str, int]]:
    """RSS and anonymous KB by mapping (`/proc/self/smaps`): the `[heap]`, anonymous maps
    (glibc's mmapped chunks and other arenas, uvloop's and libuv's own), libraries."""
    out: dict[str, dict[str, int]] = {}
    name = ""
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and not head[0].endswith(":"):
            name = head[5] if len(head) > 5 else "[anon]"
            name = name.rsplit("/", 1)[-1]
            out.setdefault(name, {"rss_kb": 0, "anon_kb": 0, "maps": 0})["maps"] += 1
        elif head and head[0] in ("Rss:", "Anonymous:"):
            key = "rss_kb" if head[0] == "Rss:" else "anon_kb"
            out[name][key] += int(head[1])
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["rss_kb"])[:25])


def _all_types() -> dict[int, str]:
    found: dict[int, str] = {}
    stack: list[type] = [object]
    while stack:
        t = stack.pop()
        if id(t) not in found:
            found[id(t)] = f"{t.__module__}.{t.__qualname__}"
            with contextlib.suppress(TypeError):  # `type` itself wants an argument
                stack.extend(type.__subclasses__(t))
    return found


# Kinds whose values the heap walk reports (a sample of each).
_SAMPLED = {"builtins.str", "builtins.int", "builtins.tuple", "builtins.dict", "builtins.list"}
_TYPES: dict[int, str] = {}  # id -> name of every type, made at the first snapshot


def _peek(kind: str, at: int, size: int, tracked: dict[int, object]) -> object | None:
    """The object at `at` without trusting it: a str's or int's value read from its bytes
    (ASCII and small ints only), any other kind only if the collector knows that address."""
    word = ctypes.c_ssize_t.from_address
    if kind == "builtins.str":
        length, state = word(at + 16).value, ctypes.c_uint32.from_address(at + 32).value
        if 0 <= length < size and state & 0b1100000 == 0b1100000:  # compact ASCII
            return "str:" + ctypes.string_at(at + 48, min(length, 60)).decode("ascii", "replace")
        return f"str: non-ascii len {length}"
    if kind == "builtins.int":
        digits = word(at + 16).value
        value = 0
        for i in range(digits if 0 < digits <= 2 else 0):
            value += ctypes.c_uint32.from_address(at + 24 + 4 * i).value << (30 * i)
        return value if 0 < digits <= 2 else f"int of {digits} digits"
    return tracked.get(at)


def _chunks_in_use(start: int, end: int, boundary: int) -> list[tuple[int, int]]:
    """(address, size) of glibc's chunks in use between `boundary` and `end`, walked from
    `start`; recorded in an anonymous mapping first, so the walk allocates nothing on the
    heap it reads. A chunk is in use when the next one's PREV_INUSE bit says so (tcache's
    few entries count as in use; the fast bins are consolidated by a trim beforehand)."""
    limit = 4_000_000
    area = mmap.mmap(-1, limit * 16)
    found = memoryview(area).cast("Q")
    word = ctypes.c_size_t.from_address
    chunk, n = start, 0
    while chunk < end - 32 and n < limit * 2:
        size = word(chunk + 8).value & ~7
        if size < 32 or chunk + size > end:
            break
        nxt = chunk + size
        if chunk >= boundary and nxt < end - 16 and word(nxt + 8).value & 1:
            found[n], found[n + 1] = chunk, size
            n += 2
        chunk = nxt
    out = [(found[i], found[i + 1]) for i in range(0, n, 2)]
    found.release()
    area.close()
    return out


def heap_bounds() -> tuple[int, int]:
    for line in Path("/proc/self/maps").read_text().splitlines():
        if line.endswith("[heap]"):
            a, b = line.split()[0].split("-")
            return int(a, 16), int(b, 16)
    return 0, 0


def islands(boundary: int) -> dict[str, Any]:
    """glibc's main heap walked chunk by chunk (`BENCH_TRACE_ISLANDS=1`): the chunks in use
    above `boundary` (the heap's top at the first snapshot), each named by the type of the
    Python object in it where it holds one (`raw <size>` where none), and the pages they
    keep resident. After a burst these are its survivors, which split the free heap into
    pieces whose pages no trim can return."""
    start, end = heap_bounds()
    if not start:
        return {}
    kinds: Counter[str] = Counter()
    kind_bytes: Counter[str] = Counter()
    pages: dict[int, str] = {}
    spots: list[tuple[str, int, int]] = []
    word = ctypes.c_size_t.from_address
    for chunk, size in _chunks_in_use(start, end, boundary):
        plain, tracked_kind = _TYPES.get(word(chunk + 24).value), _TYPES.get(word(chunk + 40).value)
        kind = plain or tracked_kind or f"raw {min(size, 4096) // 64 * 64}"
        kinds[kind] += 1
        kind_bytes[kind] += size
        if kind in _SAMPLED:
            spots.append((kind, chunk + 16 if plain else chunk + 32, size))
        for page in range(chunk >> 12, ((chunk + size - 1) >> 12) + 1):
            pages.setdefault(page, kind)
    everything = gc.get_objects()
    tracked = {id(o): o for o in everything} if len(everything) < 100_000 else {}
    del everything
    samples: dict[str, Counter[str]] = {}
    for kind, at, size in spots:
        value = _peek(kind, at, size, tracked)
        if value is not None and sum(samples.setdefault(kind, Counter()).values()) < 400:
            samples[kind][repr(value)[:60]] += 1
    tracked.clear()
    return {
        "boundary": boundary,
        "heap_end": end,
        "in_use_above_kb": sum(kind_bytes.values()) // 1024,
        "pages_above": len(pages),
        "chunks": dict(kinds.most_common(60)),
        "bytes": dict(kind_bytes.most_common(60)),
        "pages_first_held_by": dict(Counter(pages.values()).most_common(60)),
        "values": {k: dict(c.most_common(30)) for k, c in samples.items()},
    }


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def stats() -> dict[str, Any]:
    rss_kb = _rss_kb()
    collected = gc.collect()
    rss_collected_kb = _rss_kb()
    objects = gc.get_objects()
    kinds = Counter(type(o).__qualname__ for o in objects)
    sizes: Counter[str] = Counter()
    for o in objects:
        sizes[type(o).__qualname__] += sys.getsizeof(o)
    frames: Counter[str] = Counter()
    for o in objects:
        code = _code(o)
        if type(o).__name__ == "method":
            frames[f"method {type(o.__self__).__qualname__}.{o.__func__.__name__}"] += 1
        elif type(o).__name__ == "function":
            frames[f"function {o.__qualname__}"] += 1
        if code is not None:
            frames[
                f"{type(o).__name__} {code.co_filename.rsplit('/', 2)[-1]}:{code.co_qualname}"
            ] += 1
    deferred = sorted(
        f"{t.__module__}.{t.__qualname__}"
        for t in objects
        if isinstance(t, type)
        and type(t.__dict__.get("__pydantic_validator__")).__name__ == "MockValSer"
    )
    shapes: Counter[str] = Counter()
    for o in objects:
        if type(o) is dict:
            shapes[",".join(str(k)[:24] for k in list(o)[:4])] += 1
    return {
        "dict_shapes": dict(shapes.most_common(120)),
        "pydantic_deferred": deferred,
        "rss_kb": rss_kb,
        "gc_collected": collected,
        "rss_after_collect_kb": rss_collected_kb,
        "gc_objects": len(objects),
        "allocated_blocks": sys.getallocatedblocks(),
        "heap": heap(),
        "sqlite": sqlite_heap(),
        "pymalloc": pymalloc(),
        "types": dict(kinds.most_common(80)),
        "frames": dict(frames.most_common(150)),
        "sizes": dict(sizes.most_common(80)),
    }


def garbage() -> dict[str, Any]:
    """What the next full collection would free, by type, and the code of its coroutines,
    generators and frames (`BENCH_TRACE_GARBAGE=1`): memory that refcounting alone never
    returns, held until a collection that, while serving, is rare."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        found = list(gc.garbage)
        gc.garbage.clear()
    finally:
        gc.set_debug(0)
    kinds = Counter(type(o).__qualname__ for o in found)
    sizes: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    for o in found:
        sizes[type(o).__qualname__] += sys.getsizeof(o)
        code = _code(o)
        if code is not None:
            codes[f"{type(o).__name__} {code.co_qualname}"] += 1
    return {
        "objects": len(found),
        "bytes": sum(sizes.values()),
        "types": dict(kinds.most_common(60)),
        "sizes": dict(sizes.most_common(40)),
        "codes": dict(codes.most_common(60)),
    }


def _name(o: object) -> str:
    if isinstance(o, type):
        return f"class {o.__module__}.{o.__qualname__}"
    code = _code(o)
    if code is not None:
        return f"{type(o).__name__} {code.co_qualname}"
    return type(o).__qualname__


def owners(objects: list[object], wanted: list[str], sample: int = 40) -> dict[str, Any]:
    """Who holds objects of the `wanted` types (`BENCH_TRACE_OWNERS=Event,deque`): for a
    sample of each, the referrer's type, and for a referrer that is a dict (an instance's
    attributes) or a cell, that one's referrer too."""
    out: dict[str, Any] = {}
    for kind in wanted:
        found = [o for o in objects if type(o).__qualname__ == kind][-sample:]
        chains: Counter[str] = Counter()
        for o in found:
            for ref in gc.get_referrers(o):
                if ref is objects or ref is found:
                    continue
                label = _name(ref)
                if type(ref) in (dict, list, tuple) or label == "cell":
                    outer = [
                        _name(r)
                        for r in gc.get_referrers(ref)
                        if r is not objects and r is not found and type(r).__name__ != "frame"
                    ][:3]
                    label = f"{label} <- {', '.join(outer)}"
                chains[label] += 1
        out[kind] = dict(chains.most_common(25))
    return out


def main() -> None:
    frames = int(os.environ.get("BENCH_TRACE_FRAMES", "0"))
    out = Path(os.environ["BENCH_TRACE_DIR"])
    taken = 0
    boundary = 0

    def snapshot(_sig: int, _frame: FrameType | None) -> None:
        nonlocal taken, boundary
        # As the worker held it, before any collection or trim of the probe's own.
        untouched: dict[str, Any] = {"rss_kb": _rss_kb(), "heap": heap(), "smaps": smaps()}
        malloc_info(out / f"snap-{taken}.malloc.xml")
        if os.environ.get("BENCH_TRACE_ISLANDS"):
            if not boundary:
                _TYPES.update(_all_types())
                boundary = heap_bounds()[1]
            ctypes.CDLL("libc.so.6").malloc_trim(0)  # fast bins consolidated: free, not kept
            untouched["rss_trimmed_only_kb"] = _rss_kb()
            untouched["islands"] = islands(boundary)
        if os.environ.get("BENCH_TRACE_GARBAGE"):
            untouched["garbage"] = garbage()
        if os.environ.get("BENCH_TRIM"):
            gc.collect()
            ctypes.CDLL("libc.so.6").malloc_trim(0)
            untouched["rss_trimmed_kb"] = _rss_kb()
        if frames and not tracemalloc.is_tracing():
            gc.collect()
            tracemalloc.start(frames)
        found = stats()
        found["before_collection"] = untouched
        wanted = [w for w in os.environ.get("BENCH_TRACE_OWNERS", "").split(",") if w]
        if wanted:
            found["owners"] = owners(gc.get_objects(), wanted)
        (out / f"snap-{taken}.json").write_text(json.dumps(found, indent=1))
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
