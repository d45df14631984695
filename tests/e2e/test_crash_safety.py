"""A write that returned success survives a kill -9 right after it, and nothing is torn."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lithos.domain.notes import parse_note
from tests.support import make_app

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


def test_acknowledged_writes_survive_sigkill(data_dir: Path):
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(data_dir)],
        stdout=subprocess.PIPE,
        cwd=root,
        text=True,
    )
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
