"""`lithos serve` as a subprocess, driven by real MCP clients over stdio, HTTP and SSE."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import psutil
import pytest
from fastmcp import Client
from fastmcp.client.transports import SSETransport, StdioTransport, StreamableHttpTransport

from tests.support import call

pytestmark = pytest.mark.e2e

ENV = {**os.environ, "FASTMCP_CHECK_FOR_UPDATES": "off"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[str, Path, int]]:
    port = free_port()
    data = tmp_path / "data"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lithos.cli.main",
            "--data-dir",
            str(data),
            "serve",
            "--transport",
            "http",
            "--port",
            str(port),
            "--no-watch",
        ],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start: {process.stderr.read().decode()}")  # type: ignore[union-attr]
            time.sleep(0.1)
        yield base, data, process.pid
    finally:
        process.terminate()
        process.wait(timeout=10)


async def exercise(client: Client) -> None:
    tools = {t.name for t in await client.list_tools()}
    assert {"lithos_write", "lithos_search", "lithos_task_claim", "lithos_stats"} <= tools
    written = await call(
        client, "lithos_write", title="Over the wire", content="transport test body", agent="e2e"
    )
    assert written["status"] == "created"
    found = await call(client, "lithos_search", query="transport")
    assert [r["id"] for r in found["results"]] == [written["id"]]
    error = await call(client, "lithos_read", id="not-a-uuid")
    assert error["status"] == "error" and error["code"] == "invalid_input"


async def test_http_serves_health_and_streamable_http_at_mcp(http_server: tuple[str, Path, int]):
    base, data, _ = http_server
    health = httpx.get(f"{base}/health").json()
    assert health["status"] == "ok"
    async with Client(StreamableHttpTransport(f"{base}/mcp")) as client:
        await exercise(client)
    assert len(list((data / "knowledge").glob("*.md"))) == 1


async def test_http_serves_legacy_sse_on_the_same_port(http_server: tuple[str, Path, int]):
    base, _, _ = http_server
    async with Client(SSETransport(f"{base}/sse")) as client:
        await exercise(client)


async def test_http_binds_loopback_by_default(http_server: tuple[str, Path, int]):
    _, _, pid = http_server
    listening = [
        c.laddr
        for c in psutil.Process(pid).net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    ]
    assert listening and all(addr.ip == "127.0.0.1" for addr in listening)


async def test_stdio_transport_serves_every_tool(tmp_path: Path):
    transport = StdioTransport(
        command=sys.executable,
        args=[
            "-m",
            "lithos.cli.main",
            "--data-dir",
            str(tmp_path / "data"),
            "serve",
            "--transport",
            "stdio",
            "--no-watch",
        ],
        env=ENV,
    )
    async with Client(transport) as client:
        await exercise(client)
        stats = await call(client, "lithos_stats")
        assert stats["documents"] == 1 and stats["agents"] == 1


@pytest.mark.parametrize("http_server", ["sse"], indirect=True)
async def test_sse_transport_alone_serves_legacy_clients(http_server: tuple[str, Path, int]):
    base, _, _ = http_server
    async with Client(SSETransport(f"{base}/sse")) as client:
        await exercise(client)
