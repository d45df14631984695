"""Server throughput and server CPU per call, measured with wrk instead of Python clients.

A Python MCP client costs a few milliseconds of CPU per call, on the same two cores as the
server, so client-driven benchmarks measure the client. Here Python only opens one MCP session
over streamable HTTP (initialize + initialized); the Debian ``wrk`` load generator then replays
JSON-RPC tool calls on that session (bench/load.lua) at a few microseconds of client CPU each.
Server CPU per call is the server process's user+system time over a run divided by the calls
answered. ``bench_noop``, a tool that does nothing, registered only by bench/floor_server.py,
gives the protocol floor on the same stack. Every figure is taken in both response modes of
streamable HTTP: one-event SSE streams (the default) and plain JSON bodies.

Needs ``wrk``: ``bench/setup.sh`` installs it (``make bench`` runs it).

    .venv/bin/python bench/load.py --notes 1000
    .venv/bin/python bench/load.py --quick          # 200 notes, short runs
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx2 as httpx
import mcp.types

from bench import cache, corpus, machine
from bench.machine import log
from bench.server import Server
from bench.workload import QUERIES
from lithos.app import LithosApp
from lithos.config import load_config

LUA = Path(__file__).resolve().with_name("load.lua")
RESULT = re.compile(
    r"LITHOS_RESULT responses=(\d+) errors=(\d+) socket_errors=(\d+) p50_us=(\d+) p99_us=(\d+)"
)
# Server CPU per call of these tools should stay within FLOOR_RATIO of bench_noop's.
NEAR_FLOOR = ("read", "list", "tags", "stats", "search_fulltext", "task_claim")
FLOOR_RATIO = 1.5
MIXED_TARGET = 400  # calls/s, zero errors


class Session:
    """One MCP session over streamable HTTP, opened with the raw JSON-RPC handshake."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=120)
        self.id = ""
        self.version = mcp.types.LATEST_PROTOCOL_VERSION
        self._next = 0

    def open(self) -> Session:
        params = {
            "protocolVersion": self.version,
            "capabilities": {},
            "clientInfo": {"name": "lithos-load", "version": "1"},
        }
        response = self._post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        self.id = response.headers["mcp-session-id"]
        self.version = _message(response)["result"]["protocolVersion"]
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        body = {"jsonrpc": "2.0", "id": self._next, "method": "tools/call"}
        body["params"] = {"name": tool, "arguments": arguments}
        result = _message(self._post(body))["result"]
        if result.get("isError"):
            raise RuntimeError(f"{tool}: {result}")
        return dict(result["structuredContent"])

    def close(self) -> None:
        self.http.close()  # an open keep-alive connection would hold up the server's shutdown

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        headers = {"Accept": "application/json, text/event-stream"}
        if self.id:
            headers |= {"mcp-session-id": self.id, "mcp-protocol-version": self.version}
        response = self.http.post(self.url, json=body, headers=headers)
        response.raise_for_status()
        return response


def _message(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC response in a plain JSON body or in the data line of an SSE stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))
    return dict(response.json())


def tool_call(tool: str, arguments: dict[str, Any]) -> str:
    body = {"jsonrpc": "2.0", "id": "@ID@", "method": "tools/call"}
    body["params"] = {"name": tool, "arguments": arguments}
    return json.dumps(body, separators=(",", ":"))


def scenarios(ids: list[str], task_id: str) -> dict[str, list[str]]:
    """JSON-RPC request lines per scenario; wrk cycles through each list."""
    rng = random.Random(11)
    reads = [tool_call("lithos_read", {"id": rng.choice(ids)}) for _ in range(50)]

    def search(mode: str) -> list[str]:
        return [tool_call("lithos_search", {"query": q, "mode": mode}) for q in QUERIES]

    claim = tool_call("lithos_task_claim", {"task_id": task_id, "aspect": "a-@ID@", "agent": "w"})
    write = tool_call(
        "lithos_write", {"agent": "wrk", "title": "load @ID@", "content": "Load note. " * 40}
    )
    fulltext = search("fulltext")
    mixed = []  # per 10 calls: 5 reads, 3 full-text searches, 2 claims
    for i in range(20):
        mixed += reads[5 * i % 50 : 5 * i % 50 + 5] + fulltext[3 * i % 20 : 3 * i % 20 + 3]
        mixed += [claim, claim]
    return {
        "ping (no tool)": [json.dumps({"jsonrpc": "2.0", "id": "@ID@", "method": "ping"})],
        "floor (bench_noop)": [tool_call("bench_noop", {})],
        "read": reads,
        "list": [tool_call("lithos_list", {"limit": 50})],
        "tags": [tool_call("lithos_tags", {})],
        "stats": [tool_call("lithos_stats", {})],
        "search_fulltext": fulltext,
        "search_semantic": search("semantic"),
        "search_hybrid": search("hybrid"),
        "task_claim": [claim],
        "write_create": [write],
        "mixed": mixed,
    }


