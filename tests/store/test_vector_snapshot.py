"""The matrix snapshot: the search matrices saved beside vectors.db and read back at start-up,
trusted only when they hold the store's current content, rebuilt without a person when torn,
damaged, stale or killed while written; and the matrix read that no other call waits for."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from lithos.store import vector_snapshot
from lithos.store.vectors import VectorStore
from tests.fakes import HashingEmbedder

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
]
QUERIES = ["alpha beta", "gamma", "theta iota kappa", "mu nu xi alpha", "zeta"]


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture(params=[False, True], ids=["float32", "int8"])
def compact(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def open_store(path: Path, embedder: HashingEmbedder, compact: bool) -> VectorStore:
    return VectorStore(path, embedder.model_id, embedder.dimension, compact=compact)


def embed_pending(store: VectorStore, embedder: HashingEmbedder) -> None:
    while batch := store.pending(8):
        vectors = embedder.embed([text for _, text in batch])
        store.store_embeddings([(h, v) for (h, _), v in zip(batch, vectors, strict=True)])


def text(rng: random.Random) -> str:
    return " ".join(rng.sample(WORDS, 3)) + f" {rng.randrange(10**6)}"


def fill(store: VectorStore, embedder: HashingEmbedder, notes: int = 40, seed: int = 1) -> None:
    rng = random.Random(seed)
    for i in range(notes):
        store.set_note(f"n{i}", f"v{i}", [text(rng) for _ in range(rng.randint(1, 4))])
    embed_pending(store, embedder)


def answers(store: VectorStore, embedder: HashingEmbedder) -> list[tuple[list[float], set]]:
    """Per query: the similarities of the 12 best chunks and which chunks score above the
    12th (the hashing embedder ties often, and ties may come in any order)."""
    found = []
    for query in QUERIES:
        hits = store.search(embedder.vector(query), 12)
        scores = [round(hit.similarity, 5) for hit in hits]
        cut = scores[-1] if scores else 0.0
        found.append(
            (
                scores,
                {(h.note_id, h.chunk_index) for h, s in zip(hits, scores, strict=True) if s > cut},
            )
        )
    return found


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "vectors.db"


@pytest.fixture
def saved(path: Path, embedder: HashingEmbedder, compact: bool) -> list[list[tuple]]:
    """A filled store whose matrices were read and saved at close; its answers."""
    store = open_store(path, embedder, compact)
    fill(store, embedder)
    store.warm()
    expected = answers(store, embedder)
    store.close()
    assert store.snapshot_path.exists()
    return expected


def from_snapshot(
    path: Path, embedder: HashingEmbedder, compact: bool, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[list[float], set]]:
    """The answers of the store at ``path`` reopened, its matrices read from the snapshot
    (reading SQLite fails the test)."""

    def refuse(*args: object) -> None:
        raise AssertionError("the matrices were read from SQLite")

    with monkeypatch.context() as patch:
        patch.setattr(VectorStore, "_load_all", refuse)
        store = open_store(path, embedder, compact)
        try:
            assert not store.snapshot_stale()
            return answers(store, embedder)
        finally:
            store.close()


def test_a_reopened_store_reads_its_matrices_from_the_snapshot(
    path: Path, embedder: HashingEmbedder, compact: bool, saved: list, monkeypatch
) -> None:
    assert from_snapshot(path, embedder, compact, monkeypatch) == saved


def test_a_matrix_read_from_the_snapshot_takes_writes_like_one_read_from_sqlite(
    path: Path, embedder: HashingEmbedder, compact: bool, saved: list, monkeypatch
) -> None:
    """Random changes to a matrix read from the snapshot (its rows indexed by note at
    construction) end where a fresh read of SQLite ends."""
    store = open_store(path, embedder, compact)
    rng = random.Random(7)
    try:
        store.warm()
        for step in range(120):
            note = f"n{rng.randrange(60)}"
            if rng.random() < 0.25:
                store.remove_note(note)
            else:
                store.set_note(note, f"s{step}", [text(rng) for _ in range(rng.randint(1, 5))])
            if step % 10 == 0:
                embed_pending(store, embedder)
        embed_pending(store, embedder)
        changed = answers(store, embedder)
        assert store.snapshot_stale()
    finally:
        store.save_snapshot = lambda: False  # type: ignore[method-assign]
        store.close()
    fresh = open_store(path, embedder, compact)  # the snapshot is stale: SQLite is read
    try:
        assert answers(fresh, embedder) == changed
        assert fresh.snapshot_stale()
        assert fresh.save_snapshot()
        assert not fresh.snapshot_stale()
    finally:
        fresh.close()
    assert from_snapshot(path, embedder, compact, monkeypatch) == changed


def test_a_stale_snapshot_is_ignored_and_the_current_vectors_are_searched(
    path: Path, embedder: HashingEmbedder, compact: bool, saved: list
) -> None:
    writer = open_store(path, embedder, compact)  # never reads the matrices: saves nothing
    writer.set_note("late", "v", ["omega omega omega"])
    embed_pending(writer, embedder)
    writer.close()
    reader = open_store(path, embedder, compact)
    try:
        hits = reader.search(embedder.vector("omega"), 1)
        assert [hit.note_id for hit in hits] == ["late"]
    finally:
        reader.close()


def stamp_of(store: VectorStore) -> vector_snapshot.Stamp:
    row = store._db.call(
        lambda conn: conn.execute("SELECT store, generation FROM matrix_stamp").fetchone()
    )
    return vector_snapshot.Stamp(row[0], row[1])


def test_a_snapshot_of_another_store_file_is_ignored(
    path: Path, embedder: HashingEmbedder, compact: bool, saved: list
) -> None:
    """A deleted and rebuilt vectors.db has a new store id: its snapshot is not trusted even
    when the generations happen to be equal."""
    old = open_store(path, embedder, compact)
    generation = stamp_of(old).generation
    old.save_snapshot = lambda: False  # type: ignore[method-assign]
    old.close()
    snapshot = path.with_suffix(".matrix").read_bytes()
    for leftover in path.parent.glob("vectors.db*"):
        leftover.unlink()
    new = open_store(path, embedder, compact)
    new._db.call(lambda conn: conn.execute("UPDATE matrix_stamp SET generation = ?", (generation,)))
    new.save_snapshot = lambda: False  # type: ignore[method-assign]
    new.close()
    path.with_suffix(".matrix").write_bytes(snapshot)
    store = open_store(path, embedder, compact)
    try:
        assert stamp_of(store).generation == generation
        assert store.search(embedder.vector("alpha"), 5) == []
    finally:
        store.close()


@pytest.mark.parametrize("damage", ["truncated", "flipped", "garbage", "empty"])
def test_a_damaged_snapshot_is_set_aside_and_rebuilt(
    path: Path, embedder: HashingEmbedder, compact: bool, saved: list, damage: str, monkeypatch
) -> None:
    snapshot = path.with_suffix(".matrix")
    data = bytearray(snapshot.read_bytes())
    if damage == "truncated":
        data = data[: len(data) * 2 // 3]
    elif damage == "flipped":
        data[len(data) // 2] ^= 0x40
    elif damage == "garbage":
        data = bytearray(b"not a snapshot at all" * 10)
    else:
        data = bytearray()
    snapshot.write_bytes(bytes(data))
    store = open_store(path, embedder, compact)
    try:
        assert answers(store, embedder) == saved
        assert path.with_suffix(".matrix-damaged").read_bytes() == bytes(data)
        assert store.save_snapshot()
    finally:
        store.close()
    assert from_snapshot(path, embedder, compact, monkeypatch) == saved


def test_a_write_while_the_matrices_are_read_is_not_lost(
    path: Path, embedder: HashingEmbedder, compact: bool, saved: list, monkeypatch
) -> None:
    store = open_store(path, embedder, compact)
    real = vector_snapshot.read
    writes = []

    def read_then_write(*args, **kwargs):
        held = real(*args, **kwargs)
        if not writes:  # the matrices just read miss this note: they must not be installed
            writes.append(store.set_note("late", "v", ["omega omega"]))
            embed_pending(store, embedder)
        return held

    monkeypatch.setattr(vector_snapshot, "read", read_then_write)
    try:
        hits = store.search(embedder.vector("omega"), 1)
        assert [hit.note_id for hit in hits] == ["late"]
        assert answers(store, embedder)[0] == saved[0]
    finally:
        store.close()


def racing_write(store: VectorStore, embedder: HashingEmbedder, kind: str) -> None:
    """One write that changes what the search matrices hold."""
    if kind == "twin":  # a new note whose text is embedded already: its row reuses the vector
        store.set_note("twin", "v", store.chunks("n0"))
    elif kind == "embedded":  # new text, then its vector
        store.set_note("late", "v", ["omega omega"])
        embed_pending(store, embedder)
    elif kind == "changed":  # a note rewritten with another note's embedded text
        store.set_note("n1", "v1b", store.chunks("n2"))
    else:
        store.remove_note("n3")


def ranked_notes(store: VectorStore, embedder: HashingEmbedder, query: str) -> list[str]:
    """The notes the matrices rank for ``query`` (no chunk text read: a stale row shows)."""
    return [hit.note_id for hit in store.rank_notes(embedder.vector(query), 60)]


@pytest.mark.parametrize("kind", ["twin", "embedded", "changed", "removed"])
@pytest.mark.parametrize("source", ["snapshot", "sqlite"])
def test_a_write_between_reading_the_matrices_and_installing_them_is_searched(
    path: Path,
    embedder: HashingEmbedder,
    compact: bool,
    saved: list,
    source: str,
    kind: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The matrices are read beside the database thread (the embedding worker warms them at
    start-up) and installed on it; a write from another thread lands after the read and
    before the install. Whatever it changed is searched, exactly as after a fresh read."""
    if source == "sqlite":
        path.with_suffix(".matrix").unlink()
    store = open_store(path, embedder, compact)
    lead = {note: store.chunks(note)[0] for note in ("n0", "n2", "n3")}
    read, release = threading.Event(), threading.Event()
    sqlite_reads = []
    real_read, real_load = VectorStore._read_matrices, VectorStore._load_all

    def held_read(self: VectorStore, *args: object) -> object:
        held = real_read(self, *args)
        if not read.is_set():  # the first read: wait for the write before installing it
            read.set()
            assert release.wait(10)
        return held

    def counted_load(self: VectorStore, *args: object) -> object:
        sqlite_reads.append(read.is_set())
        return real_load(self, *args)

    monkeypatch.setattr(VectorStore, "_read_matrices", held_read)
    monkeypatch.setattr(VectorStore, "_load_all", counted_load)
    warming = threading.Thread(target=store.warm)
    warming.start()
    try:
        assert read.wait(10)
        assert sqlite_reads == ([False] if source == "sqlite" else [])
        racing_write(store, embedder, kind)
        assert store._matrices is None  # the write came before the install
    finally:
        release.set()
        warming.join(10)
    try:
        assert not warming.is_alive() and store._matrices is not None
        if kind == "twin":
            assert {"n0", "twin"} <= set(ranked_notes(store, embedder, lead["n0"])[:2])
        elif kind == "embedded":
            assert ranked_notes(store, embedder, "omega")[0] == "late"
        elif kind == "changed":
            assert {"n1", "n2"} <= set(ranked_notes(store, embedder, lead["n2"])[:2])
        else:
            assert "n3" not in ranked_notes(store, embedder, lead["n3"])
        got = answers(store, embedder)
    finally:
        store.close()
    path.with_suffix(".matrix").unlink()
    fresh = open_store(path, embedder, compact)  # reads SQLite, nothing racing it
    try:
        assert answers(fresh, embedder) == got
    finally:
        fresh.close()


