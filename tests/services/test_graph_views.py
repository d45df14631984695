"""The link graph's views of every note (note type, full-text key) stay in step with the
catalog through writes, a type change, a hand edit, a delete and a rebuild."""

from __future__ import annotations

import sqlite3

from fastmcp import Client

from lithos.app import LithosApp
from lithos.store.fulltext import id_key
from tests.support import call


def _catalog_types(app: LithosApp) -> dict[str, str]:
    with sqlite3.connect(app.config.storage.data_dir / ".index" / "catalog.db") as conn:
        return dict(conn.execute("SELECT id, note_type FROM notes").fetchall())


def _assert_in_step(app: LithosApp) -> None:
    types = _catalog_types(app)
    assert app.graph.note_types([*types, "missing"]) == types
    titles = app.graph.titles(types)
    assert app.graph.keyed([*(id_key(n) for n in types), 7]) == {
        id_key(n): (n, titles[n]) for n in types
    }


async def test_note_types_and_keys_follow_every_change(client: Client, app: LithosApp):
    a = await call(client, "lithos_write", agent="a", title="A", content="x", note_type="summary")
    b = await call(client, "lithos_write", agent="a", title="B", content="y")
    _assert_in_step(app)
    assert app.graph.note_types([a["id"], b["id"]]) == {
        a["id"]: "summary",
        b["id"]: "observation",
    }

    await call(
        client,
        "lithos_write",
        agent="a",
        id=b["id"],
        title="B",
        content="y",
        note_type="hypothesis",
    )
    assert app.graph.note_types([b["id"]]) == {b["id"]: "hypothesis"}
    _assert_in_step(app)

    file = app.config.knowledge_dir / "A.md"
    file.write_text(file.read_text().replace("summary", "agent_finding"), encoding="utf-8")
    app.indexer.sync_paths(["A.md"])
    assert app.graph.note_types([a["id"]]) == {a["id"]: "agent_finding"}
    _assert_in_step(app)

    await call(client, "lithos_delete", id=a["id"], agent="a")
    assert app.graph.note_types([a["id"]]) == {}
    assert app.graph.keyed([id_key(a["id"])]) == {}
    _assert_in_step(app)

    app.graph.reset()  # rebuilt from the catalog on the next read
    _assert_in_step(app)