def run_wrk(
    server: Server, session: Session, lines: list[str], connections: int, seconds: float
) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as handle:
        handle.write("\n".join(lines) + "\n")
        bodies = handle.name
    # wrk takes whole seconds ("3.0s" is refused).
    command = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--timeout", "60s"]
    command += ["-s", str(LUA), server.url, "--", session.id, bodies, session.version]
    cpu_before, started = server.cpu_seconds(), time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=True)
    finally:
        os.unlink(bodies)
    wall, cpu = time.perf_counter() - started, server.cpu_seconds() - cpu_before
    found = RESULT.search(done.stdout)
    if found is None:
        raise RuntimeError(f"wrk printed no result:\n{done.stdout}\n{done.stderr}")
    responses, errors, socket_errors, p50_us, p99_us = map(int, found.groups())
    samples = [line for line in done.stdout.splitlines() if line.startswith("LITHOS_SAMPLE")]
    return {
        "calls": responses,
        "calls_per_s": round(responses / wall, 1),
        "errors": errors + socket_errors,
        "server_cpu_ms_per_call": round(1000 * cpu / responses, 3) if responses else None,
        "server_cpu_share": round(cpu / wall, 2),  # cores busy on average
        "p50_ms": round(p50_us / 1000, 2),
        "p99_ms": round(p99_us / 1000, 2),
        "error_samples": samples[:3],
    }


def build(pages: list[corpus.Page], data_dir: Path, embed_timeout: float) -> dict[str, Any]:
    """Files, indexes and (cached or fresh) vectors for ``pages`` in ``data_dir``."""
    corpus.copy_into(pages, data_dir / "knowledge")
    cache.seed(data_dir)
    overrides = {"search.embedding_threads": 2, "search.embedding_batch_size": 32}
    app = LithosApp(load_config(data_dir, overrides=overrides)).open()
    try:
        app.start(watch=False)
        deadline = time.perf_counter() + embed_timeout
        while not app.embedding.wait_idle(60) and time.perf_counter() < deadline:
            counts = app.vectors.counts()
            log(f"embedding {counts.embedded_chunks}/{counts.chunks} chunks")
            cache.save(data_dir)
        counts = app.vectors.counts()
    finally:
        app.close()
    cache.save(data_dir)
    return {"chunks": counts.chunks, "pending_chunks": counts.pending_chunks}


def measure_mode(
    data_dir: Path, json_response: bool, args: argparse.Namespace
) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    with Server(data_dir, floor=True, json_response=json_response) as server:
        session = Session(server.url).open()
        listed = session.call("lithos_list", {"limit": 1000})
        ids = [item["id"] for item in listed["items"]]
        task = session.call("lithos_task_create", {"title": "load", "agent": "w"})
        for name, lines in scenarios(ids, task["task_id"]).items():
            connections = args.mixed_connections if name == "mixed" else args.connections
            seconds = args.mixed_seconds if name == "mixed" else args.seconds
            run_wrk(server, session, lines, connections, 1)  # warm-up, not counted
            results[name] = run_wrk(server, session, lines, connections, seconds)
            log(f"{'json' if json_response else 'sse'} {name}: {results[name]}")
        session.close()
        floor = results["floor (bench_noop)"]["server_cpu_ms_per_call"]
        for result in results.values():
            cost = result["server_cpu_ms_per_call"]
            result["x_floor"] = round(cost / floor, 2) if cost and floor else None
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 notes, 2 s runs")
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=5, help="per-tool run length")
    parser.add_argument("--connections", type=int, default=4, help="per-tool wrk connections")
    parser.add_argument("--mixed-seconds", type=float, default=15)
    parser.add_argument("--mixed-connections", type=int, default=16)
    parser.add_argument("--embed-timeout", type=float, default=4 * 3600)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        print(
            "bench/load.py needs the wrk load generator: run bench/setup.sh "
            "(apt-get install wrk) or `make bench`, which runs it",
            file=sys.stderr,
        )
        return 2
    if args.quick:
        args.notes, args.seconds, args.mixed_seconds = 200, 2, 3
    result: dict[str, Any] = {"notes": args.notes, "load_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="lithos-load-") as tmp:
        pages = corpus.unpack(Path(tmp) / "corpus")[: args.notes]
        data_dir = Path(tmp) / "data"
        log(f"{args.notes} notes: indexing and embedding")
        result["index"] = build(pages, data_dir, args.embed_timeout)
        result["modes"] = {}
        for mode in ("sse", "json"):
            result["modes"][mode] = measure_mode(data_dir, mode == "json", args)
    result["load_after"] = os.getloadavg()
    result["targets"] = {"near_floor": list(NEAR_FLOOR), "floor_ratio": FLOOR_RATIO}
    result["targets"]["mixed_calls_per_s"] = MIXED_TARGET
    name = "load-quick" if args.quick else "load"
    path = machine.write_result(args.out, name, result)
    log(f"wrote {path}")
    errors = sum(r["errors"] for mode in result["modes"].values() for r in mode.values())
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
