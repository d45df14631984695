"""Note metadata through lithos_write / lithos_read / lithos_list and the catalog."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.domain.notes import split_frontmatter
from lithos.store.catalog import Catalog, CatalogRecord
from tests.support import call, make_app, note_file

SOURCE = "5f0c8b9e-0000-4000-8000-0000000000aa"


async def write(client: Client, **args: object) -> dict:
    args.setdefault("agent", "agent-a")
    return await call(client, "lithos_write", **args)


async def test_write_stores_every_metadata_field_and_read_returns_it(
    client: Client, app: LithosApp
):
    created = await write(
        client,
        title="Backoff",
        content="Retry with jitter.",
        path="ops",
        note_type="agent_finding",
        namespace="project/lithos",
        access_scope="task",
        task_id="task-7",
        status="archived",
        schema_version=2,
        entities=["Lithos", "Tantivy"],
        summaries={"short": "jitter", "long": "Retry with exponential backoff and jitter."},
        source_url="https://example.org/backoff",
        derived_from_ids=[SOURCE],
        expires_at="2027-01-31T09:00:00+01:00",
    )
    assert created["status"] == "created"
    meta = (await call(client, "lithos_read", id=created["id"]))["metadata"]
    assert meta["note_type"] == "agent_finding" and meta["namespace"] == "project/lithos"
    assert (meta["access_scope"], meta["task_id"], meta["status"]) == ("task", "task-7", "archived")
    assert meta["schema_version"] == 2 and meta["entities"] == ["Lithos", "Tantivy"]
    assert meta["summaries"] == {
        "short": "jitter",
        "long": "Retry with exponential backoff and jitter.",
    }
    assert meta["source_url"] == "https://example.org/backoff"
    assert meta["derived_from_ids"] == [SOURCE]
    assert meta["expires_at"] == "2027-01-31T08:00:00.000000Z"
    front, _ = split_frontmatter((app.files.root / created["path"]).read_text())
    assert front["note_type"] == "agent_finding" and front["task_id"] == "task-7"


async def test_defaults_are_read_but_not_written(client: Client, app: LithosApp):
    created = await write(client, title="Plain", content="x", path="ops/runbooks")
    meta = (await call(client, "lithos_read", id=created["id"]))["metadata"]
    assert (meta["note_type"], meta["access_scope"], meta["status"]) == (
        "observation",
        "shared",
        "active",
    )
    assert meta["namespace"] == "ops/runbooks" and meta["entities"] == []
    front, _ = split_frontmatter((app.files.root / created["path"]).read_text())
    assert not {"note_type", "namespace", "access_scope", "status", "entities"} & set(front)


async def test_an_update_changes_only_the_given_metadata(client: Client):
    created = await write(client, title="N", content="x", note_type="hypothesis", entities=["A"])
    await write(client, id=created["id"], status="archived")
    meta = (await call(client, "lithos_read", id=created["id"]))["metadata"]
    assert (meta["note_type"], meta["status"], meta["entities"]) == (
        "hypothesis",
        "archived",
        ["A"],
    )


async def test_an_unset_namespace_follows_the_note_when_it_moves(client: Client):
    created = await write(client, title="Mover", content="x", path="a")
    await write(client, id=created["id"], path="b/c")
    meta = (await call(client, "lithos_read", id=created["id"]))["metadata"]
    assert meta["namespace"] == "b/c"


async def test_a_hand_written_note_keeps_unknown_keys_through_an_agent_update(
    client: Client, app: LithosApp
):
    text = note_file(
        {"title": "Hand", "author": "person", "project_code": "X1", "note_type": "idea"}, "Body"
    )
    (app.files.root / "hand.md").write_text(text)
    read = await call(client, "lithos_read", path="hand.md")
    assert read["metadata"]["note_type"] == "observation"  # an invalid value reads as default
    await write(client, id=read["id"], entities=["E"])
    front, _ = split_frontmatter((app.files.root / "hand.md").read_text())
    assert front["project_code"] == "X1" and front["note_type"] == "idea"
    assert front["entities"] == ["E"]


BAD_METADATA = [
    {"note_type": "idea"},
    {"access_scope": "public"},
    {"access_scope": "task"},
    {"status": "deleted"},
    {"schema_version": 0},
    {"source_url": "not a url"},
    {"derived_from_ids": ["not-a-uuid"]},
    {"expires_at": "next tuesday"},
    {"namespace": "//"},
    {"summaries": {"medium": "x"}},
    {"entities": [""]},
]


@pytest.mark.parametrize("args", BAD_METADATA)
async def test_invalid_metadata_is_invalid_input_and_writes_nothing(
    client: Client, app: LithosApp, args: dict
):
    result = await write(client, title="x", content="y", **args)
    assert result["status"] == "error" and result["code"] == "invalid_input", result
    assert list(app.files.root.rglob("*.md")) == []
    assert (await call(client, "lithos_stats"))["documents"] == 0


async def test_making_a_note_task_scoped_without_a_task_id_changes_nothing(
    client: Client, app: LithosApp
):
    created = await write(client, title="Keep", content="x")
    before = (app.files.root / created["path"]).read_text()
    result = await write(client, id=created["id"], access_scope="task")
    assert result["code"] == "invalid_input"
    assert (app.files.root / created["path"]).read_text() == before


async def test_the_catalog_holds_the_columns_retrieval_filters_on(client: Client, app: LithosApp):
    source = await write(client, title="Source", content="s")
    created = await write(
        client,
        title="Derived",
        content="d",
        note_type="summary",
        access_scope="agent_private",
        source_url="https://example.org/a",
        derived_from_ids=[source["id"]],
        expires_at="2027-01-01",
    )
    entry = app.catalog.get(created["id"])
    assert entry is not None
    assert (entry.note_type, entry.namespace, entry.access_scope, entry.status) == (
        "summary",
        "default",
        "agent_private",
        "active",
    )  # fmt: skip
    assert entry.source_url == "https://example.org/a"
    assert entry.expires_at == "2027-01-01T00:00:00.000000Z"
    assert app.catalog.derived_from([created["id"]]) == {created["id"]: [source["id"]]}
    assert app.catalog.derivatives([source["id"]]) == {source["id"]: [created["id"]]}


def test_an_older_catalog_is_migrated_and_refilled_from_the_files(data_dir: Path):
    # A catalog built before the metadata columns existed, holding a note whose file says
    # it is a concept: the migration adds the columns and the next start reads the file again.
    knowledge = data_dir / "knowledge"
    knowledge.mkdir(parents=True)
    text = note_file(
        {"id": SOURCE, "title": "Old", "author": "p", "note_type": "concept"}, "Old body"
    )
    (knowledge / "old.md").write_text(text)
    app = make_app(data_dir)
    app.start(watch=False)
    app.close()
    catalog_path = data_dir / ".index" / "catalog.db"
    conn = sqlite3.connect(catalog_path)
    conn.executescript(
        "DROP TABLE note_derived_from; DROP INDEX notes_namespace; DROP INDEX notes_hidden;"
        "DROP INDEX notes_source_url; DROP INDEX notes_restricted;"
        "DELETE FROM schema_migrations WHERE name IN ('0002_note_metadata', '0004_lookup_indexes');"
        + "".join(
            f"ALTER TABLE notes DROP COLUMN {column};"
            for column in (
                "note_type",
                "namespace",
                "access_scope",
                "task_id",
                "status",
                "source_url",
                "expires_at",
            )
        )
    )
    conn.close()
    app = make_app(data_dir)
    try:
        report = app.start(watch=False)
        entry = app.catalog.get(SOURCE)
        assert entry is not None and entry.note_type == "concept"
        assert report.catalog_fixed == 1 and report.fulltext_fixed == 0
        assert (knowledge / "old.md").read_text() == text  # the person's file is untouched
    finally:
        app.close()


def test_catalog_records_without_provenance_have_no_side_rows(tmp_path: Path):
    from lithos.domain.notes import parse_note

    catalog = Catalog(tmp_path / "c.db")
    try:
        note = parse_note(note_file({"id": SOURCE, "title": "T"}, "b"), "t.md")
        catalog.upsert([CatalogRecord(note, "h", 1, 1, [])])
        assert catalog.derived_from([SOURCE]) == {}
    finally:
        catalog.close()


async def test_list_shows_private_task_and_quarantined_notes_only_to_who_may_see_them(
    client: Client,
):
    await write(client, title="Shared", content="x")
    await write(client, title="Mine", content="x", agent="alice", access_scope="agent_private")
    await write(client, title="Task", content="x", access_scope="task", task_id="t-1")
    await write(client, title="Bad", content="x", status="quarantined")
    await write(client, title="Old", content="x", status="archived")

    async def titles(**args: object) -> set[str]:
        listed = await call(client, "lithos_list", **args)
        assert listed["total"] == len(listed["items"])
        return {item["title"] for item in listed["items"]}

    assert await titles() == {"Shared", "Old"}
    assert await titles(agent_id="bob") == {"Shared", "Old"}
    assert await titles(agent_id="alice") == {"Shared", "Old", "Mine"}
    assert await titles(task_id="t-1") == {"Shared", "Old", "Task"}
    assert await titles(agent_id="alice", task_id="t-2") == {"Shared", "Old", "Mine"}


async def test_list_filters_by_note_type_and_namespace(client: Client):
    await write(client, title="A", content="x", note_type="concept", namespace="proj/a")
    await write(client, title="B", content="x", note_type="summary", path="proj/b")
    await write(client, title="C", content="x")
    by_type = await call(client, "lithos_list", note_types=["concept", "summary"])
    assert {i["title"] for i in by_type["items"]} == {"A", "B"}
    by_namespace = await call(client, "lithos_list", namespaces=["proj/b", "default"])
    assert {i["title"] for i in by_namespace["items"]} == {"B", "C"}
