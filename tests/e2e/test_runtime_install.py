"""`lithos serve` with only the distributions `pip install .` installs (no dev extra): the
FastMCP server without its `server` extra really serves every transport."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import SSETransport, StdioTransport, StreamableHttpTransport

from tests.e2e.server import ENV, running_server
from tests.e2e.test_transports import exercise, free_port

pytestmark = pytest.mark.e2e

LAUNCHER = str(Path(__file__).with_name("runtime_only.py"))
RUNTIME_ONLY = [sys.executable, LAUNCHER, "lithos.cli.main"]


def test_the_launcher_hides_what_only_the_dev_extra_installs():
    # The file-tree store of py-key-value-aio needs aiofile, which FastMCP's client (the dev
    # extra) installs and the runtime install, with only the `memory` extra, does not.
    module = "key_value.aio.stores.filetree.store"
    plain = subprocess.run([sys.executable, "-m", module], capture_output=True, text=True, env=ENV)
    hidden = subprocess.run(
        [sys.executable, LAUNCHER, module], capture_output=True, text=True, env=ENV
    )
    assert plain.returncode == 0, plain.stderr
    assert hidden.returncode != 0
    assert "ModuleNotFoundError: No module named 'aiofile'" in hidden.stderr


async def test_http_server_of_the_runtime_install_serves_mcp_and_sse(tmp_path: Path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [*RUNTIME_ONLY, "--data-dir", str(tmp_path / "data"), "serve"]
    command += ["--transport", "http", "--port", str(port)]
    with running_server(command, base, tmp_path / "server.log"):
        async with Client(StreamableHttpTransport(f"{base}/mcp")) as client:
            await exercise(client)
        async with Client(SSETransport(f"{base}/sse")) as client:
            assert "lithos_write" in {tool.name for tool in await client.list_tools()}
    assert "Traceback" not in (tmp_path / "server.log").read_text()


async def test_stdio_server_of_the_runtime_install_serves_every_tool(tmp_path: Path):
    data = tmp_path / "data"
    transport = StdioTransport(
        command=RUNTIME_ONLY[0],
        args=[*RUNTIME_ONLY[1:], "--data-dir", str(data), "serve", "--transport", "stdio"],
        env=ENV,
    )
    async with Client(transport) as client:
        await exercise(client)
    assert "Traceback" not in (data / ".lithos" / "logs" / "lithos.log").read_text()
