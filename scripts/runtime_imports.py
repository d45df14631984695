"""Which installed distributions Lithos imports at run time, and which it never does.

Run it with the Python of an environment that has only Lithos installed (``pip install .`` in a
fresh venv), from the repository root:

    /tmp/v/bin/python scripts/runtime_imports.py

It starts ``lithos serve --transport http`` under ``python -X importtime`` (which logs every
module the process imports, whenever it happens), makes MCP calls over streamable HTTP and SSE
(write, read, every search mode after the embedder has run, retrieve, tags, stats, a task),
runs each CLI command the same way, and maps the modules imported to the distributions that
installed them. It prints the distributions never imported: the ones Lithos could do without.
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
from importlib.metadata import distributions, packages_distributions
from pathlib import Path

LITHOS = [sys.executable, "-X", "importtime", "-m", "lithos.cli.main"]
SKIP = {"pip", "setuptools", "wheel"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def modules(log: str) -> set[str]:
    return {m.group(1).split(".")[0] for m in re.finditer(r"import time:.*\|\s+(\S+)$", log, re.M)}


async def calls(base: str) -> None:
    from fastmcp import Client

    async with Client(f"{base}/mcp") as client:
        write = await client.call_tool(
            "lithos_write",
            {
                "title": "Event Loop",
                "content": "The asyncio event loop runs #python tasks.",
                "agent": "probe",
                "tags": ["python"],
            },
        )
        note_id = write.structured_content["id"]
        await client.call_tool("lithos_read", {"id": note_id})
        deadline = time.monotonic() + 120
        while True:  # wait until the background worker has embedded the note
            stats = await client.call_tool("lithos_stats", {})
            if stats.structured_content["indexes"].get("pending_chunks") == 0:
                break
            if time.monotonic() > deadline:
                raise SystemExit("the note was not embedded within 120 s")
            await asyncio.sleep(0.5)
        for mode in ("fulltext", "semantic", "hybrid"):
            await client.call_tool("lithos_search", {"query": "event loop", "mode": mode})
        await client.call_tool("lithos_retrieve", {"query": "event loop"})
        await client.call_tool("lithos_tags", {})
        await client.call_tool("lithos_links", {"id": note_id})
        task = await client.call_tool("lithos_task_create", {"title": "probe", "agent": "probe"})
        await client.call_tool("lithos_task_list", {})
        assert task.structured_content.get("status") != "error"
    async with Client(f"{base}/sse") as client:
        await client.call_tool("lithos_stats", {})


def serve(data: Path) -> str:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = data.parent / "serve.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [*LITHOS, "--data-dir", str(data), "serve", "--transport", "http", "--port", str(port)],
            stdout=sink,
            stderr=sink,
        )
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
            asyncio.run(calls(base))
        finally:
            process.terminate()
            process.wait(timeout=30)
    return log.read_text()


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
        logs.append(done.stderr)
    return "\n".join(logs)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        log = serve(data) + cli(data)
    imported = modules(log)
    by_module = packages_distributions()
    used = {canonical(dist) for module in imported for dist in by_module.get(module, [])}
    installed = sorted(
        dist.metadata["Name"]
        for dist in distributions()
        if canonical(dist.metadata["Name"]) not in SKIP
    )
    unused = [name for name in installed if canonical(name) not in used]
    print(f"{len(installed)} distributions installed, {len(installed) - len(unused)} imported")
    print("never imported:", ", ".join(unused) or "none")


if __name__ == "__main__":
    main()
