"""Issue 2: chat-bff's streaming overhead against a direct connection to the upstream."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.client import run_requests
from bench.measure import CHAT, DIRECT, V1, Target, measure, one_at_a_time
from bench.processes import Service, Upstream, catalogue, start_service, status_kb
from bench.sizes import Size

# --- issue 2: streaming overhead --------------------------------------------------------


async def issue2(
    size: Size, upstream: Upstream, tmp: Path, log: Any, *, nonstream_only: bool = False
) -> dict[str, Any]:
    shapes = [(5, 0), (5, 5), (size.chunks, 0), (size.paced_chunks, 5), (20, 0)]
    models_json = catalogue(shapes)
    out: dict[str, Any] = {"startup": []}
    service: Service | None = None
    for n in range(1 if nonstream_only else size.startups):
        if service is not None:
            service.stop()
        db = tmp / f"issue2-{n}.db"
        service = await start_service(
            upstream=upstream,
            database_url=f"sqlite+aiosqlite:///{db}",
            models_json=models_json,
            app_spec=["app.main:app"],
            tag=f"i2-{n}",
        )
        out["startup"].append(
            {
                "startup_s": service.startup_s,
                "startup_cpu_s": round(service.startup_cpu_s, 2),
                "idle_rss_mb": service.idle_rss_mb,
            }
        )
        log(
            f"start-up {n + 1}: {service.startup_s:.2f} s ({service.startup_cpu_s:.2f} s CPU), "
            f"idle RSS {service.idle_rss_mb:.1f} MB"
        )
    assert service is not None
    out["server"] = service.server
    try:
        targets = [(DIRECT, upstream.port), (V1, service.port), (CHAT, service.port)]

        def svc_for(t: Target) -> Service | None:
            return None if t.direct else service

        # warm-up: first requests import and build lazily
        for t, port in targets:
            await run_requests(port, [t.request(port, 5, 0)] * 20, concurrency=4, marker=t.marker)

        for delay in () if nonstream_only else (0, 5):
            key = f"ttft1_d{delay}"
            out[key] = await one_at_a_time(
                [
                    (t.name, port, [t.request(port, 5, delay)] * size.ttft_n, t.marker)
                    for t, port in targets
                ],
                size.ttft_n,
                5,
            )
            log(f"TTFT at 1 stream, {delay} ms pacing: done")

        if not nonstream_only:
            await streams(out, size, upstream, targets, svc_for, log)

        out["nonstream"] = {}
        for t, port in targets:
            load = await measure(
                port,
                [t.request(port, 20, 0, stream=False)] * size.nonstream_n,
                concurrency=50,
                service=svc_for(t),
                upstream=upstream,
            )
            out["nonstream"][t.name] = load.summary()
        log("non-streaming at concurrency 50: done")
        out["peak_rss_mb"] = status_kb(service.pid, "VmHWM") / 1024
    finally:
        service.stop()
    return out


async def streams(
    out: dict[str, Any],
    size: Size,
    upstream: Upstream,
    targets: list[tuple[Target, int]],
    svc_for: Any,
    log: Any,
) -> None:
    """Many streams at once, unpaced and paced at 5 ms."""
    out["saturated"] = {}
    for t, port in targets:
        load = await measure(
            port,
            [t.request(port, size.chunks, 0)] * size.streams,
            concurrency=size.streams,
            service=svc_for(t),
            upstream=upstream,
            marker=t.marker,
            expected_tokens=size.chunks,
        )
        out["saturated"][t.name] = load.summary()
        log(f"{size.streams} streams x {size.chunks} chunks, 0 ms pacing, {t.name}: done")

    out["paced"] = {}
    for t, port in targets:
        load = await measure(
            port,
            [t.request(port, size.paced_chunks, 5)] * size.streams,
            concurrency=size.streams,
            service=svc_for(t),
            upstream=upstream,
            marker=t.marker,
            gaps=True,
            expected_tokens=size.paced_chunks,
        )
        out["paced"][t.name] = load.summary()
        log(f"{size.streams} streams x {size.paced_chunks} chunks, 5 ms pacing, {t.name}: done")
