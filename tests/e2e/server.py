"""Start `lithos serve` (or any HTTP server command) as a subprocess and wait until it is up."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2 as httpx

ENV = {**os.environ, "FASTMCP_CHECK_FOR_UPDATES": "off"}


@contextmanager
def running_server(
    command: list[str], base: str, log: Path, env: dict[str, str] | None = None
) -> Iterator[int]:
    """Run ``command`` with stdout and stderr in ``log`` until ``base``/health answers 200;
    yield the process id, then terminate it."""
    with log.open("wb") as sink:
        process = subprocess.Popen(command, env=env or ENV, stdout=sink, stderr=sink)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"server did not start: {log.read_text()}")
                time.sleep(0.1)
            yield process.pid
        finally:
            process.terminate()
            process.wait(timeout=10)
