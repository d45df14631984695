"""After a rename, a move or a folder move, made while Lithos was stopped or while it runs,
every index shows the note at its new path: catalog, full-text (results and path filter),
semantic results, the link graph, and reads by path."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from lithos.app import LithosApp
from lithos.errors import DocNotFound
from tests.services.test_watcher import eventually
from tests.support import make_app, note_file

TARGET = "00000000-0000-4000-8000-00000000000a"
LINKER = "00000000-0000-4000-8000-00000000000b"


def seed(knowledge: Path) -> None:
    """A note about quokkas in projects/alpha/ with an alias, and a note linking to it."""
    (knowledge / "projects" / "alpha").mkdir(parents=True)  # creates knowledge/ too
    target = {"id": TARGET, "title": "Quokka habits", "aliases": ["Marsupial Note"]}
    (knowledge / "projects/alpha/quokka.md").write_text(note_file(target, "quokka burrows\n"))
    linker = {"id": LINKER, "title": "Index"}
    (knowledge / "index.md").write_text(note_file(linker, "see [[Marsupial Note]]\n"))


def misplaced(app: LithosApp, path: str, old: str) -> str:
    """Which index does not place the target note at ``path`` (and nowhere at ``old``);
    "" when every index agrees."""
    entry = app.catalog.get(TARGET)
    if entry is None or entry.path != path:
        return f"catalog: {entry.path if entry else None}"
    hits = {h.id: h.path for h in app.fulltext.search("quokka", limit=10)}
    if hits != {TARGET: path}:
        return f"full-text: {hits}"
    folder = path.rpartition("/")[0]
    if folder and [h.id for h in app.fulltext.search("quokka", path_prefix=folder)] != [TARGET]:
        return f"full-text filter on {folder}"
    old_folder = old.rpartition("/")[0]
    moved_away = old_folder and not path.startswith(old_folder + "/")
    if moved_away and app.fulltext.search("quokka", path_prefix=old_folder):
        return f"full-text filter on the old {old_folder}"
    for mode in ("semantic", "hybrid"):
        found = asyncio.run(app.search.search("quokka burrows", mode=mode, limit=5))
        paths = {r["id"]: r["path"] for r in found["results"]}
        if paths.get(TARGET) != path:
            return f"{mode}: {paths}"
    outgoing = app.graph.links(LINKER, "outgoing")["outgoing"]
    if [(n["id"], n["path"]) for n in outgoing] != [(TARGET, path)]:
        return f"link graph: {outgoing}"
    if asyncio.run(app.knowledge.read(path=path))["id"] != TARGET:
        return "read by the new path"
    try:
        asyncio.run(app.knowledge.read(path=old))
    except DocNotFound:
        return ""
    return "read by the old path still answers"


def settles(app: LithosApp, path: str, old: str) -> None:
    assert eventually(lambda: misplaced(app, path, old) == ""), misplaced(app, path, old)


def seeded(data_dir: Path, watch: bool) -> LithosApp:
    """A started app over the seeded knowledge base, every index settled."""
    seed(data_dir / "knowledge")
    app = make_app(data_dir)
    app.start(watch=watch)
    settles(app, "projects/alpha/quokka.md", "x/none.md")
    return app


@pytest.fixture
def stopped(data_dir: Path) -> Path:
    """A knowledge base indexed once and stopped; returns its knowledge directory."""
    seeded(data_dir, watch=False).close()
    return data_dir / "knowledge"


MOVES_WHILE_STOPPED = {
    "rename": ("projects/alpha/quokka.md", "projects/alpha/marsupial.md"),
    "move to another folder": ("projects/alpha/quokka.md", "archive/quokka.md"),
    "move to the root": ("projects/alpha/quokka.md", "quokka.md"),
    "folder move": ("projects/alpha", "projects/beta"),
    "parent folder move": ("projects", "work"),
}


@pytest.mark.parametrize(("source", "dest"), MOVES_WHILE_STOPPED.values(), ids=MOVES_WHILE_STOPPED)
def test_a_move_made_while_stopped_shows_everywhere_after_start(
    stopped: Path, data_dir: Path, source: str, dest: str
):
    (stopped / dest).parent.mkdir(parents=True, exist_ok=True)
    shutil.move(stopped / source, stopped / dest)
    new = str((Path(dest) / "quokka.md") if not dest.endswith(".md") else Path(dest))
    if source == "projects":
        new = "work/alpha/quokka.md"
    app = make_app(data_dir)
    try:
        app.start(watch=False)
        settles(app, new, "projects/alpha/quokka.md")
    finally:
        app.close()


@pytest.fixture
def running(data_dir: Path) -> Iterator[LithosApp]:
    app = seeded(data_dir, watch=True)
    try:
        yield app
    finally:
        app.close()


def test_a_file_renamed_while_running_shows_everywhere(running: LithosApp):
    root = running.files.root
    (root / "projects/alpha/quokka.md").rename(root / "projects/alpha/marsupial.md")
    settles(running, "projects/alpha/marsupial.md", "projects/alpha/quokka.md")


def test_a_folder_moved_while_running_shows_everywhere(running: LithosApp):
    root = running.files.root
    (root / "projects/alpha").rename(root / "projects/beta")
    settles(running, "projects/beta/quokka.md", "projects/alpha/quokka.md")


def test_a_folder_moved_out_and_back_in_while_running_shows_everywhere(
    running: LithosApp, tmp_path: Path
):
    root = running.files.root
    outside = tmp_path / "outside"
    (root / "projects").rename(outside)
    assert eventually(lambda: running.catalog.get(TARGET) is None)
    outside.rename(root / "returned")
    settles(running, "returned/alpha/quokka.md", "projects/alpha/quokka.md")
