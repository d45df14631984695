"""Note metadata in frontmatter: defaults, validation, round trips, people's values kept."""

from __future__ import annotations

import pytest

from lithos.domain.metadata import MetadataChange, NoteMetadata, apply_change, default_namespace
from lithos.domain.notes import parse_note, render_note, split_frontmatter
from lithos.domain.scope import Scope, is_visible
from lithos.errors import InvalidInput

ID = "5f0c8b9e-0000-4000-8000-000000000001"
OTHER = "5f0c8b9e-0000-4000-8000-000000000002"


def note_text(extra: str = "") -> str:
    return f"---\nid: {ID}\ntitle: T\nauthor: a\n{extra}---\n\nBody.\n"


def test_a_note_without_metadata_reads_with_defaults_and_writes_none_of_them():
    note = parse_note(note_text(), "ops/runbooks/t.md")
    assert (note.note_type, note.access_scope, note.status) == ("observation", "shared", "active")
    assert note.namespace == "ops/runbooks" and note.metadata.schema_version == 1
    meta, _ = split_frontmatter(render_note(note))
    assert not {"note_type", "namespace", "access_scope", "status", "schema_version"} & set(meta)


def test_a_note_at_the_root_is_in_the_default_namespace():
    assert default_namespace("t.md") == "default"
    assert parse_note(note_text(), "t.md").namespace == "default"


def test_every_field_round_trips_through_the_file():
    fields = (
        "note_type: concept\nnamespace: project/lithos\naccess_scope: task\ntask_id: t-1\n"
        "status: archived\nschema_version: 2\nentities: [Lithos, Tantivy]\n"
        "summaries: {short: s, long: l}\nsource_url: https://example.org/x\n"
        f"derived_from_ids: ['{OTHER}']\nexpires_at: '2027-01-31T00:00:00Z'\n"
    )
    note = parse_note(note_text(fields), "x/t.md")
    again = parse_note(render_note(note), "x/t.md")
    assert again.metadata == note.metadata
    m = again.metadata
    assert (m.note_type, again.namespace, m.access_scope, m.task_id) == (
        "concept",
        "project/lithos",
        "task",
        "t-1",
    )
    assert m.entities == ("Lithos", "Tantivy") and m.summaries.long == "l"
    assert m.derived_from_ids == (OTHER,) and m.expires_at == "2027-01-31T00:00:00.000000Z"


def test_a_declared_default_is_kept_in_the_file():
    note = parse_note(note_text("note_type: observation\n"), "t.md")
    meta, _ = split_frontmatter(render_note(note))
    assert meta["note_type"] == "observation"


def test_an_invalid_value_in_a_file_is_kept_verbatim_and_reads_as_the_default():
    note = parse_note(note_text("note_type: idea\nstatus: 7\n"), "t.md")
    assert note.note_type == "observation" and note.status == "active"
    meta, _ = split_frontmatter(render_note(note))
    assert meta["note_type"] == "idea" and meta["status"] == 7


def test_an_unknown_access_scope_fails_closed_to_agent_private():
    note = parse_note(note_text("access_scope: user_private\n"), "t.md")
    assert note.access_scope == "agent_private"
    meta, _ = split_frontmatter(render_note(note))
    assert meta["access_scope"] == "user_private"


@pytest.mark.parametrize(
    "change",
    [
        MetadataChange(note_type="idea"),
        MetadataChange(access_scope="public"),
        MetadataChange(status="deleted"),
        MetadataChange(schema_version=0),
        MetadataChange(source_url="not a url"),
        MetadataChange(derived_from_ids=["nope"]),
        MetadataChange(expires_at="next tuesday"),
        MetadataChange(namespace="/"),
        MetadataChange(summaries={"medium": "x"}),
        MetadataChange(access_scope="task"),
    ],
)
def test_invalid_changes_are_invalid_input(change: MetadataChange):
    with pytest.raises(InvalidInput):
        apply_change(NoteMetadata(), change)


def test_an_empty_string_clears_a_field_and_its_declaration():
    meta = apply_change(NoteMetadata(), MetadataChange(namespace="a/b", source_url="https://x"))
    assert meta.namespace_for("c/n.md") == "a/b" and "namespace" in meta.declared
    cleared = apply_change(meta, MetadataChange(namespace="", source_url=""))
    assert cleared.namespace_for("c/n.md") == "c" and cleared.source_url is None
    assert "namespace" not in cleared.declared


def visible(scope_value: str, author: str = "a", task: str | None = None, status: str = "active"):
    fields = f"access_scope: {scope_value}\nstatus: {status}\n"
    if task:
        fields += f"task_id: {task}\n"
    text = note_text(fields).replace("author: a", f"author: {author}")
    return lambda scope: is_visible(parse_note(text, "t.md"), scope)


def test_agent_private_notes_are_visible_to_their_author_only():
    check = visible("agent_private", author="alice")
    assert check(Scope(agent_id="alice")) and not check(Scope(agent_id="bob"))
    assert not check(Scope())


def test_task_notes_are_visible_only_with_their_task_id():
    check = visible("task", task="t-1")
    assert check(Scope(task_id="t-1")) and not check(Scope(task_id="t-2"))
    assert not check(Scope(agent_id="a"))


def test_quarantined_notes_are_never_visible_archived_ones_are():
    assert not visible("shared", status="quarantined")(Scope(agent_id="a"))
    assert visible("shared", status="archived")(Scope())
    assert visible("project")(Scope())
