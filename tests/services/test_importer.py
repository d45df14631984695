"""Importing a folder of Markdown: copies kept byte for byte with nothing added, searchable at
once, nothing overwritten, the source never touched; a folder inside the knowledge directory
is indexed where it is."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lithos.app import LithosApp
from lithos.domain.notes import content_hash, new_id
from lithos.errors import InvalidInput
from tests.support import make_app

WITH_ID = "---\nid: {id}\ntitle: Kept\ntags: [a, b]   # a person's comment\n---\nkept quokka\n"


@pytest.fixture
def app(data_dir: Path) -> Iterator[LithosApp]:
    lithos = make_app(data_dir)
    try:
        yield lithos
    finally:
        lithos.close()


@pytest.fixture
def source(tmp_path: Path) -> Path:
    folder = tmp_path / "vault"
    (folder / "sub").mkdir(parents=True)
    return folder


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def found(app: LithosApp, word: str) -> set[str]:
    return {hit.path for hit in app.fulltext.search(word, limit=50)}


def test_imported_files_keep_their_bytes_and_are_searchable_at_once(app: LithosApp, source: Path):
    note_id = new_id()
    (source / "kept.md").write_text(WITH_ID.format(id=note_id))
    (source / "sub" / "plain.md").write_bytes(b"# Plain\r\n\r\nplain quokka\r\n")
    (source / "notes.txt").write_text("not markdown")
    before = snapshot(source)
    report = app.importer.import_folder(source, into="vault")
    assert (report.files, report.imported, report.skipped, report.in_place) == (2, 2, [], False)
    assert snapshot(source) == before
    assert found(app, "quokka") == {"vault/kept.md", "vault/sub/plain.md"}
    copied = snapshot(app.files.root / "vault")
    assert copied == {k: v for k, v in before.items() if k.endswith(".md")}  # nothing added
    assert app.catalog.get(note_id) is not None  # the file's own id is its id
    plain_id = app.identities.lookup("vault/sub/plain.md")  # a file without one gets one
    assert plain_id is not None and app.catalog.by_path("vault/sub/plain.md").id == plain_id  # type: ignore[union-attr]
    assert app.vectors.counts().pending_chunks > 0  # embedding is left to the server


def test_a_copy_is_indexed_as_a_later_check_reads_it(app: LithosApp, source: Path):
    # The importer indexes the text it holds instead of reading the copy back: it must read
    # it as the indexer does (universal newlines), or every later check finds the copy
    # changed and indexes it again.
    (source / "crlf.md").write_bytes(b"# Windows\r\n\r\nquokka line\r\nold mac\rline\r\n")
    assert app.importer.import_folder(source).imported == 1
    assert (app.files.root / "crlf.md").read_bytes().count(b"\r\n") == 4  # bytes kept
    entry = app.catalog.by_path("crlf.md")
    assert entry is not None
    assert entry.content_hash == content_hash(app.files.read_text("crlf.md"))
    report = app.reconcile()  # reads and hashes every file
    assert (report.unchanged, report.catalog_fixed, report.fulltext_fixed) == (1, 0, 0)


def test_an_existing_note_is_never_overwritten(app: LithosApp, source: Path):
    (app.files.root / "taken.md").write_text("# Mine\n\noriginal text\n")
    (source / "taken.md").write_text("# Theirs\n\nimported text\n")
    (source / "free.md").write_text("# Free\n\nimported text\n")
    report = app.importer.import_folder(source)
    assert report.imported == 1
    assert [(s.path, s.reason) for s in report.skipped] == [("taken.md", "exists")]
    assert (app.files.root / "taken.md").read_text() == "# Mine\n\noriginal text\n"
    assert found(app, "imported") == {"free.md"}


def test_duplicate_ids_and_broken_frontmatter_are_skipped_and_reported(
    app: LithosApp, source: Path
):
    note_id = new_id()
    (source / "a.md").write_text(WITH_ID.format(id=note_id))
    (source / "b.md").write_text(WITH_ID.format(id=note_id))
    (source / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    (source / "latin1.md").write_bytes("caf\xe9\n".encode("latin-1"))
    report = app.importer.import_folder(source)
    assert report.imported == 1
    assert sorted((s.path, s.reason) for s in report.skipped) == [
        ("b.md", "duplicate_id"),
        ("broken.md", "frontmatter"),
        ("latin1.md", "unreadable"),
    ]
    assert sorted(p.name for p in app.files.root.rglob("*.md")) == ["a.md"]


def test_a_file_with_an_invalid_id_key_is_copied_as_it_is(app: LithosApp, source: Path):
    text = "---\nid: 42\ntitle: Odd\n---\nbody\n"
    (source / "odd.md").write_text(text)
    report = app.importer.import_folder(source)
    assert report.imported == 1
    assert (app.files.root / "odd.md").read_text() == text
    assert app.catalog.by_path("odd.md").id == app.identities.lookup("odd.md")  # type: ignore[union-attr]


def test_a_folder_inside_the_knowledge_directory_is_indexed_in_place(app: LithosApp):
    inner = app.files.root / "inner"
    inner.mkdir()
    (inner / "here.md").write_text("# Here\n\nwallaby\n")
    (inner / "bad.md").write_text("---\ntitle: [unclosed\n---\n")
    before = snapshot(inner)
    report = app.importer.import_folder(inner)
    assert (report.in_place, report.files, report.imported) == (True, 2, 1)
    assert [(s.path, s.reason) for s in report.skipped] == [("inner/bad.md", "frontmatter")]
    assert found(app, "wallaby") == {"inner/here.md"} and snapshot(inner) == before
    with pytest.raises(InvalidInput):
        app.importer.import_folder(inner, into="elsewhere")


def test_a_missing_folder_is_invalid_input(app: LithosApp, tmp_path: Path):
    with pytest.raises(InvalidInput):
        app.importer.import_folder(tmp_path / "nowhere")


def test_the_first_start_after_an_import_reads_only_the_files_edited_since(
    data_dir: Path, source: Path
):
    for i in range(12):
        front = f"---\ntitle: Note {i}\nsupports: ['[[note 00]]']\n---\n" if i % 3 == 0 else ""
        (source / f"note {i:02}.md").write_text(f"{front}# Note {i}\n\nword{i} quokka\n")
    app = make_app(data_dir)
    try:
        assert app.importer.import_folder(source).imported == 12
    finally:
        app.close()
    edited = data_dir / "knowledge" / "note 05.md"
    edited.write_text("# Note 5\n\nedited by hand: wombat\n")  # another size and time
    again = make_app(data_dir)
    try:
        report = again.start(watch=False, embed=False)
        assert report is not None
        assert (report.unchanged, report.catalog_fixed, report.fulltext_fixed) == (11, 1, 1)
        assert again.files.reads == 1  # the edited file, by the check; nothing else read
        assert found(again, "wombat") == {"note 05.md"} and found(again, "word5") == set()
        assert len(found(again, "quokka")) == 11
    finally:
        again.close()
