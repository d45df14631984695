"""A vector cache shared by benchmark runs, so each chunk text is embedded once per model.

The cache is one SQLite file keyed by ``(model_id, chunk_hash)``, where ``chunk_hash`` is the
sha256 of the chunk text: a vector is only ever reused for the same text under the same model,
so the cache cannot serve a stale vector. It holds the shipped model's vectors only; the vector
store keys them by that model's embedding space id. :func:`seed` copies it into a
fresh data directory before Lithos starts; :func:`save` copies new vectors back afterwards.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from lithos.domain.embedding import space_of
from lithos.store.embedder import OnnxEmbedder
from lithos.store.vectors import VectorStore

DEFAULT = Path(__file__).resolve().parent / ".cache" / "vectors.db"
SPACE = space_of(OnnxEmbedder())

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS embeddings (model_id TEXT NOT NULL, chunk_hash TEXT NOT NULL,"
    " vector BLOB NOT NULL, PRIMARY KEY (model_id, chunk_hash)) WITHOUT ROWID"
)


def vectors_db(data_dir: Path) -> Path:
    return data_dir / ".vectors" / "vectors.db"


def seed(data_dir: Path, cache: Path = DEFAULT) -> int:
    """Copy every cached vector into ``data_dir``'s vector store (created if missing).

    Call before Lithos opens ``data_dir``. Returns how many vectors the store holds after.
    """
    target = vectors_db(data_dir)
    # Creates the schema Lithos expects, with the shipped model's space active.
    VectorStore(target, SPACE.model_id, SPACE.dimension, revision=SPACE.revision).close()
    if not cache.exists():
        return 0
    with sqlite3.connect(target) as conn:
        into = "embeddings(space_id, chunk_hash, vector)"
        return _copy_in(conn, cache, into, SPACE.id, ("model_id", SPACE.model_id))


def save(data_dir: Path, cache: Path = DEFAULT) -> int:
    """Add the vectors of ``data_dir`` the cache lacks; returns how many were added.

    Safe while Lithos runs (SQLite readers do not block its writer for long).
    """
    source = vectors_db(data_dir)
    if not source.exists():
        return 0
    cache.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(cache, timeout=60) as conn:
        conn.execute(_SCHEMA)
        before = conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        into = "embeddings(model_id, chunk_hash, vector)"
        return _copy_in(conn, source, into, SPACE.model_id, ("space_id", SPACE.id)) - int(before)


def _copy_in(
    conn: sqlite3.Connection, other: Path, into: str, key: str, source: tuple[str, str]
) -> int:
    """Add the shipped model's vectors of the database at ``other`` (those whose column
    ``source[0]`` is ``source[1]``) that ``conn`` lacks, into ``into`` under ``key``; returns
    how many vectors ``conn`` holds afterwards. (The cache keys them by model id, the vector
    store by embedding space id.)"""
    conn.execute("ATTACH DATABASE ? AS other", (str(other),))
    conn.execute(
        f"INSERT OR IGNORE INTO main.{into} SELECT ?, chunk_hash, vector FROM other.embeddings"
        f" WHERE {source[0]} = ?",
        (key, source[1]),
    )
    conn.commit()
    count = conn.execute("SELECT COUNT(*) FROM main.embeddings").fetchone()[0]
    conn.execute("DETACH DATABASE other")
    return int(count)
