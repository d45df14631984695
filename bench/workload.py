"""What agents do to Lithos, timed through a real MCP client over streamable HTTP.

:func:`tool_latencies` times each frequent tool call on its own; :func:`concurrent_mix` runs N
agent sessions at once, each a bounded loop of reads, searches, writes and claims.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastmcp import Client

QUERIES = [
    "extract a tar archive",
    "list files recursively",
    "copy files over ssh",
    "set an environment variable",
    "compress a directory into a zip file",
    "find text in files",
    "undo the last git commit",
    "remove stopped docker containers",
    "change file permissions",
    "convert objects to json",
    "list running processes",
    "restart a windows service",
    "send an http request with headers",
    "schedule a recurring job",
    "read a registry key",
    "measure how long a command takes",
    "create a local user account",
    "disk usage of a directory",
    "kill a process by name",
    "download a file from a url",
]


class ToolError(RuntimeError):
    pass


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call ``tool``; raise :class:`ToolError` on an error envelope or an MCP error result."""
    result = await client.call_tool(tool, arguments, raise_on_error=False)
    data = result.structured_content or {}
    if result.is_error or data.get("status") == "error":
        raise ToolError(f"{tool}: {data or result.content}")
    return data


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def at(share: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 2)

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99), "n": len(ordered)}


async def tool_latencies(
    url: str, note_ids: list[str], calls: int, threshold: float | None = None
) -> dict[str, dict]:
    """p50/p95/p99 in ms of each tool over ``calls`` calls each, one session, sequential.
    ``threshold``, when given, is passed to semantic and hybrid searches (0.0 with synthetic
    vectors, whose similarities sit near 0, so semantic search returns notes to read)."""
    rng = random.Random(7)
    queries = itertools.cycle(QUERIES)
    cutoff = {} if threshold is None else {"threshold": threshold}
    async with Client(url) as client:
        task = await call(client, "lithos_task_create", {"title": "bench", "agent": "bench"})
        mine = await call(
            client, "lithos_write", {"agent": "bench", "title": "bench note", "content": "x"}
        )
        steps: dict[str, Callable[[int], Awaitable[Any]]] = {
            "write_create": lambda i: call(
                client,
                "lithos_write",
                {"agent": "bench", "title": f"bench {i}", "content": f"Note {i}. " * 40},
            ),
            "write_update": lambda i: call(
                client, "lithos_write", {"agent": "bench", "id": mine["id"], "content": f"v{i}"}
            ),
            "read": lambda i: call(client, "lithos_read", {"id": rng.choice(note_ids)}),
            "list": lambda i: call(client, "lithos_list", {"limit": 50}),
            "search_fulltext": lambda i: call(
                client, "lithos_search", {"query": next(queries), "mode": "fulltext"}
            ),
            "search_semantic": lambda i: call(
                client, "lithos_search", {"query": next(queries), "mode": "semantic", **cutoff}
            ),
            "search_hybrid": lambda i: call(
                client, "lithos_search", {"query": next(queries), "mode": "hybrid", **cutoff}
            ),
            "retrieve": lambda i: call(
                client, "lithos_retrieve", {"query": next(queries), "agent_id": "bench"}
            ),
            "links": lambda i: call(client, "lithos_links", {"id": rng.choice(note_ids)}),
            "tags": lambda i: call(client, "lithos_tags", {}),
            "stats": lambda i: call(client, "lithos_stats", {}),
            "task_create": lambda i: call(
                client, "lithos_task_create", {"title": f"task {i}", "agent": "bench"}
            ),
            "task_claim": lambda i: call(
                client,
                "lithos_task_claim",
                {"task_id": task["task_id"], "aspect": f"a{i}", "agent": "bench"},
            ),
            "task_release": lambda i: call(
                client,
                "lithos_task_release",
                {"task_id": task["task_id"], "aspect": f"a{i}", "agent": "bench"},
            ),
            "finding_post": lambda i: call(
                client,
                "lithos_finding_post",
                {"task_id": task["task_id"], "agent": "bench", "summary": f"finding {i}"},
            ),
        }
        results = {}
        for name, step in steps.items():
            await step(-1)  # warm-up (first semantic query loads nothing: model is warm)
            samples = []
            for i in range(calls):
                started = time.perf_counter()
                await step(i)
                samples.append(1000 * (time.perf_counter() - started))
            results[name] = percentiles(samples)
    return results


async def _session(
    url: str, agent: str, note_ids: list[str], go: asyncio.Event, calls: int, seconds: float
) -> tuple[int, int, list[str]]:
    """One agent: a loop of mixed calls, bounded by count and time. Returns (calls, errors)."""
    rng = random.Random(agent)
    done = errors = 0
    messages: list[str] = []
    async with Client(url, timeout=120) as client:
        task = await call(client, "lithos_task_create", {"title": agent, "agent": agent})
        await go.wait()
        deadline = time.perf_counter() + seconds
        for i in range(calls):
            if time.perf_counter() > deadline:
                break
            kind = i % 10
            try:
                if kind < 4:
                    await call(client, "lithos_read", {"id": rng.choice(note_ids)})
                elif kind < 7:
                    mode = ("fulltext", "fulltext", "hybrid")[kind - 4]
                    await call(
                        client, "lithos_search", {"query": rng.choice(QUERIES), "mode": mode}
                    )
                elif kind == 7:
                    args = {"agent": agent, "title": f"{agent} {i}", "content": f"Note {i} " * 30}
                    await call(client, "lithos_write", args)
                elif kind == 8:
                    claim = {"task_id": task["task_id"], "aspect": f"a{i}", "agent": agent}
                    await call(client, "lithos_task_claim", claim)
                    await call(client, "lithos_task_release", claim)
                    done += 1
                else:
                    await call(client, "lithos_list", {"limit": 20})
            except Exception as exc:  # every failure is counted and reported, never hidden
                errors += 1
                messages.append(f"{type(exc).__name__}: {exc}"[:300])
            done += 1
    return done, errors, messages


async def concurrent_mix(
    url: str, note_ids: list[str], sessions: int, calls: int, seconds: float
) -> dict[str, Any]:
    """``sessions`` agents at once; calls/s over the wall time of the mixed loops."""
    go = asyncio.Event()
    runs = [
        asyncio.create_task(_session(url, f"agent-{n}", note_ids, go, calls, seconds))
        for n in range(sessions)
    ]
    await asyncio.sleep(0.5 + 0.05 * sessions)  # let every session connect first
    started = time.perf_counter()
    go.set()
    outcomes = await asyncio.gather(*runs, return_exceptions=True)
    wall = time.perf_counter() - started
    total = errors = 0
    messages: list[str] = []
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            errors += 1
            messages.append(f"session failed: {outcome!r}"[:300])
            continue
        total += outcome[0]
        errors += outcome[1]
        messages += outcome[2]
    return {
        "sessions": sessions,
        "calls": total,
        "errors": errors,
        "seconds": round(wall, 2),
        "calls_per_s": round(total / wall, 1) if wall > 0 else 0.0,
        "error_samples": messages[:5],
    }
