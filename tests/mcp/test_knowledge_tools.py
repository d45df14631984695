"""lithos_write / read / delete / list through a real in-memory MCP client."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.domain.notes import split_frontmatter
from tests.support import call


async def write(client: Client, **args: object) -> dict:
    args.setdefault("agent", "agent-a")
    return await call(client, "lithos_write", **args)


async def test_write_creates_a_markdown_file_with_spec_frontmatter(client: Client, app: LithosApp):
    result = await write(
        client, title="Python asyncio patterns", content="Use gather.", tags=["python"]
    )
    assert result["status"] == "created"
    assert result["path"] == "Python asyncio patterns.md"
    text = (app.files.root / result["path"]).read_text()
    meta, body = split_frontmatter(text)
    assert list(meta)[:5] == ["id", "title", "created_at", "updated_at", "author"]
    assert meta["id"] == result["id"] and meta["author"] == "agent-a"
    assert meta["tags"] == ["python"] and meta["confidence"] == 1.0
    assert body.strip() == "Use gather."


async def test_write_into_subdirectory_uses_the_path(client: Client, app: LithosApp):
    result = await write(client, title="Deploy", content="x", path="procedures/ops")
    assert result["path"] == "procedures/ops/Deploy.md"
    assert (app.files.root / "procedures/ops/Deploy.md").is_file()


async def test_same_title_twice_keeps_both_notes_and_says_so(client: Client, app: LithosApp):
    first = await write(client, title="Same title", content="first")
    second = await write(client, title="Same title", content="second")
    assert first["path"] == "Same title.md"
    assert second["path"] == "Same title 2.md"
    assert "warnings" in second and "Same title.md" in second["warnings"][0]
    assert (await call(client, "lithos_read", id=first["id"]))["content"].strip() == "first"
    assert (await call(client, "lithos_read", id=second["id"]))["content"].strip() == "second"


async def test_concurrent_creates_of_one_title_never_drop_a_note(client: Client, app: LithosApp):
    results = await asyncio.gather(
        *(write(client, title="Race", content=f"body {i}") for i in range(12))
    )
    paths = {r["path"] for r in results}
    assert len(paths) == 12
    listed = await call(client, "lithos_list", limit=100)
    assert listed["total"] == 12


async def test_update_is_partial_and_adds_the_agent_to_contributors(client: Client, app: LithosApp):
    created = await write(client, title="T", content="body", tags=["a"], confidence=0.5)
    updated = await write(client, id=created["id"], agent="agent-b", content="new body")
    assert updated["status"] == "updated" and updated["version"] != created["version"]
    note = await call(client, "lithos_read", id=created["id"])
    assert note["title"] == "T" and note["content"].strip() == "new body"
    assert note["metadata"]["tags"] == ["a"] and note["metadata"]["confidence"] == 0.5
    assert note["metadata"]["author"] == "agent-a"
    assert note["metadata"]["contributors"] == ["agent-b"]
    assert note["metadata"]["updated_at"] > note["metadata"]["created_at"]


async def test_author_never_becomes_a_contributor_and_contributors_do_not_repeat(client: Client):
    created = await write(client, title="T", content="1")
    await write(client, id=created["id"], content="2")
    await write(client, id=created["id"], agent="b", content="3")
    await write(client, id=created["id"], agent="b", content="4")
    note = await call(client, "lithos_read", id=created["id"])
    assert note["metadata"]["contributors"] == ["b"]


async def test_update_keeps_frontmatter_keys_written_by_people(client: Client, app: LithosApp):
    created = await write(client, title="T", content="body")
    file = app.files.root / created["path"]
    file.write_text(file.read_text().replace("author:", "reviewed_by: alice\nauthor:"))
    await write(client, id=created["id"], agent="b", content="changed")
    meta, _ = split_frontmatter(file.read_text())
    assert meta["reviewed_by"] == "alice"


async def test_expected_version_turns_an_update_into_compare_and_swap(client: Client):
    created = await write(client, title="T", content="v1")
    ok = await write(client, id=created["id"], content="v2", expected_version=created["version"])
    assert ok["status"] == "updated"
    stale = await write(client, id=created["id"], content="v3", expected_version=created["version"])
    assert stale["status"] == "error" and stale["code"] == "version_conflict"
    assert (await call(client, "lithos_read", id=created["id"]))["content"].strip() == "v2"


async def test_concurrent_writers_to_one_note_with_versions_exactly_one_wins(client: Client):
    created = await write(client, title="T", content="v0")
    results = await asyncio.gather(
        *(
            write(
                client,
                id=created["id"],
                agent=f"w{i}",
                content=f"v{i}",
                expected_version=created["version"],
            )
            for i in range(8)
        )
    )
    winners = [r for r in results if r.get("status") == "updated"]
    conflicts = [r for r in results if r.get("code") == "version_conflict"]
    assert len(winners) == 1 and len(conflicts) == 7


async def test_concurrent_unversioned_writers_to_one_note_leave_a_whole_note(
    client: Client, app: LithosApp
):
    created = await write(client, title="T", content="v0")
    await asyncio.gather(
        *(write(client, id=created["id"], agent=f"w{i}", content=f"content {i}") for i in range(10))
    )
    note = await call(client, "lithos_read", id=created["id"])
    assert note["content"].strip() in {f"content {i}" for i in range(10)}
    assert sorted(note["metadata"]["contributors"]) == sorted(f"w{i}" for i in range(10))
    assert len(list(app.files.root.glob("*.md"))) == 1


async def test_read_by_path_and_truncation_at_a_sentence(client: Client):
    content = "First sentence here. Second sentence is longer than the limit allows."
    created = await write(client, title="Trunc", content=content)
    note = await call(client, "lithos_read", path=created["path"], max_length=30)
    assert note["id"] == created["id"]
    assert note["truncated"] is True and note["content"] == "First sentence here."
    whole = await call(client, "lithos_read", path="Trunc", max_length=1000)
    assert whole["truncated"] is False


async def test_truncation_prefers_a_paragraph_boundary(client: Client):
    content = "Para one is here.\n\nPara two. More text that goes on and on."
    created = await write(client, title="P", content=content)
    note = await call(client, "lithos_read", id=created["id"], max_length=40)
    assert note["content"] == "Para one is here."


async def test_delete_removes_the_file_and_every_trace(client: Client, app: LithosApp):
    created = await write(client, title="Gone soon", content="unique zebra words", tags=["t"])
    assert (await call(client, "lithos_delete", id=created["id"], agent="a"))["success"] is True
    assert not (app.files.root / created["path"]).exists()
    assert (await call(client, "lithos_read", id=created["id"]))["code"] == "doc_not_found"
    assert (await call(client, "lithos_list"))["total"] == 0
    assert (await call(client, "lithos_search", query="zebra"))["results"] == []
    assert (await call(client, "lithos_tags"))["tags"] == {}
    stats = await call(client, "lithos_stats")
    assert stats["documents"] == 0 and stats["indexes"]["fulltext_documents"] == 0
    assert stats["indexes"]["vector_documents"] == 0


async def test_delete_of_unknown_id_is_doc_not_found(client: Client):
    result = await call(client, "lithos_delete", id="00000000-0000-4000-8000-000000000000")
    assert result == {"status": "error", "code": "doc_not_found", "message": result["message"]}


async def test_list_filters_and_pages_newest_first(client: Client):
    ids = []
    for i in range(5):
        r = await write(
            client,
            title=f"N{i}",
            content="x",
            tags=["all", f"t{i % 2}"],
            path="a" if i < 3 else "b",
            agent="x" if i else "y",
        )
        ids.append(r["id"])
    page1 = await call(client, "lithos_list", limit=2, offset=0)
    page2 = await call(client, "lithos_list", limit=2, offset=2)
    page3 = await call(client, "lithos_list", limit=2, offset=4)
    order = [i["id"] for p in (page1, page2, page3) for i in p["items"]]
    assert order == list(reversed(ids)) and page1["total"] == 5
    assert (await call(client, "lithos_list", tags=["all", "t0"]))["total"] == 3
    assert (await call(client, "lithos_list", path_prefix="b"))["total"] == 2
    assert (await call(client, "lithos_list", author="y"))["total"] == 1
    future = await call(client, "lithos_list", since="2999-01-01")
    assert future["total"] == 0


async def test_list_does_not_read_note_files(client: Client, app: LithosApp, monkeypatch):
    await write(client, title="A", content="x")
    monkeypatch.setattr(app.files, "read_text", lambda *_: pytest.fail("list read a file"))
    assert (await call(client, "lithos_list"))["total"] == 1


BAD_WRITES = [
    ({"title": "x", "content": "y", "path": "../outside"}, "invalid_path"),
    ({"title": "x", "content": "y", "path": "/etc"}, "invalid_path"),
    ({"title": "x", "content": "y", "path": "a/../../b"}, "invalid_path"),
    ({"title": "x", "content": "y", "path": "notes/file.md"}, "invalid_path"),
    ({"title": "x", "content": "y", "path": ".hidden"}, "invalid_path"),
    ({"title": "x", "content": "y", "path": "a\x00b"}, "invalid_path"),
    ({"title": "   ", "content": "y"}, "invalid_input"),
    ({"title": "", "content": "y"}, "invalid_input"),
    ({"title": "x", "content": "y", "confidence": 1.5}, "invalid_input"),
    ({"title": "x", "content": "y", "confidence": -0.1}, "invalid_input"),
    ({"title": "x", "content": "y" * 1_000_001}, "content_too_large"),
    ({"id": "not-a-uuid", "content": "y"}, "invalid_input"),
    ({"id": "00000000-0000-4000-8000-000000000000", "content": "y"}, "doc_not_found"),
    ({"title": "only title"}, "invalid_input"),
    ({"title": "x", "content": "y", "agent": ""}, "invalid_input"),
]


@pytest.mark.parametrize(("args", "code"), BAD_WRITES)
async def test_bad_write_gets_an_error_envelope_and_writes_nothing(
    client: Client, app: LithosApp, tmp_path: Path, args: dict, code: str
):
    before = sorted(p for p in tmp_path.rglob("*") if p.is_file() and ".md" in p.name)
    result = await write(client, **args)
    assert result["status"] == "error" and result["code"] == code and result["message"]
    after = sorted(p for p in tmp_path.rglob("*") if p.is_file() and ".md" in p.name)
    assert after == before
    assert (await call(client, "lithos_stats"))["documents"] == 0


async def test_symlinked_directory_pointing_outside_is_refused(
    client: Client, app: LithosApp, tmp_path: Path
):
    outside = tmp_path / "outside"
    outside.mkdir()
    (app.files.root / "link").symlink_to(outside)
    result = await write(client, title="x", content="y", path="link")
    assert result["code"] == "invalid_path"
    assert list(outside.iterdir()) == []


async def test_read_needs_id_or_path_and_rejects_escaping_paths(client: Client):
    assert (await call(client, "lithos_read"))["code"] == "invalid_input"
    assert (await call(client, "lithos_read", path="../../etc/passwd"))["code"] == "invalid_path"
    assert (await call(client, "lithos_read", id="nope"))["code"] == "invalid_input"


async def test_read_by_path_finds_a_file_dropped_in_before_the_watcher_saw_it(
    client: Client, app: LithosApp
):
    (app.files.root / "fresh.md").write_text("# Fresh\n\nJust saved by a person.\n")
    note = await call(client, "lithos_read", path="fresh.md")
    assert note["title"] == "Fresh" and note["content"].endswith("Just saved by a person.\n")
    assert (await call(client, "lithos_list"))["total"] == 1


async def test_concurrent_writers_to_different_notes_all_land(client: Client, app: LithosApp):
    notes = [await write(client, title=f"Note {i}", content="v0") for i in range(10)]
    await asyncio.gather(
        *(
            write(client, id=n["id"], agent=f"w{i}", content=f"final {i}")
            for i, n in enumerate(notes)
        )
    )
    for i, n in enumerate(notes):
        read = await call(client, "lithos_read", id=n["id"])
        assert read["content"].strip() == f"final {i}"
        found = await call(client, "lithos_search", query=f'"final {i}"')
        assert [r["id"] for r in found["results"]] == [n["id"]]
