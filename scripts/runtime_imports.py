"""Which installed distributions Lithos imports at run time, and which it never does.

Run it with the Python of an environment that has only Lithos installed (``pip install .`` in a
fresh venv), from the repository root:

    /tmp/v/bin/python scripts/runtime_imports.py

It starts ``lithos serve`` under ``python -X importtime`` (which logs every module the process
imports, whenever it happens) over streamable HTTP (MCP calls over ``/mcp`` and ``/sse``: write,
read, every search mode after the embedder has run, retrieve, tags, links, a task), over SSE
only and over stdio, runs each CLI command the same way, and maps the modules imported to the
distributions that installed them. The MCP client is the MCP SDK's own (a run-time dependency),
so the probe needs nothing the runtime install lacks.

It prints the distributions never imported and exits 1 if one of them is not in the table of
docs/dependencies.md with "no" in its imported column (or the table lists one that is not
installed): the table is the reviewed list of what the runtime install holds and why.
"""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from importlib.metadata import distributions, packages_distributions
from pathlib import Path
from typing import Any

from mcp.client.client import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.dependencies import canonical, documented  # noqa: E402

LITHOS = [sys.executable, "-X", "importtime", "-m", "lithos.cli.main"]
SKIP = {"pip", "setuptools", "wheel"}
Calls = Callable[[Client], Awaitable[None]]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def modules(log: str) -> set[str]:
    return {m.group(1).split(".")[0] for m in re.finditer(r"import time:.*\|\s+(\S+)$", log, re.M)}


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    content = result.structured_content
    if result.is_error or not isinstance(content, dict) or content.get("status") == "error":
        raise SystemExit(f"{tool} failed: {result}")
    return content


async def fails(client: Client, tool: str, **arguments: Any) -> None:
    result = await client.call_tool(tool, arguments)
    content = result.structured_content
    if not (result.is_error or (isinstance(content, dict) and content.get("status") == "error")):
        raise SystemExit(f"{tool} should have failed: {result}")


async def everything(client: Client) -> None:
    await client.list_tools()
    await call(client, "lithos_write", title="Coroutines", content="async def", agent="probe")
    written = await call(
        client,
        "lithos_write",
        title="Event Loop",
        content="The asyncio event loop runs #python tasks. See [[Coroutines]].",
        agent="probe",
        tags=["python"],
    )
    await call(client, "lithos_read", id=written["id"])
    deadline = time.monotonic() + 120
    while (await call(client, "lithos_stats"))["indexes"].get("pending_chunks") != 0:
        if time.monotonic() > deadline:  # the background worker embeds the note
            raise SystemExit("the note was not embedded within 120 s")
        await asyncio.sleep(0.5)
    for mode in ("fulltext", "semantic", "hybrid"):
        await call(client, "lithos_search", query="event loop", mode=mode)
    await call(client, "lithos_retrieve", query="event loop")
    await call(client, "lithos_tags")
    await call(client, "lithos_links", id=written["id"])
    await call(client, "lithos_task_create", title="probe", agent="probe")
    await call(client, "lithos_task_list")
    await fails(client, "lithos_read", id="not-a-uuid")  # an error envelope
    await fails(client, "lithos_search", query="x", limit="many")  # schema validation
    await fails(client, "lithos_no_such_tool")


async def a_few(client: Client) -> None:
    await client.list_tools()
    await call(client, "lithos_search", query="event loop")
    await call(client, "lithos_stats")


def serve_http(data: Path, transport: str) -> str:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = data.parent / f"serve-{transport}.log"
    command = [*LITHOS, "--data-dir", str(data), "serve", "--transport", transport]
    with log.open("w") as sink:
        process = subprocess.Popen([*command, "--port", str(port)], stdout=sink, stderr=sink)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    with urllib.request.urlopen(f"{base}/health", timeout=1) as response:
                        if response.status == 200:
                            break
                except OSError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"server did not start:\n{log.read_text()}")
                time.sleep(0.2)
            if transport == "http":
                asyncio.run(session(Client(f"{base}/mcp"), everything))
            asyncio.run(session(Client(sse_client(f"{base}/sse")), a_few))
        except BaseException:
            print(server_errors(log), file=sys.stderr)
            raise
        finally:
            process.terminate()
            process.wait(timeout=30)
    return log.read_text()


def serve_stdio(data: Path) -> str:
    log = data.parent / "serve-stdio.log"
    command = [*LITHOS[1:], "--data-dir", str(data), "serve", "--transport", "stdio"]
    with log.open("w") as sink:
        server = StdioServerParameters(command=sys.executable, args=command)
        try:
            asyncio.run(session(Client(stdio_client(server, errlog=sink)), a_few))
        except BaseException:
            print(server_errors(log), file=sys.stderr)
            raise
    return log.read_text()


def server_errors(log: Path) -> str:
    """The server's log without the import-time lines: what it said before the probe failed."""
    lines = log.read_text().splitlines()
    return "\n".join(line for line in lines if not line.startswith("import time:"))


async def session(client: Client, calls: Calls) -> None:
    async with client:
        await calls(client)


def cli(data: Path) -> str:
    logs = []
    for args in (
        ["stats"],
        ["search", "event"],
        ["search", "--json", "event"],
        ["reindex"],
        ["validate"],
        ["doctor"],
        ["--version"],
    ):
        done = subprocess.run(
            [*LITHOS, "--data-dir", str(data), *args], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise SystemExit(f"lithos {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
        logs.append(done.stderr)
    return "\n".join(logs)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        log = serve_http(data, "http") + serve_http(data, "sse") + serve_stdio(data) + cli(data)
    imported = modules(log)
    by_module = packages_distributions()
    used = {canonical(dist) for module in imported for dist in by_module.get(module, [])}
    installed = {
        canonical(dist.metadata["Name"]): dist.metadata["Name"]
        for dist in distributions()
        if canonical(dist.metadata["Name"]) not in SKIP | {"lithos-kb"}
    }
    unused = sorted(name for key, name in installed.items() if key not in used)
    imported_count = len(installed.keys() & used)
    print(f"{len(installed)} distributions installed besides Lithos, {imported_count} imported")
    print("never imported:", ", ".join(unused) or "none")
    table = documented()
    problems = [
        f"{name}: never imported, but docs/dependencies.md does not say so"
        for name in unused
        if canonical(name) not in table or table[canonical(name)].imported
    ]
    problems += [
        f"{name}: imported, but docs/dependencies.md says it is not"
        for key, name in installed.items()
        if key in used and key in table and not table[key].imported
    ]
    problems += [
        f"{entry.name}: in docs/dependencies.md but not installed"
        for key, entry in table.items()
        if key not in installed
    ]
    problems += [
        f"{name}: installed, not in docs/dependencies.md"
        for key, name in installed.items()
        if key not in table
    ]
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
