"""DNS-rebinding protection: over real HTTP, requests whose Host or Origin header names
another site are refused on /mcp and /sse and write nothing; local clients keep working."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import SSETransport, StreamableHttpTransport

from tests.e2e.server import ENV, running_server
from tests.e2e.test_transports import free_port
from tests.support import call

pytestmark = pytest.mark.e2e


class Served:
    def __init__(self, base: str, port: int, data: Path) -> None:
        self.base, self.port, self.data = base, port, data

    def notes(self) -> list[Path]:
        return sorted((self.data / "knowledge").rglob("*.md"))

    def agents(self) -> list[str]:
        with sqlite3.connect(self.data / ".lithos" / "coordination.db") as conn:
            return [row[0] for row in conn.execute("SELECT id FROM agents")]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("rebinding")
    port = free_port()
    data = tmp / "data"
    command = [sys.executable, "-m", "lithos.cli.main", "--data-dir", str(data), "serve"]
    command += ["--transport", "http", "--port", str(port), "--no-watch"]
    env = {**ENV, "LITHOS_SERVER__ALLOWED_HOSTS": '["lithos.internal"]'}
    base = f"http://127.0.0.1:{port}"
    with running_server(command, base, tmp / "server.log", env=env):
        yield Served(base, port, data)


def foreign(port: int) -> dict[str, dict[str, str]]:
    """Nine ways a web page on another site, or another program's page on this machine,
    reaches a loopback server."""
    return {
        "rebound host": {"Host": "attacker.example"},
        "rebound host with port": {"Host": f"attacker.example:{port}"},
        "loopback-looking host": {"Host": f"127.0.0.1.attacker.example:{port}"},
        "localhost subdomain host": {"Host": f"localhost.attacker.example:{port}"},
        "foreign origin": {"Origin": "http://attacker.example"},
        "foreign origin with port": {"Origin": f"http://attacker.example:{port}"},
        "opaque origin": {"Origin": "null"},
        "loopback host, another port": {"Host": f"127.0.0.1:{port + 1}"},
        "loopback origin, another port": {"Origin": f"http://localhost:{port + 1}"},
    }


VARIANTS = list(foreign(0))


async def attempt_write(transport: StreamableHttpTransport | SSETransport) -> None:
    async with Client(transport, timeout=10) as client:
        await call(client, "lithos_write", agent="intruder", title="Pwned", content="x")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("endpoint", ["/mcp", "/sse"])
async def test_a_foreign_host_or_origin_is_refused_and_writes_nothing(
    served: Served, variant: str, endpoint: str
):
    headers = foreign(served.port)[variant]
    raw = httpx.post(
        f"{served.base}{endpoint}" if endpoint == "/mcp" else f"{served.base}/messages/",
        headers={**headers, "Content-Type": "application/json"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
    assert raw.status_code in (403, 421)
    url = f"{served.base}{endpoint}"
    transport = (
        StreamableHttpTransport(url, headers=headers)
        if endpoint == "/mcp"
        else SSETransport(url, headers=headers)
    )
    with pytest.raises(Exception):  # noqa: B017 - the transport surfaces the refusal its own way
        await attempt_write(transport)
    assert not [p for p in served.notes() if p.name.startswith("pwned")]
    assert "intruder" not in served.agents()


async def test_local_clients_and_configured_hosts_keep_working(served: Served):
    local = {
        "plain": {},
        "localhost host": {"Host": f"localhost:{served.port}"},
        "loopback origin": {"Origin": f"http://localhost:{served.port}"},
        "configured host": {"Host": f"lithos.internal:{served.port}"},
    }
    for name, headers in local.items():
        async with Client(
            StreamableHttpTransport(f"{served.base}/mcp", headers=headers), timeout=30
        ) as client:
            written = await call(client, "lithos_write", agent="local", title=name, content="ok")
            assert written["status"] == "created", (name, written)
    async with Client(SSETransport(f"{served.base}/sse"), timeout=30) as client:
        written = await call(client, "lithos_write", agent="local", title="over sse", content="ok")
        assert written["status"] == "created"
    assert len(served.notes()) == len(local) + 1
