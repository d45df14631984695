"""The README's connection snippets, run literally: only the placeholder paths (and, for HTTP,
the port, so that parallel runs do not collide) are filled in."""

from __future__ import annotations

import json
import re
import shlex
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

from tests.e2e.server import ENV, running_server
from tests.support import call

pytestmark = pytest.mark.e2e

README = Path(__file__).resolve().parents[2] / "README.md"
LITHOS = str(Path(sys.executable).with_name("lithos"))
BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.DOTALL)


def blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(README.read_text()) if lang == language]


def filled(text: str, data: Path) -> str:
    return text.replace("/path/to/lithos", LITHOS).replace("/path/to/data", str(data))


def json_config(key: str, data: Path) -> dict[str, Any]:
    (config,) = [json.loads(filled(b, data)) for b in blocks("json") if f'"{key}"' in b]
    return config[key]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def round_trip(client: Client) -> None:
    written = await call(client, "lithos_write", title="From the README", content="r", agent="a")
    assert written["status"] == "created"
    found = await call(client, "lithos_read", id=written["id"])
    assert found["title"] == "From the README"


async def test_the_json_stdio_entry_connects(tmp_path: Path):
    entry = json_config("mcpServers", tmp_path / "data")["lithos-stdio"]
    assert entry["command"] == LITHOS
    async with Client(StdioTransport(entry["command"], entry["args"], env=ENV)) as client:
        await round_trip(client)
    assert len(list((tmp_path / "data" / "knowledge").glob("*.md"))) == 1


async def test_the_claude_code_stdio_line_connects(tmp_path: Path):
    (line,) = [
        line
        for block in blocks("sh")
        for line in block.splitlines()
        if line.startswith("claude mcp add lithos -- ")
    ]
    command = shlex.split(filled(line.split(" -- ", 1)[1], tmp_path / "data"))
    async with Client(StdioTransport(command[0], command[1:], env=ENV)) as client:
        await round_trip(client)


async def test_the_json_url_entries_connect_to_lithos_serve(tmp_path: Path):
    data = tmp_path / "data"
    entry = json_config("mcpServers", data)["lithos"]
    vscode = json_config("servers", data)["lithos"]
    assert entry["type"] == vscode["type"] == "http"
    assert entry["url"] == vscode["url"] == "http://127.0.0.1:8765/mcp"
    port = free_port()
    url = entry["url"].replace(":8765", f":{port}")
    command = [LITHOS, "serve", "--data-dir", str(data), "--port", str(port)]
    with running_server(command, f"http://127.0.0.1:{port}", tmp_path / "server.log"):
        async with Client(StreamableHttpTransport(url)) as client:
            await round_trip(client)
