"""`lithos serve` as a subprocess, driven by real MCP clients over stdio, HTTP and SSE."""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import psutil
import pytest
from fastmcp import Client
from fastmcp.client.transports import SSETransport, StdioTransport, StreamableHttpTransport

from lithos.cli.main import main
from tests.e2e.server import ENV, running_server
from tests.support import call

pytestmark = pytest.mark.e2e


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(request, tmp_path: Path) -> Iterator[tuple[str, Path, int]]:
    """`lithos serve` over HTTP (or the transport given as the fixture's param); its log is
    in tmp_path/server.log."""
    port = free_port()
    data = tmp_path / "data"
    transport = getattr(request, "param", "http")
    command = [sys.executable, "-m", "lithos.cli.main", "--data-dir", str(data), "serve"]
    command += ["--transport", transport, "--port", str(port), "--no-watch"]
    with running_server(command, f"http://127.0.0.1:{port}", tmp_path / "server.log") as pid:
        yield f"http://127.0.0.1:{port}", data, pid


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
    assert set(health["stores"]) == {
        "coordination",
        "identities",
        "edges",
        "stats",
        "catalog",
        "fulltext",
        "vectors",
    }
    assert all(store == {"state": "ok"} for store in health["stores"].values())
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
    # Logs never travel on stdout (the MCP channel): stderr and the rotating file get them.
    log = (tmp_path / "data" / ".lithos" / "logs" / "lithos.log").read_text()
    assert "serving MCP over stdio" in log


@pytest.mark.parametrize("http_server", ["sse"], indirect=True)
async def test_sse_transport_alone_serves_legacy_clients(
    http_server: tuple[str, Path, int], tmp_path: Path
):
    base, _, _ = http_server
    async with Client(SSETransport(f"{base}/sse")) as client:
        await exercise(client)
    assert httpx.get(f"{base}/mcp").status_code == 404
    log = (tmp_path / "server.log").read_text()
    assert f"SSE at {base}/sse" in log and "/mcp" not in log


async def test_serve_logs_that_it_creates_a_new_knowledge_base(
    http_server: tuple[str, Path, int], tmp_path: Path
):
    assert "creating a new, empty one" in (tmp_path / "server.log").read_text()


def test_doctor_recognises_the_port_of_a_running_lithos(http_server: tuple[str, Path, int], capsys):
    base, data, _ = http_server
    port = base.rsplit(":", 1)[1]
    assert main(["doctor", "--data-dir", str(data), "--port", port, "--json"]) == 0
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    assert checks["port"]["status"] == "ok"
    assert checks["port"]["detail"].endswith("is served by a running Lithos")


def _initialize(base: str) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "e2e", "version": "1"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    return httpx.post(f"{base}/mcp", json=body, headers=headers, timeout=10)


async def test_streamable_http_answers_with_plain_json_by_default(
    http_server: tuple[str, Path, int],
):
    base, _, _ = http_server
    response = _initialize(base)
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["result"]["serverInfo"]["name"] == "lithos"


async def test_streamable_http_can_answer_with_sse_streams(tmp_path: Path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "lithos.cli.main", "--data-dir", str(tmp_path / "data")]
    command += ["serve", "--transport", "http", "--port", str(port), "--no-watch"]
    env = {**ENV, "LITHOS_SERVER__JSON_RESPONSE": "false"}
    with running_server(command, base, tmp_path / "server.log", env):
        assert _initialize(base).headers["content-type"].startswith("text/event-stream")
        async with Client(StreamableHttpTransport(f"{base}/mcp")) as client:
            await exercise(client)


async def test_serve_indexes_a_file_added_while_stopped_once_its_deferred_check_ran(
    tmp_path: Path,
):
    """`lithos serve` answers first and checks the indexes against the files a moment
    later (mcp.server.BACKGROUND_AT_LATEST_S without a call): a file added while it was
    stopped is found then."""
    data = tmp_path / "data"
    (data / "knowledge").mkdir(parents=True)
    (data / "knowledge" / "Kept.md").write_text("# Kept\n\na kept cormorant\n")
    assert main(["--data-dir", str(data), "reindex", "--no-embed"]) == 0
    (data / "knowledge" / "Added.md").write_text("# Added\n\na hand written ptarmigan\n")
    port = free_port()
    command = [sys.executable, "-m", "lithos.cli.main", "--data-dir", str(data), "serve"]
    command += ["--transport", "http", "--port", str(port), "--no-watch"]
    base = f"http://127.0.0.1:{port}"
    with running_server(command, base, tmp_path / "server.log"):
        deadline = time.monotonic() + 30
        while httpx.get(f"{base}/health").json()["components"]["index_check"] != "done":
            assert time.monotonic() < deadline, "the index check never ended"
            time.sleep(0.05)
        async with Client(StreamableHttpTransport(f"{base}/mcp")) as client:
            found = await call(client, "lithos_search", query="ptarmigan")
    assert [hit["path"] for hit in found["results"]] == ["Added.md"]
