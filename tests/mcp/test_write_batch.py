"""lithos_write_batch through a real in-memory MCP client: one outcome per note, each note
checked whole, searchable by full text when the call returns."""

from __future__ import annotations

from fastmcp import Client

from lithos.app import LithosApp
from tests.support import call

UNKNOWN = "00000000-0000-4000-8000-000000000000"


async def batch(client: Client, notes: list[dict]) -> dict:
    return await call(client, "lithos_write_batch", agent="ingester", notes=notes)


def found(app: LithosApp, word: str) -> set[str]:
    return {hit.id for hit in app.fulltext.search(word, limit=50)}


async def test_a_batch_creates_every_note_searchable_when_it_returns(
    client: Client, app: LithosApp
):
    notes = [
        {"title": f"Tapir {i}", "content": f"tapir fact {i}", "tags": ["zoo"]} for i in range(5)
    ]
    result = await batch(client, notes)
    assert (result["created"], result["updated"], result["failed"]) == (5, 0, 0)
    assert [item["index"] for item in result["results"]] == [0, 1, 2, 3, 4]
    assert found(app, "tapir") == {item["id"] for item in result["results"]}
    for item in result["results"]:
        assert item["indexing"] == "done"
        assert (app.files.root / item["path"]).is_file()
        assert app.catalog.get(item["id"]).author == "ingester"  # type: ignore[union-attr]


async def test_a_batch_takes_one_fulltext_commit(client: Client, app: LithosApp):
    commits = app.fulltext.commits
    await batch(client, [{"title": f"Okapi {i}", "content": "okapi"} for i in range(10)])
    assert len(app.fulltext.search("okapi")) == 10  # searchable before the commit
    app.indexer.commit_staged()  # what the committer does within commit_interval_ms
    assert app.fulltext.commits == commits + 1


async def test_a_bad_item_fails_alone_and_writes_nothing(client: Client, app: LithosApp):
    result = await batch(
        client,
        [
            {"title": "Good one", "content": "ibex"},
            {"title": "No content"},
            {"title": "Escapes", "content": "ibex", "path": "../outside"},
            {"id": UNKNOWN, "content": "ibex"},
            {"title": "Task note", "content": "ibex", "access_scope": "task"},
            {"title": "Good two", "content": "ibex"},
        ],
    )
    statuses = [(item["status"], item.get("code")) for item in result["results"]]
    assert statuses == [
        ("created", None),
        ("error", "invalid_input"),
        ("error", "invalid_path"),
        ("error", "doc_not_found"),
        ("error", "invalid_input"),
        ("created", None),
    ]
    assert result["failed"] == 4
    assert all(item["message"] for item in result["results"] if item["status"] == "error")
    assert sorted(p.name for p in app.files.root.rglob("*.md")) == ["Good one.md", "Good two.md"]
    assert len(found(app, "ibex")) == 2


async def test_a_batch_writes_metadata_fields_as_lithos_write_does(client: Client, app: LithosApp):
    result = await batch(
        client,
        [
            {
                "title": "Scoped",
                "content": "numbat",
                "note_type": "concept",
                "namespace": "project/zoo",
                "summaries": {"short": "numbats"},
            }
        ],
    )
    read = await call(client, "lithos_read", id=result["results"][0]["id"])
    meta = read["metadata"]
    assert (meta["note_type"], meta["namespace"]) == ("concept", "project/zoo")
    assert meta["summaries"] == {"short": "numbats"}


async def test_a_batch_updates_notes_and_refuses_a_stale_version(client: Client, app: LithosApp):
    note = await call(client, "lithos_write", agent="a", title="Lemur", content="v1")
    result = await batch(
        client,
        [
            {"id": note["id"], "content": "lemur v2", "expected_version": note["version"]},
            {"id": note["id"], "content": "lemur v3", "expected_version": note["version"]},
        ],
    )
    first, second = result["results"]
    assert first["status"] == "updated" and first["version"] != note["version"]
    assert (second["status"], second["code"]) == ("error", "version_conflict")
    assert "lemur v2" in (app.files.root / note["path"]).read_text()
    assert found(app, "v2") == {note["id"]}


async def test_titles_taken_in_one_batch_get_their_own_files(client: Client, app: LithosApp):
    result = await batch(
        client, [{"title": "Same", "content": "a"}, {"title": "same", "content": "b"}]
    )
    first, second = result["results"]
    assert (first["path"], second["path"]) == ("Same.md", "same 2.md")
    assert "warnings" not in first and "same.md already exists" in second["warnings"][0]


async def test_a_batch_of_only_failures_records_no_agent(client: Client, app: LithosApp):
    result = await batch(client, [{"id": UNKNOWN, "content": "x"}])
    assert result["failed"] == 1
    agents = await call(client, "lithos_agent_list")
    assert "ingester" not in {agent["id"] for agent in agents["agents"]}


async def test_a_malformed_item_refuses_the_whole_call(client: Client, app: LithosApp):
    result = await batch(
        client, [{"title": "Fine", "content": "x"}, {"title": "Odd", "colour": "red"}]
    )
    assert (result["status"], result["code"]) == ("error", "invalid_input")
    assert list(app.files.root.rglob("*.md")) == []


async def test_an_empty_batch_is_invalid_input(client: Client, app: LithosApp):
    result = await call(client, "lithos_write_batch", agent="a", notes=[])
    assert result["code"] == "invalid_input"
