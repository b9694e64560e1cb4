"""A stdio server's stderr as DEBUG log lines of ours.

Servers write their own logging to stderr, often a line per request (every ping): passed
through as the SDK does by default, that floods the service's output with lines in
another format. Here each line becomes a DEBUG record of `chat_bff.mcp.stderr` naming the
server, so it is there when one looks and quiet otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import TextIO

log = logging.getLogger("chat_bff.mcp.stderr")
_LINE_CAP = 2000


class StderrLog:
    """The write end (`file`) goes to the subprocess; lines read from the other end are
    logged until the process and we have both closed it."""

    def __init__(self, server: str) -> None:
        self.server = server
        read_fd, write_fd = os.pipe()
        self.file: TextIO = os.fdopen(write_fd, "w")
        self._read = os.fdopen(read_fd, "rb")
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        reader = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), self._read
        )
        self._task = asyncio.create_task(self._pump(reader, transport))

    async def _pump(self, reader: asyncio.StreamReader, transport: asyncio.BaseTransport) -> None:
        try:
            while line := await reader.readline():
                text = line.decode("utf-8", errors="replace").rstrip()[:_LINE_CAP]
                if text:
                    log.debug(text, extra={"mcp_server": self.server})
        finally:
            transport.close()

    async def aclose(self, grace: float = 1.0) -> None:
        """Close our write end; the rest is read until the process's copy closes too."""
        self.file.close()
        task, self._task = self._task, None
        if task is None:
            self._read.close()
            return
        done, _ = await asyncio.wait({task}, timeout=grace)
        if not done:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
