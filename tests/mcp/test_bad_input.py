"""The bad-input suite: every argument of every tool, generated from the tools' published
input schemas, with edge values the schema or Lithos's argument rules refuse.

Each call must answer with the error envelope (``invalid_input`` or ``invalid_path``), the
server must still answer afterwards, and nothing may change: not a knowledge file, not a row
of any SQLite database under ``.lithos/`` (coordination.db with the agent registry, and every
other authoritative store). A tool added later is covered without touching this file.
"""

from __future__ import annotations

import math
import sqlite3
import sys
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from lithos.app import LithosApp
from tests.e2e.server import running_server
from tests.e2e.test_transports import free_port
from tests.support import call

NUL = "a\x00b"
SURROGATE = "a\ud800b"
HUGE = 2**64
VALIDATION_CODES = {"invalid_input", "invalid_path"}


def snapshot(data_dir: Path) -> dict[str, Any]:
    """Every knowledge file's bytes and every row of every table of every database in
    ``.lithos/`` (coordination.db with the agent registry, and any other)."""
    knowledge = data_dir / "knowledge"
    state: dict[str, Any] = {
        "files": sorted(
            (p.relative_to(knowledge).as_posix(), p.read_bytes())
            for p in knowledge.rglob("*")
            if p.is_file()
        )
    }
    for db in sorted((data_dir / ".lithos").glob("*.db")):
        with sqlite3.connect(db) as conn:
            tables = [
                r[0]
                for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                if not r[0].startswith("sqlite_")
            ]
            for table in sorted(tables):
                rows = conn.execute(f"SELECT * FROM {table}").fetchall()
                state[f"{db.name}:{table}"] = sorted(rows, key=repr)
    return state


def baseline(name: str, schema: dict[str, Any], world: dict[str, str]) -> Any:
    """A value of the argument's schema that names things that exist, so that the edge value
    under test is the only thing wrong with a call."""
    known = {
        "id": world["note"],
        "note_id": world["note"],
        "task_id": world["task"],
        "agent": "suite-agent",
    }
    if name in known and jsonschema.Draft202012Validator(schema).is_valid(known[name]):
        return known[name]
    candidates = (*_enum_values(schema), "x", 1, 0.5, True, ["x"], {}, None)
    items = schema.get("items")
    one_item = [_object({**items, "$defs": schema.get("$defs", {})}, world)] if items else None
    for candidate in (*candidates, _object(schema, world), one_item):
        if jsonschema.Draft202012Validator(schema).is_valid(candidate):
            return candidate
    raise AssertionError(f"no baseline value for {name}: {schema}")


def _object(schema: dict[str, Any], world: dict[str, str]) -> dict[str, Any]:
    """An object with every required property of ``schema`` (a local ``$ref`` followed)."""
    target = schema
    ref = schema.get("$ref", "")
    if ref.startswith("#/$defs/"):
        target = schema.get("$defs", {}).get(ref.rpartition("/")[2], {})
    properties = target.get("properties", {})
    return {
        key: baseline(key, resolve(properties[key], schema), world)
        for key in target.get("required", [])
        if key in properties
    }


def edge_values(schema: dict[str, Any], surrogates: bool = True) -> Iterator[tuple[str, Any]]:
    """Edge values for one argument: those its schema refuses, plus text and numbers no
    Lithos argument accepts whatever its schema (NUL, lone surrogates, non-finite floats,
    integers beyond 64 bits)."""
    validator = jsonschema.Draft202012Validator(schema)
    text = _allows(schema, "string")
    candidates: list[tuple[str, Any]] = [
        ("empty", ""),
        ("blank", "   "),
        ("negative", -1),
        ("zero", 0),
        ("huge int", HUGE),
        ("negative huge int", -HUGE),
        ("fraction", 0.5),
        ("over 1", 1.5),
        ("wrong type: string", "not-a-number"),
        ("wrong type: int", 12345),
        ("wrong type: list", ["x"]),
        ("wrong type: object", {"x": 1}),
        ("wrong type: bool", True),
        ("null", None),
    ]
    max_length = _max_length(schema)
    if max_length is not None:
        candidates.append(("over-long", "x" * (max_length + 1)))
    for label, value in candidates:
        if not validator.is_valid(value):
            yield label, value
    if text:
        yield "NUL", NUL
        if surrogates:
            yield "lone surrogate", SURROGATE
    if _allows(schema, "array"):
        yield "NUL in a list", [NUL]
        if surrogates:
            yield "surrogate in a list", [SURROGATE]
    if _allows(schema, "object"):
        yield "NUL in an object", {"k": NUL}
        yield "NUL in a key", {NUL: "v"}
    if _allows(schema, "number") and not validator.is_valid(None):
        # JSON has no NaN or infinity: MCP clients send them as null, which is refused here.
        yield "NaN", math.nan
        yield "infinity", math.inf
        yield "minus infinity", -math.inf
    if _allows(schema, "integer") or _allows(schema, "number"):
        yield "beyond 64 bits", HUGE


