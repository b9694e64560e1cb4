"""Recently finished conversation runs, kept in memory so a reader that reconnects right
after the end is served without the database.

Bounded twice: by count, and by the bytes their logs hold, since one long answer holds
thousands of events (a log larger than the whole budget is not kept, and pushes no other
out: its readers read the database, as after a restart). The oldest run goes first.
"""

from __future__ import annotations

from collections import OrderedDict

from app.runs.active import ActiveRun

FINISHED_LOGS_KEPT = 64
# What the kept logs may hold in all: about 100 answers of 500 chunks, 5 of 10,000.
FINISHED_LOG_BYTES = 16 * 1024 * 1024


class FinishedRuns:
    def __init__(self) -> None:
        self._runs: OrderedDict[str, tuple[ActiveRun, int]] = OrderedDict()
        self._bytes = 0

    def add(self, run: ActiveRun) -> None:
        """Keep a finished run (its log held as JSON alone), dropping the oldest beyond
        the bounds."""
        size = run.log.keep_json_only()
        if size > FINISHED_LOG_BYTES:
            return  # it would push every other run out
        self._runs[run.run_id] = (run, size)
        self._bytes += size
        while len(self._runs) > FINISHED_LOGS_KEPT or self._bytes > FINISHED_LOG_BYTES:
            _, (_, dropped) = self._runs.popitem(last=False)
            self._bytes -= dropped

    def get(self, run_id: str) -> ActiveRun | None:
        kept = self._runs.get(run_id)
        return None if kept is None else kept[0]

    def forget(self, conversation_id: str) -> None:
        """Drop the runs of a purged conversation."""
        for run_id, (run, size) in list(self._runs.items()):
            if run.conversation_id == conversation_id:
                del self._runs[run_id]
                self._bytes -= size
