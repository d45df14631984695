"""Typed edges written in frontmatter by a person, kept in step with the files."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from lithos.app import LithosApp
from lithos.domain.edges import ConflictFilter, EdgeFilter, EdgeUpsert
from tests.support import make_app, note_file


def put(app: LithosApp, name: str, front: dict[str, Any], body: str = "text") -> str:
    """Write a hand-made note file and index it as the watcher would; returns its id."""
    front = {"id": front.get("id") or str(uuid.uuid4()), "title": name, **front}
    (app.files.root / f"{name}.md").write_text(note_file(front, body), encoding="utf-8")
    app.indexer.index_path(f"{name}.md")
    return str(front["id"])


def edges(app: LithosApp, **filters: Any) -> list[tuple[str, str, str, str]]:
    found = app.edge_store.find(EdgeFilter(**filters), app.clock())
    return sorted((e.from_id, e.to_id, e.type, e.provenance) for e in found)


async def test_a_declared_edge_becomes_a_human_edge(app: LithosApp):
    other = put(app, "Other note", {})
    source = put(app, "Claim", {"supports": ["[[Other note]]"]})
    assert edges(app) == [(source, other, "supports", "human")]
    [edge] = app.edge_store.find(EdgeFilter(), app.clock())
    assert edge.weight == app.config.lcma.edges.human_weight


async def test_unquoted_wiki_link_and_bare_names_are_accepted(app: LithosApp):
    x, y = put(app, "X", {}), put(app, "Y", {})
    text = f"---\nid: {uuid.uuid4()}\ncontradicts: [[X]]\nrefines: Y\n---\nbody\n"
    (app.files.root / "Z.md").write_text(text, encoding="utf-8")
    app.indexer.index_path("Z.md")
    found = {(to, kind) for _, to, kind, _ in edges(app)}
    assert found == {(x, "contradicts"), (y, "refines")}


async def test_the_persons_file_is_never_rewritten(app: LithosApp):
    other = put(app, "Other", {})
    claim = put(app, "Claim", {"supports": "[[Other]]", "namespace": "project/x"})
    before = (app.files.root / "Claim.md").read_bytes()
    app.edges.upsert_now(EdgeUpsert(claim, other, "supports", namespace="project/x"))
    app.indexer.reconcile()
    assert (app.files.root / "Claim.md").read_bytes() == before
    assert edges(app, namespace="project/x") == [(claim, other, "supports", "human")]


async def test_editing_the_declaration_moves_the_edge_with_it(app: LithosApp):
    a, b = put(app, "A", {}), put(app, "B", {})
    source = put(app, "S", {"supports": ["[[A]]"]})
    put(app, "S", {"id": source, "supports": ["[[B]]"], "contradicts": "[[A]]"})
    assert edges(app) == sorted(
        [(source, b, "supports", "human"), (source, a, "contradicts", "human")]
    )
    put(app, "S", {"id": source})
    assert edges(app) == []


async def test_a_declared_target_that_appears_later_gets_its_edge(app: LithosApp):
    source = put(app, "Early", {"depends_on": ["[[Later]]"]})
    assert edges(app) == []
    later = put(app, "Later", {})
    assert edges(app) == [(source, later, "depends_on", "human")]


async def test_a_declared_contradiction_opens_an_unreviewed_conflict(app: LithosApp):
    put(app, "Old", {})
    put(app, "New", {"contradicts": ["[[Old]]"]})
    [conflict] = app.edge_store.conflicts(ConflictFilter(), app.clock())
    assert conflict.state == "unreviewed" and conflict.edge.provenance == "human"


async def test_deleting_a_note_hides_every_edge_touching_it(app: LithosApp):
    target = put(app, "Target", {})
    source = put(app, "Source", {"supports": ["[[Target]]"]})
    third = put(app, "Third", {})
    app.edges.upsert_now(EdgeUpsert(third, target, "related_to"))
    await app.knowledge.delete(target)
    assert edges(app) == []
    assert edges(app, from_id=source) == []


async def test_a_note_back_under_the_same_id_gets_its_learned_edges_back(app: LithosApp):
    a, b = put(app, "A", {}), put(app, "B", {})
    app.edges.upsert_now(EdgeUpsert(a, b, "analogy_to", weight=0.7))
    text = (app.files.root / "A.md").read_text()
    (app.files.root / "A.md").unlink()
    app.indexer.forget_path("A.md")  # a rename seen as delete-then-create
    assert edges(app) == []
    (app.files.root / "A-renamed.md").write_text(text)
    app.indexer.index_path("A-renamed.md")
    assert edges(app) == [(a, b, "analogy_to", "agent")]


def test_declarations_edited_while_stopped_are_picked_up_at_start(data_dir: Path):
    app = make_app(data_dir)
    app.start(watch=False)
    target = put(app, "Target", {})
    source = put(app, "Source", {"supports": ["[[Target]]"]})
    dropped = put(app, "Dropped", {"supports": ["[[Target]]"]})
    app.close()
    path = data_dir / "knowledge" / "Source.md"
    path.write_text(note_file({"id": source, "refines": "[[Target]]"}, "edited offline"))
    (data_dir / "knowledge" / "Target2.md").write_text(note_file({"supports": "[[Source]]"}, "x"))
    dropped_path = data_dir / "knowledge" / "Dropped.md"
    dropped_path.write_text(note_file({"id": dropped, "title": "Dropped"}, "declares nothing now"))
    again = make_app(data_dir)
    projected: list[str] = []
    sync = again.edge_store.sync_declared

    def counted(source_id: str, desired: Any, now: Any) -> tuple[int, int]:
        projected.append(source_id)
        return sync(source_id, desired, now)

    again.edge_store.sync_declared = counted  # type: ignore[method-assign]
    again.start(watch=False)
    try:
        found = {(f, t, k) for f, t, k, _ in edges(again)}
        new_id = next(f for f, t, k in found if t == source)
        assert found == {(source, target, "refines"), (new_id, source, "supports")}
        # The check at start projects each source once, repaired or not: not once when the
        # repaired file is told to the listeners and again when the check ends.
        assert sorted(projected) == sorted([source, new_id, dropped])
    finally:
        again.close()
