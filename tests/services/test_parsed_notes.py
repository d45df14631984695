"""ParsedNotes: repeated reads of the same text skip the frontmatter parse, and a read
always reflects the file as it is now."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from lithos.domain.frontmatter import FrontmatterError
from lithos.domain.notes import Note, content_hash, parse_note
from lithos.errors import DocNotFound
from lithos.services import parsed as parsed_module
from lithos.services.knowledge import WriteRequest
from lithos.services.parsed import ParsedNotes
from lithos.store.markdown import KnowledgeFiles
from tests.support import call

TEXT = "---\ntitle: A\ntags: [red]\nmood: calm\n---\n\nBody.\n"
STAMP = "2026-01-01T00:00:00Z"


def parsed(memo: ParsedNotes, text: str, path: str, fallback_time: str | None) -> Note:
    return memo.parse(text, content_hash(text), path, fallback_time)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts parse_note really parsed."""
    texts: list[str] = []

    def counting(text: str, path: str, fallback_time: str | None = None):
        texts.append(text)
        return parse_note(text, path, fallback_time)

    monkeypatch.setattr(parsed_module, "parse_note", counting)
    return texts


def test_the_same_text_is_parsed_once_and_gives_the_same_note(counted: list[str]) -> None:
    memo = ParsedNotes()
    first = parsed(memo, TEXT, "a.md", STAMP)
    assert parsed(memo, TEXT, "a.md", STAMP) == first == parse_note(TEXT, "a.md", STAMP)
    assert len(counted) == 1


def test_another_text_path_or_creation_time_is_parsed_again(counted: list[str]) -> None:
    memo = ParsedNotes()
    parsed(memo, TEXT, "a.md", STAMP)
    edited = parsed(memo, TEXT.replace("red", "blue"), "a.md", STAMP)
    moved = parsed(memo, TEXT, "b.md", STAMP)
    assert (edited.tags, moved.path) == (("blue",), "b.md")
    assert parsed(memo, TEXT, "a.md", "2026-02-02T00:00:00Z").path == "a.md"
    assert len(counted) == 4


def test_the_least_recently_read_note_is_dropped_first(counted: list[str]) -> None:
    memo = ParsedNotes(size=2)
    texts = [TEXT.replace("A", name) for name in "XYZ"]
    parsed(memo, texts[0], "a.md", STAMP)
    parsed(memo, texts[1], "a.md", STAMP)
    parsed(memo, texts[0], "a.md", STAMP)  # X read again: Y is now the oldest
    parsed(memo, texts[2], "a.md", STAMP)
    parsed(memo, texts[0], "a.md", STAMP)
    assert counted == [texts[0], texts[1], texts[2]]
    parsed(memo, texts[1], "a.md", STAMP)
    assert counted[-1] == texts[1]


def test_a_broken_text_raises_every_time(counted: list[str]) -> None:
    memo = ParsedNotes()
    broken = "---\ntitle: [unclosed\n---\nbody\n"
    for _ in range(2):
        with pytest.raises(FrontmatterError):
            parsed(memo, broken, "a.md", STAMP)
    assert len(counted) == 2


def test_a_long_text_is_not_kept(counted: list[str]) -> None:
    memo = ParsedNotes()
    long_text = TEXT + "x" * parsed_module.KEPT_CHARS
    parsed(memo, long_text, "a.md", STAMP)
    parsed(memo, long_text, "a.md", STAMP)
    assert len(counted) == 2


async def test_a_read_after_a_hand_edit_shows_the_edit_before_the_watcher_sees_it(
    client, app
) -> None:
    written = await call(client, "lithos_write", agent="w", title="A", content="x", tags=["red"])
    first = await call(client, "lithos_read", id=written["id"])
    assert (await call(client, "lithos_read", id=written["id"])) == first
    path: Path = app.files.root / written["path"]
    path.write_text(path.read_text().replace("- red", "- blue").replace("\nx\n", "\ny\n"))
    edited = await call(client, "lithos_read", id=written["id"])
    assert edited["metadata"]["tags"] == ["blue"] and edited["content"].strip() == "y"
    assert edited["version"] != first["version"]


class CountingExecutor(ThreadPoolExecutor):
    """The event loop's default executor, counting the work handed to its threads."""

    submitted = 0

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


@pytest.fixture
async def handed_over() -> AsyncIterator[CountingExecutor]:
    executor = CountingExecutor(max_workers=2)
    asyncio.get_running_loop().set_default_executor(executor)
    yield executor
    executor.shutdown(wait=True)


async def write_linked_note(app) -> str:
    """The id of a new note linking to [[B]]."""
    request = WriteRequest(agent="w", title="A", content="See [[B]].\n\nMore.", tags=["red"])
    return (await app.knowledge.write(request))["id"]


async def test_a_note_read_again_is_answered_on_the_event_loop_with_the_same_result(
    app, handed_over: CountingExecutor
) -> None:
    note_id = await write_linked_note(app)
    first = await app.knowledge.read(note_id=note_id)
    cut = await app.knowledge.read(note_id=note_id, max_length=5)
    before = handed_over.submitted
    assert await app.knowledge.read(note_id=note_id) == first
    assert await app.knowledge.read(note_id=note_id, max_length=5) == cut
    assert handed_over.submitted == before  # neither went to a worker thread
    assert first["links"][0]["target"] == "B" and cut["truncated"]


async def test_a_read_the_link_graph_cannot_answer_at_once_goes_to_a_worker_thread(
    app, handed_over: CountingExecutor
) -> None:
    note_id = await write_linked_note(app)
    first = await app.knowledge.read(note_id=note_id)
    app.graph.reset()  # rebuilt from the catalog on its next use, off the event loop
    before = handed_over.submitted
    assert await app.knowledge.read(note_id=note_id) == first
    assert handed_over.submitted == before + 1


@contextmanager
def fifo_at(path: Path) -> Iterator[None]:
    """A FIFO without a writer at ``path``; on leaving, a reader stuck opening it (were the
    read ever to block) is let go: a writer opens it and closes it, so the reader sees EOF."""
    os.mkfifo(path)
    try:
        yield
    finally:
        with suppress(OSError):  # ENXIO: no reader waits on it, as it should be
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


async def test_a_fifo_put_where_a_read_note_was_answers_not_found_and_blocks_nothing(
    app, handed_over: CountingExecutor
) -> None:
    note_id = await write_linked_note(app)
    read = await app.knowledge.read(note_id=note_id)  # held now: the next read tries the loop
    path: Path = app.files.root / read["path"]
    path.unlink()
    with fifo_at(path), pytest.raises(DocNotFound):
        await asyncio.wait_for(app.knowledge.read(note_id=note_id), timeout=30)


def test_reading_a_fifo_or_a_file_past_the_bound_reads_nothing(tmp_path: Path) -> None:
    files = KnowledgeFiles(tmp_path)
    with ThreadPoolExecutor(1) as pool:
        for read in (files.read_text, lambda p: files.read_text_now(p, 100)):
            with fifo_at(tmp_path / "pipe.md"), pytest.raises(FileNotFoundError):
                pool.submit(read, "pipe.md").result(timeout=30)
            (tmp_path / "pipe.md").unlink()
    (tmp_path / "long.md").write_text("x" * 101)
    assert files.read_text_now("long.md", 100) is None
    assert files.read_text_now("long.md", 101) == "x" * 101
    assert files.reads == 1