def _enum_values(schema: dict[str, Any]) -> list[Any]:
    values = list(schema.get("enum", []))
    for key in ("anyOf", "oneOf"):
        for part in schema.get(key, []):
            values += _enum_values(part)
    return values


def _types(schema: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    kind = schema.get("type")
    if isinstance(kind, str):
        found.add(kind)
    elif isinstance(kind, list):
        found.update(kind)
    for key in ("anyOf", "oneOf", "allOf"):
        for part in schema.get(key, []):
            found |= _types(part)
    return found


def _allows(schema: dict[str, Any], kind: str) -> bool:
    return kind in _types(schema)


def _max_length(schema: dict[str, Any]) -> int | None:
    if "maxLength" in schema:
        return int(schema["maxLength"])
    for key in ("anyOf", "oneOf"):
        for part in schema.get(key, []):
            found = _max_length(part)
            if found is not None:
                return found
    return None


def resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """The schema with local ``$ref``s of the tool's input schema resolved, so that it can
    be validated on its own."""
    return {**schema, "$defs": root.get("$defs", {})} if "$defs" in root else schema


async def make_world(client: Client) -> dict[str, str]:
    note = await call(client, "lithos_write", agent="owner", title="Existing", content="body")
    task = await call(client, "lithos_task_create", agent="owner", title="Existing task")
    await call(client, "lithos_task_claim", task_id=task["task_id"], aspect="x", agent="owner")
    return {"note": note["id"], "task": task["task_id"]}


async def run_suite(
    client: Client, data_dir: Path, only: Collection[str] | None = None, wire: bool = False
) -> tuple[int, list[str]]:
    """Call every tool (or those in ``only``) with every edge value of every argument;
    return how many calls were made and what went wrong. Over a ``wire`` the client cannot
    encode lone surrogates, so those cases are left to the in-memory run."""
    world = await make_world(client)
    problems: list[str] = []
    calls = 0
    tools = [t for t in await client.list_tools() if only is None or t.name in only]
    for tool in tools:
        root = tool.input_schema
        properties: dict[str, Any] = root.get("properties", {})
        base = {
            name: baseline(name, resolve(prop, root), world)
            for name, prop in properties.items()
            if name in root.get("required", [])
        }
        before = snapshot(data_dir)
        for name, prop in properties.items():
            for label, value in edge_values(resolve(prop, root), surrogates=not wire):
                answer = await call(client, tool.name, **{**base, name: value})
                calls += 1
                if answer.get("status") != "error" or answer.get("code") not in VALIDATION_CODES:
                    problems.append(f"{tool.name}({name}={label}): {str(answer)[:200]}")
        if snapshot(data_dir) != before:
            problems.append(f"{tool.name}: a refused call changed the files or the databases")
        alive = await call(client, "lithos_stats")
        if "documents" not in alive:
            problems.append(f"after {tool.name}: the server no longer answers: {alive}")
    return calls, problems


async def test_every_argument_of_every_tool_refuses_edge_values_and_changes_nothing(
    client: Client, app: LithosApp
):
    calls, problems = await run_suite(client, app.config.data_dir)
    assert problems == [], "\n".join(problems)
    assert calls > 300  # every tool, every argument: a sign the schemas were really read


@pytest.mark.e2e
async def test_edge_values_over_real_http_change_nothing(tmp_path: Path):
    port = free_port()
    data = tmp_path / "data"
    command = [sys.executable, "-m", "lithos.cli.main", "--data-dir", str(data), "serve"]
    command += ["--transport", "http", "--port", str(port), "--no-watch"]
    base = f"http://127.0.0.1:{port}"
    with running_server(command, base, tmp_path / "server.log"):
        async with Client(StreamableHttpTransport(f"{base}/mcp"), timeout=60) as client:
            calls, problems = await run_suite(
                client,
                data,
                only={"lithos_write", "lithos_read", "lithos_list", "lithos_task_claim"},
                wire=True,
            )
            assert problems == [], "\n".join(problems)
            assert calls > 50
            assert (await call(client, "lithos_stats"))["documents"] == 1
