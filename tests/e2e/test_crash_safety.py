"""A write that returned success survives a kill -9 right after it, and nothing is torn."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import httpx2 as httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from lithos.domain.notes import parse_note
from tests.support import call, make_app

pytestmark = pytest.mark.e2e

WRITER = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from lithos.services.knowledge import WriteRequest
    from tests.support import make_app

    app = make_app(Path(sys.argv[1]))
    app.start(watch=False)
    note_id = None
    for i in range(100_000):
        body = f"revision {i} " + "x" * (i % 5000)
        if i % 3 == 0 or note_id is None:
            request = WriteRequest(agent="w", title=f"Note {i % 7}", content=body)
        else:
            request = WriteRequest(agent="w", id=note_id, content=body)
        result = asyncio.run(app.knowledge.write(request))
        note_id = result["id"]
        print(json.dumps({"id": note_id, "path": result["path"], "body": body}), flush=True)
    """
)


def spawn(script: str, data_dir: Path) -> subprocess.Popen[str]:
    """Run ``script`` on ``data_dir`` in a Python subprocess whose stdout is piped."""
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-c", script, str(data_dir)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, cwd=root, text=True)


def test_acknowledged_writes_survive_sigkill(data_dir: Path):
    process = spawn(WRITER, data_dir)
    acknowledged: dict[str, dict[str, str]] = {}
    last = None
    assert process.stdout is not None
    for line in process.stdout:
        record = json.loads(line)
        acknowledged[record["id"]] = record
        last = record["id"]
        if len(acknowledged) >= 12:
            break
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)

    knowledge = data_dir / "knowledge"
    for record in acknowledged.values():
        note = parse_note((knowledge / record["path"]).read_text(), record["path"])
        assert note.id == record["id"]
        if note.id == last:  # a later, unacknowledged write may have landed whole
            assert note.content.startswith("revision ")
        else:
            assert note.content.rstrip("\n") == record["body"]
    for path in knowledge.rglob("*.md"):
        if not path.name.startswith("."):  # a temporary file of the killed write may remain
            parse_note(path.read_text(), path.name)

    app = make_app(data_dir)
    report = app.start(watch=False)
    catalog = {e.id: e.content_hash for e in app.catalog.entries()}
    assert set(acknowledged) <= set(catalog)
    assert app.fulltext.hashes() == catalog and app.vectors.note_hashes() == catalog
    assert report.problems == []
    assert [p.name for p in knowledge.rglob(".*")] == []  # leftover temporary files cleaned
    app.close()


