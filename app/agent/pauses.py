"""What a paused turn waits for, as its message's metadata says it."""

from __future__ import annotations

from app.domain.parts import Part, ToolPart


def awaiting(parts: list[Part]) -> dict[str, object]:
    """What a paused turn's message says of its background jobs, in its metadata: the jobs
    whose results will continue the conversation (`background_jobs`) and
    `finish_reason: awaiting_background` (a person's turn, `requires_action`, overrides it)."""
    tools = [p for p in parts if isinstance(p, ToolPart)]
    out: dict[str, object] = {}
    loading = [p.data.backgroundJobId for p in tools if p.data.status == "loading"]
    loading = [job for job in loading if job]
    if loading:
        out = {"finish_reason": "awaiting_background", "background_jobs": loading}
    return out