def test_a_snapshot_written_while_the_matrices_changed_is_dropped(
    path: Path, embedder: HashingEmbedder, compact: bool, saved: list, monkeypatch
) -> None:
    store = open_store(path, embedder, compact)
    store.warm()
    store.set_note("n0", "changed", ["omega"])
    before = path.with_suffix(".matrix").read_bytes()
    real = vector_snapshot.write

    def write_during(*args, **kwargs):
        written = real(*args, **kwargs)
        store.remove_note("n1")  # after the rows were written, before the rename
        return written

    monkeypatch.setattr(vector_snapshot, "write", write_during)
    try:
        assert not store.save_snapshot()
        assert path.with_suffix(".matrix").read_bytes() == before
        assert not list(path.parent.glob("vectors.matrix.tmp-*"))
        assert store.snapshot_stale()
        monkeypatch.setattr(vector_snapshot, "write", real)
        assert store.save_snapshot()
        expected = answers(store, embedder)
    finally:
        store.close()
    assert from_snapshot(path, embedder, compact, monkeypatch) == expected


def test_only_searches_wait_while_the_matrices_are_read(
    path: Path, embedder: HashingEmbedder, compact: bool, saved: list, monkeypatch
) -> None:
    store = open_store(path, embedder, compact)
    reading, release = threading.Event(), threading.Event()
    real = vector_snapshot.read

    def slow_read(*args, **kwargs):
        reading.set()
        assert release.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(vector_snapshot, "read", slow_read)
    warming = threading.Thread(target=store.warm)
    warming.start()
    searched: list[list] = []
    searching = threading.Thread(target=lambda: searched.append(answers(store, embedder)))
    try:
        assert reading.wait(10)
        searching.start()
        # None of these needs the matrices: each returns while they are being read.
        assert store.counts().notes == 40
        assert store.chunks("n0")
        assert store.note_hashes()["n0"] == "v0"
        store.set_note("n0", "v0b", ["alpha beta"])
        assert store.pending(8)
        searching.join(0.2)
        assert searching.is_alive() and not searched  # the search waits for the matrices
    finally:
        release.set()
        warming.join(10)
        searching.join(10)
    try:
        assert searched and searched[0][1] == answers(store, embedder)[1]
    finally:
        store.close()