UNCOMMITTED_WRITER = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from lithos.services.knowledge import WriteRequest
    from tests.support import make_app

    # The committer waits a minute: every write below is acknowledged before its commit.
    app = make_app(Path(sys.argv[1]), **{"index.commit_interval_ms": 60_000})
    app.start(watch=False, embed=False)
    notes = []
    for i in range(6):
        if i == 4:  # update the first note: its committed copy is older
            request = WriteRequest(agent="w", id=notes[0], content=f"rewritten{i}")
        else:
            request = WriteRequest(agent="w", title=f"Fresh {i}", content=f"token{i} words")
        result = asyncio.run(app.knowledge.write(request))
        notes.append(result["id"])
        if i == 0:
            app.indexer.commit_staged()  # one committed note for the updates to replace
        word = f"rewritten{i}" if i == 4 else f"token{i}"
        found = [hit.id for hit in app.fulltext.search(word)]
        print(json.dumps({"id": result["id"], "word": word, "found": found}), flush=True)
    print(json.dumps({"uncommitted": app.fulltext.uncommitted()}), flush=True)
    sys.stdin.read()  # wait to be killed
    """
)


def test_writes_acknowledged_before_their_full_text_commit_survive_sigkill(data_dir: Path):
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-c", UNCOMMITTED_WRITER, str(data_dir)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stdin=subprocess.PIPE, cwd=root, text=True
    )
    assert process.stdout is not None
    records = [json.loads(process.stdout.readline()) for _ in range(7)]
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    writes, tail = records[:6], records[6]
    assert tail["uncommitted"] == 5  # all but the first write were never committed
    for record in writes:  # searchable the moment each write returned
        assert record["found"] == [record["id"]]

    app = make_app(data_dir)
    try:
        app.start(watch=False, embed=False)
        for record in writes:
            if record["word"] == "token0":  # rewritten since
                assert app.fulltext.search("token0") == []
            else:
                assert [hit.id for hit in app.fulltext.search(record["word"])] == [record["id"]]
        catalog = {e.id: e.content_hash for e in app.catalog.entries()}
        assert app.fulltext.hashes() == catalog and len(catalog) == 5
        assert app.catalog.deferred() == {}  # every mark re-indexed and cleared
    finally:
        app.close()


# -- kill -9 of `lithos serve` during concurrent writes over HTTP ------------------------------

ENV = {**os.environ, "FASTMCP_CHECK_FOR_UPDATES": "off", "RUST_BACKTRACE": "0"}
WRITERS = 8


def start_server(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``lithos serve`` over HTTP on a free port, once ``/health`` answers 200."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "lithos.cli.main", "--data-dir", str(data_dir), "serve"),
            *("--transport", "http", "--port", str(port), "--no-watch"),
        ],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return process, base
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            _, stderr = process.communicate(timeout=10)
            raise AssertionError(f"lithos did not start:\n{stderr.decode()[-3000:]}")
        time.sleep(0.05)  # polling the health endpoint of a starting process


async def write_until_killed(base: str, writer: int, acknowledged: dict[str, dict[str, str]]):
    """Create and update notes until the server dies; records each acknowledged write, and
    as ``in_flight`` the update of that note the kill may have interrupted (it may have
    landed whole)."""
    mine: list[str] = []
    try:
        async with Client(StreamableHttpTransport(f"{base}/mcp")) as client:
            for i in range(100_000):
                token = f"w{writer}x{uuid.uuid4().hex[:12]}"
                if mine and i % 3 == 2:
                    note_id = mine[i % len(mine)]
                    arguments = {"id": note_id, "content": f"update {token}"}
                    acknowledged[note_id]["in_flight"] = token
                else:
                    arguments = {"title": f"Writer {writer} note {i}", "content": f"new {token}"}
                result = await call(client, "lithos_write", agent=f"writer-{writer}", **arguments)
                assert result["status"] in ("created", "updated"), result
                if result["status"] == "created":
                    mine.append(result["id"])
                acknowledged[result["id"]] = {"path": result["path"], "token": token}
    except Exception:  # the server was killed under this writer: expected
        return


async def kill_during_writes(data_dir: Path, rng: random.Random) -> dict[str, dict[str, str]]:
    process, base = start_server(data_dir)
    acknowledged: dict[str, dict[str, str]] = {}
    writers = [
        asyncio.create_task(write_until_killed(base, w, acknowledged)) for w in range(WRITERS)
    ]
    target = rng.randint(5, 60)  # kill after a random number of acknowledged writes
    deadline = time.monotonic() + 120
    while len(acknowledged) < target and time.monotonic() < deadline:
        await asyncio.sleep(0.005)  # yield to the writers until enough writes are acknowledged
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    await asyncio.gather(*writers)
    assert len(acknowledged) >= target
    return acknowledged


async def verify(data_dir: Path, acknowledged: dict[str, dict[str, str]]) -> None:
    process, base = start_server(data_dir)
    try:
        knowledge = data_dir / "knowledge"
        files = [p for p in knowledge.rglob("*.md") if not p.name.startswith(".")]
        async with Client(StreamableHttpTransport(f"{base}/mcp")) as client:
            for note_id, record in acknowledged.items():
                text = (knowledge / record["path"]).read_text()
                note = parse_note(text, record["path"])
                token = note.content.split()[-1]
                assert note.id == note_id and token in (record["token"], record.get("in_flight"))
                found = await call(client, "lithos_search", query=token)
                assert [hit["id"] for hit in found["results"]] == [note_id]
            stats = await call(client, "lithos_stats")
        assert stats["documents"] == len(files)
        assert stats["indexes"]["fulltext_documents"] == len(files)
        assert stats["indexes"]["vector_documents"] == len(files)
        assert all(store["state"] == "ok" for store in stats["stores"].values())
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.fault
async def test_acknowledged_http_writes_survive_repeated_sigkill(data_dir: Path, request):
    """Kill -9 the server at random points under 8 concurrent HTTP writers, restart it, and
    find every acknowledged write on disk, in search and in the counts. Quick form: 2 cycles;
    ``pytest --fault-full``: 15."""
    cycles = 15 if request.config.getoption("--fault-full") else 2
    rng = random.Random(request.node.nodeid)
    every: dict[str, dict[str, str]] = {}
    for _ in range(cycles):
        acknowledged = await kill_during_writes(data_dir, rng)
        every.update(acknowledged)  # a later write of the same note replaces the record
        await verify(data_dir, every)


BATCH_WRITER = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from lithos.services.knowledge import WriteRequest
    from tests.support import make_app

    app = make_app(Path(sys.argv[1]))
    app.start(watch=False)
    for b in range(100_000):
        bodies = [f"batch {b} note {i} " + "y" * (i * 97 % 3000) for i in range(20)]
        requests = [
            WriteRequest(agent="w", title=f"B{b} {i}", content=t) for i, t in enumerate(bodies)
        ]
        outcomes = asyncio.run(app.knowledge.write_batch("w", requests))
        for outcome, body in zip(outcomes, bodies):
            print(json.dumps({"id": outcome.id, "path": outcome.path, "body": body}), flush=True)
    """
)


