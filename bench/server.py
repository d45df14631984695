"""A ``lithos serve`` subprocess on 127.0.0.1 for benchmarks: start, time, measure, stop."""

from __future__ import annotations

import asyncio
import compileall
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil

LITHOS = Path(sys.executable).with_name("lithos")
FLOOR_SERVER = Path(__file__).resolve().with_name("floor_server.py")
BARE_SERVER = Path(__file__).resolve().with_name("bare_server.py")


def compile_lithos() -> None:
    """Write the bytecode of Lithos's modules, as installing the package does (pip compiles
    it at install time, the Docker image included). An editable install run with
    PYTHONDONTWRITEBYTECODE set, as on the benchmark machine, would otherwise compile every
    Lithos module again at each start: ~0.27 s of CPU before the first answer that no
    installed Lithos pays (bench/NOTES.md). Idempotent and quick once written."""
    import lithos

    compileall.compile_dir(Path(lithos.__file__).parent, quiet=1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """``lithos serve --transport http`` over ``data_dir``; ``startup_s`` is the time from
    spawning the process to the first healthy ``GET /health``."""

    def __init__(
        self,
        data_dir: Path,
        watch: bool = False,
        env: dict[str, str] | None = None,
        log: Path | None = None,
        floor: bool = False,
        json_response: bool = False,
        embed: bool = True,
        bare: bool = False,
        lithos: Path | None = None,
    ) -> None:
        """``floor`` serves through bench/floor_server.py (Lithos plus the trivial
        ``bench_noop`` tool), there without the embedding worker unless ``embed``;
        ``json_response`` answers POSTs with JSON instead of SSE; ``bare`` serves
        bench/bare_server.py (FastMCP alone, no Lithos: the start-up floor); ``lithos`` is
        another ``lithos`` executable to serve with (another tree's, for an A/B)."""
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self._watch = watch
        self._env = {**os.environ, "FASTMCP_CHECK_FOR_UPDATES": "off", **(env or {})}
        self._log = log or data_dir.parent / "server.log"
        self._floor = floor
        self._json_response = json_response
        self._embed = embed
        self._bare = bare
        self._lithos = lithos or LITHOS
        self._process: subprocess.Popen[bytes] | None = None
        self.startup_s = 0.0
        self.spawned_at = 0.0  # time.perf_counter() when the process was spawned

    def start(self, timeout: float = 900) -> Server:
        compile_lithos()
        if self._bare:
            command = [sys.executable, str(BARE_SERVER), "--port", str(self.port)]
        elif self._floor:
            command = [sys.executable, str(FLOOR_SERVER), "--data-dir", str(self.data_dir)]
            command += ["--port", str(self.port)]
            command += ["--json-response"] if self._json_response else []
            command += [] if self._embed else ["--no-embed"]
        else:
            command = [str(self._lithos), "--data-dir", str(self.data_dir), "serve"]
            command += ["--transport", "http", "--host", "127.0.0.1", "--port", str(self.port)]
            if not self._watch:
                command.append("--no-watch")
            if self._json_response:
                self._env["LITHOS_SERVER__JSON_RESPONSE"] = "true"
        started = self.spawned_at = time.perf_counter()
        with self._log.open("ab") as log:
            self._process = subprocess.Popen(command, env=self._env, stdout=log, stderr=log)
        deadline = started + timeout
        while time.perf_counter() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"lithos serve exited with {self._process.returncode}")
            if self._healthy():
                self.startup_s = time.perf_counter() - started
                return self
            time.sleep(0.02)
        self.stop()
        raise TimeoutError(f"lithos serve not healthy after {timeout} s")

    def first_call_s(self) -> float:
        """Seconds from spawning the server to the answer of its first MCP tool call (a
        full-text search over a fresh client session): call it right after start-up."""
        from fastmcp import Client

        async def search() -> None:
            async with Client(self.url) as client:
                await client.call_tool("lithos_search", {"query": "process", "limit": 5})

        asyncio.run(search())
        return time.perf_counter() - self.spawned_at

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def rss_mb(self) -> float:
        """Resident memory of the server process and any children, in MiB."""
        if self._process is None:
            return 0.0
        process = psutil.Process(self._process.pid)
        total = process.memory_info().rss
        total += sum(child.memory_info().rss for child in process.children(recursive=True))
        return round(total / 2**20, 1)

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process has used so far (every thread)."""
        if self._process is None:
            return 0.0
        times = psutil.Process(self._process.pid).cpu_times()
        return float(times.user + times.system)

    def stop(self) -> None:
        if self._process is None:
            return
        self._process.send_signal(signal.SIGINT)
        try:
            self._process.wait(30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process = None

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
