"""Batch migration to a new embedding space: ``lithos reembed``.

After the configured model changes, the vector index searches the new (active) space and the
old (retiring) one together, and the embedding worker re-embeds old chunks in the background
(``search.space_migration: lazy``). :func:`reembed` does the same work in the foreground, as
fast as the model allows, and retires the old space at the end. Every batch is committed as it
is embedded, so a killed run loses at most one batch and the next run carries on from there;
text already embedded in the active space (the content-addressed cache) is never embedded again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from lithos.domain.embedding import Embedder
from lithos.store.vectors import VectorStore

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class ReembedReport:
    """What one run did. ``embedded`` counts distinct texts given to the model; chunk counts
    count chunk rows (a text shared by two notes counts twice)."""

    space: str
    chunks: int
    already_embedded: int  # chunks that had a vector in the active space before the run
    embedded: int
    remaining: int  # chunks still without a vector in the active space (0 when complete)
    retired: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def reembed(
    vectors: VectorStore,
    embedder: Embedder,
    batch_size: int = 8,
    progress: Progress | None = None,
) -> ReembedReport:
    """Embed in the active space every chunk that has no vector there yet (new text first),
    then retire the spaces being retired. Raises what the embedder raises; the batches
    stored before that are kept."""
    before = vectors.counts()
    retiring = [space.id for space in vectors.searched_spaces()[1:]]
    waiting = vectors.pending_count(migrate=True)
    embedded = 0
    while batch := vectors.pending(batch_size, migrate=True):
        found = embedder.embed([text for _, text in batch])
        vectors.store_embeddings([(h, v) for (h, _), v in zip(batch, found, strict=True)])
        embedded += len(batch)
        if progress is not None:
            progress(waiting - vectors.pending_count(migrate=True), waiting)
    vectors.retire_if_done()
    searched = {space.id for space in vectors.searched_spaces()}
    return ReembedReport(
        space=vectors.space.id,
        chunks=before.chunks,
        already_embedded=before.embedded_chunks,
        embedded=embedded,
        remaining=vectors.pending_count(migrate=True),
        retired=[space_id for space_id in retiring if space_id not in searched],
    )