def test_acknowledged_batch_writes_survive_sigkill(data_dir: Path):
    process = spawn(BATCH_WRITER, data_dir)
    acknowledged = []
    assert process.stdout is not None
    for line in process.stdout:
        acknowledged.append(json.loads(line))
        if len(acknowledged) >= 100:
            break
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)

    knowledge = data_dir / "knowledge"
    for record in acknowledged:
        note = parse_note((knowledge / record["path"]).read_text(), record["path"])
        assert (note.id, note.content.rstrip("\n")) == (record["id"], record["body"])
    app = make_app(data_dir)
    report = app.start(watch=False)
    catalog = {e.id: e.content_hash for e in app.catalog.entries()}
    assert {r["id"] for r in acknowledged} <= set(catalog)
    assert app.fulltext.hashes() == catalog and app.vectors.note_hashes() == catalog
    assert report.problems == []
    app.close()


IMPORTER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import lithos.services.importer as importer
    from tests.support import make_app

    importer.BATCH = 10  # many batches: the kill lands between two of them, or inside one
    app = make_app(Path(sys.argv[1]))
    source = Path(sys.argv[1]).parent / "vault"
    report = app.importer.import_folder(
        source, "imported", lambda done, total: print(done, flush=True)
    )
    """
)


def test_notes_an_import_reported_done_survive_sigkill(data_dir: Path):
    source = data_dir.parent / "vault"
    for folder in ("a", "b"):
        (source / folder).mkdir(parents=True)
    texts = {}
    for i in range(300):
        relative = f"{'ab'[i % 2]}/note {i:03}.md"
        front = f"---\ntitle: Note {i}\ntags: [t{i % 5}]\n---\n" if i % 3 == 0 else ""
        texts[relative] = f"{front}# Note {i}\n\nword{i} and [[note {i + 1:03}]] #inline{i % 4}\n"
        (source / relative).write_text(texts[relative])
    process = spawn(IMPORTER, data_dir)
    done = 0
    assert process.stdout is not None
    for line in process.stdout:
        done = int(line)
        if done >= 60:
            break
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)

    knowledge = data_dir / "knowledge" / "imported"
    reported = sorted(texts)[:done]  # the importer copies in name order
    for relative in reported:
        assert (knowledge / relative).read_text() == texts[relative]
    app = make_app(data_dir)
    report = app.start(watch=False)
    catalog = {e.path: e.content_hash for e in app.catalog.entries()}
    assert {f"imported/{relative}" for relative in reported} <= set(catalog)
    by_id = {e.id: e.content_hash for e in app.catalog.entries()}
    assert app.fulltext.hashes() == by_id and app.vectors.note_hashes() == by_id
    assert report.problems == []
    assert [p.name for p in knowledge.rglob(".*")] == []  # leftover temporary files cleaned
    hits = app.fulltext.search("word10")  # a/note 010.md, among the first reported
    assert [hit.path for hit in hits] == ["imported/a/note 010.md"]
    app.close()
