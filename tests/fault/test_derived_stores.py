"""Every derived store damaged every way: Lithos starts, answers and agrees with the files.

The catalog (.index/), full-text index (.tantivy/) and vector store (.vectors/) are deleted,
truncated or filled with garbage (with and without a WAL beside it) while Lithos is stopped; the
coordination database is damaged too, which Lithos must refuse to replace.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
import tantivy
from fastmcp import Client

from lithos.app import AUTHORITATIVE, LithosApp
from lithos.cli.main import main
from lithos.mcp.server import create_server
from lithos.services.knowledge import WriteRequest
from tests.damage import (
    DAMAGES,
    Damage,
    block_next_deletes,
    damage_sqlite,
    damage_tantivy,
    make_tantivy_panic_on_open,
)
from tests.fakes import HashingEmbedder
from tests.support import call, make_app

pytestmark = pytest.mark.fault

NOTES = {f"Note {i}": f"body of note {i} about topic{i} and shared words" for i in range(6)}


def seeded(data_dir: Path) -> dict[str, str]:
    """A data directory with NOTES written and embedded; returns title -> id."""
    app = make_app(data_dir)
    app.start(watch=False)
    ids = {}
    for title, content in NOTES.items():
        result = asyncio.run(
            app.knowledge.write(WriteRequest(agent="a", title=title, content=content))
        )
        ids[title] = result["id"]
    assert app.embedding.wait_idle(timeout=30)
    app.close()
    return ids


def damage(data_dir: Path, store: str, how: Damage) -> None:
    if store == "catalog":
        damage_sqlite(data_dir / ".index" / "catalog.db", how)
    elif store == "vectors":
        damage_sqlite(data_dir / ".vectors" / "vectors.db", how)
    else:
        damage_tantivy(data_dir / ".tantivy", how)


def assert_agrees_with_files(app: LithosApp) -> None:
    on_disk = {info.path for info in app.files.scan()}
    catalog = {e.id: e.content_hash for e in app.catalog.entries()}
    assert {e.path for e in app.catalog.entries()} == on_disk
    assert app.fulltext.hashes() == catalog
    assert app.vectors.note_hashes() == catalog


def assert_rebuilt_at_start(data_dir: Path, ids: dict[str, str]) -> None:
    """A start over ``data_dir`` rebuilds what is damaged and then answers for every note."""
    app = make_app(data_dir)
    try:
        app.start(watch=False)
        assert app.stores.wait_rebuilt(timeout=30)
        assert_agrees_with_files(app)
        asyncio.run(assert_answers(app, ids))
    finally:
        app.close()


async def assert_answers(app: LithosApp, ids: dict[str, str]) -> None:
    async with Client(create_server(app)) as client:
        for title, note_id in ids.items():
            topic = NOTES[title].split()[5]
            found = await call(client, "lithos_search", query=topic)
            assert [hit["id"] for hit in found["results"]] == [note_id]
        stats = await call(client, "lithos_stats")
        assert stats["documents"] == len(ids)
        assert stats["indexes"]["fulltext_documents"] == len(ids)
        assert stats["indexes"]["vector_documents"] == len(ids)
        assert {s["state"] for s in stats["stores"].values()} == {"ok"}


@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.parametrize("store", ["catalog", "fulltext", "vectors"])
def test_a_damaged_derived_store_is_rebuilt_at_start(data_dir: Path, store: str, how: Damage):
    ids = seeded(data_dir)
    damage(data_dir, store, how)
    embedder = HashingEmbedder()
    app = make_app(data_dir, embedder=embedder)
    try:
        app.start(watch=False)
        assert app.stores.wait_rebuilt(timeout=30)  # full-text and vectors: in the background
        assert_agrees_with_files(app)
        asyncio.run(assert_answers(app, ids))
        assert app.embedding.wait_idle(timeout=30)
        if store != "vectors":  # the vector cache survives a broken catalog or full-text index
            assert embedder.embedded_texts == []
        status = app.store_states()[store]
        if how != "deleted" and "moved_to" in status:
            kept = data_dir / status["moved_to"]
            assert kept.is_dir() and str(data_dir) not in json.dumps(status)
    finally:
        app.close()


def test_a_broken_store_is_moved_aside_not_deleted(data_dir: Path):
    seeded(data_dir)
    damage_sqlite(data_dir / ".index" / "catalog.db", "garbage")
    garbage = (data_dir / ".index" / "catalog.db").read_bytes()
    app = make_app(data_dir)
    try:
        app.start(watch=False)
        status = app.store_states()["catalog"]
        assert status["state"] == "ok" and status["moved_to"].startswith(".index.broken-")
        assert (data_dir / status["moved_to"] / "catalog.db").read_bytes() == garbage
    finally:
        app.close()


def test_fulltext_left_mid_commit_by_a_kill_is_repaired_at_start(data_dir: Path):
    ids = seeded(data_dir)
    block_next_deletes(data_dir / ".tantivy")
    note = data_dir / "knowledge" / "Note 0.md"
    note.write_text(note.read_text().replace("topic0", "zeppelin"))  # reconcile must commit
    app = make_app(data_dir)
    try:
        app.start(watch=False)
        assert [h.id for h in app.fulltext.search("zeppelin")] == [ids["Note 0"]]
        assert_agrees_with_files(app)
    finally:
        app.close()


def test_a_full_text_index_of_an_older_format_is_rebuilt_at_start(data_dir: Path):
    """An index whose schema is not today's (an older Lithos: no id_key fast field) cannot
    open; it is moved aside and rebuilt from the notes without a person."""
    ids = seeded(data_dir)
    shutil.rmtree(data_dir / ".tantivy")
    (data_dir / ".tantivy").mkdir()
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("content", stored=True, tokenizer_name="en_stem")
    older = tantivy.Index(builder.build(), path=str(data_dir / ".tantivy"))
    writer = older.writer(15_000_000, 1)
    writer.add_document(tantivy.Document(id="x", content="older"))
    writer.commit()
    writer.wait_merging_threads()
    assert_rebuilt_at_start(data_dir, ids)


def test_a_tantivy_panic_at_start_is_repaired(data_dir: Path):
    ids = seeded(data_dir)
    assert make_tantivy_panic_on_open(data_dir / ".tantivy")
    assert_rebuilt_at_start(data_dir, ids)


@pytest.mark.parametrize("clear", [False, True])
@pytest.mark.parametrize("store", ["catalog", "fulltext", "vectors"])
def test_reindex_recovers_a_damaged_store(
    data_dir: Path, store: str, clear: bool, monkeypatch, capsys
):
    monkeypatch.setattr("lithos.app.create_embedder", lambda *a, **k: HashingEmbedder())
    seeded(data_dir)
    damage(data_dir, store, "garbage")
    args = ["--data-dir", str(data_dir), "reindex", *(["--clear"] if clear else [])]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["files"] == len(NOTES) and report["problems"] == []
    app = make_app(data_dir)
    try:
        app.start(watch=False)
        assert app.last_reconcile is not None and app.last_reconcile.unchanged == len(NOTES)
        assert_agrees_with_files(app)
    finally:
        app.close()


def test_reindex_recovers_fulltext_left_mid_commit(data_dir: Path, monkeypatch, capsys):
    monkeypatch.setattr("lithos.app.create_embedder", lambda *a, **k: HashingEmbedder())
    seeded(data_dir)
    block_next_deletes(data_dir / ".tantivy")
    assert main(["--data-dir", str(data_dir), "reindex", "--clear"]) == 0
    assert json.loads(capsys.readouterr().out)["fulltext_fixed"] == len(NOTES)


@pytest.mark.parametrize("how", ["truncated", "garbage", "garbage_with_wal"])
@pytest.mark.parametrize("name", ["coordination.db", "identities.db", "edges.db", "stats.db"])
def test_a_damaged_authoritative_database_stops_start_up_and_is_kept(
    data_dir: Path, name: str, how: Damage, monkeypatch, capsys
):
    monkeypatch.setattr("lithos.app.create_embedder", lambda *a, **k: HashingEmbedder())
    seeded(data_dir)
    database = data_dir / ".lithos" / name
    damage_sqlite(database, how)
    before = database.read_bytes()
    assert main(["--data-dir", str(data_dir), "reindex"]) == 2
    error = capsys.readouterr().err
    assert "state_corrupt" in error and f"restore .lithos/{name} from a backup" in error
    assert "Traceback" not in error and str(data_dir) not in error
    assert database.read_bytes() == before
    assert not list(data_dir.glob(".lithos.broken-*"))
    assert main(["--data-dir", str(data_dir), "doctor", "--json"]) != 0
    checks = {check["name"]: check for check in json.loads(capsys.readouterr().out)}
    assert checks["state"]["status"] == "fail" and "backup" in checks["state"]["fix"]


def test_every_database_under_dot_lithos_is_an_authoritative_store_in_health(data_dir: Path):
    app = make_app(data_dir)
    try:
        app.start(watch=False, embed=False)
        on_disk = {path.stem for path in (data_dir / ".lithos").glob("*.db")}
        assert on_disk == set(AUTHORITATIVE)
        assert on_disk <= set(app.health()["stores"])
    finally:
        app.close()