KILLED_WRITER = """
import sys
from pathlib import Path
from lithos.store import vector_snapshot
from lithos.store.vectors import VectorStore
from tests.fakes import HashingEmbedder

path, compact = Path(sys.argv[1]), sys.argv[2] == "int8"
embedder = HashingEmbedder()
store = VectorStore(path, embedder.model_id, embedder.dimension, compact=compact)
store.set_note("late", "v", ["omega omega"])
batch = store.pending(8)
store.store_embeddings([(h, embedder.vector(t)) for h, t in batch])
store.warm()
real = vector_snapshot._put
written = []

def put(out, data, crc):
    written.append(len(data))
    if len(written) == 3:  # part of the rows are out: the parent kills us now
        out.write(bytes(data)[: len(data) // 2])
        out.flush()
        print("writing", flush=True)
        sys.stdin.readline()
    return real(out, data, crc)

vector_snapshot._put = put
store.save_snapshot()
"""


def test_a_kill_while_the_snapshot_is_written_leaves_a_store_that_starts_and_answers(
    path: Path, embedder: HashingEmbedder, compact: bool, saved: list
) -> None:
    before = path.with_suffix(".matrix").read_bytes()
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-c", KILLED_WRITER, str(path), "int8" if compact else "f32"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stdin=subprocess.PIPE, cwd=root, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "writing\n"
        assert list(path.parent.glob("vectors.matrix.tmp-*"))
    finally:
        process.kill()
        process.wait(10)
    assert path.with_suffix(".matrix").read_bytes() == before  # the old one, whole
    store = open_store(path, embedder, compact)
    try:
        assert [hit.note_id for hit in store.search(embedder.vector("omega"), 1)] == ["late"]
        assert store.save_snapshot()
        assert not list(path.parent.glob("vectors.matrix.tmp-*"))  # the torn one is gone
    finally:
        store.close()


def test_an_empty_store_saves_and_reads_its_snapshot(
    path: Path, embedder: HashingEmbedder, compact: bool, monkeypatch
) -> None:
    store = open_store(path, embedder, compact)
    store.set_note("n", "v", ["not embedded yet"])  # a chunk, but no row in the matrix
    store.warm()
    assert store.save_snapshot()
    store.close()
    assert from_snapshot(path, embedder, compact, monkeypatch) == [([], set())] * len(QUERIES)


@pytest.mark.parametrize("source", ["snapshot", "sqlite"])
def test_the_writes_after_reading_the_matrices_fill_spare_rows_instead_of_copying_them(
    path: Path, embedder: HashingEmbedder, compact: bool, saved: list, source: str
) -> None:
    """Read from the snapshot or from SQLite, a matrix has free rows beyond its chunks, so the
    notes written next take them without the whole matrix being copied to grow."""
    if source == "sqlite":
        path.with_suffix(".matrix").unlink()
    store = open_store(path, embedder, compact)
    rng = random.Random(3)
    try:
        store.warm()
        held = store.matrix_bytes()
        vectors_before = store.counts().embedded_chunks
        for i in range(40):
            store.set_note(f"new{i}", f"w{i}", [f"omega{i} " + text(rng) for _ in range(3)])
        embed_pending(store, embedder)
        assert store.counts().embedded_chunks == vectors_before + 120
        assert store.matrix_bytes() == held
        assert store.search(embedder.vector("omega7"), 1)[0].note_id == "new7"
    finally:
        store.close()
