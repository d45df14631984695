"""Test doubles that implement Lithos protocols without heavy dependencies."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence

import numpy as np

_WORD = re.compile(r"\w+")


class HashingEmbedder:
    """A deterministic :class:`~lithos.domain.embedding.Embedder` for fast tests.

    Each lowercase word adds 1 to one of ``dimension`` buckets chosen by its sha256, and the
    counts are L2 normalised; so texts sharing words are similar and texts sharing none score 0.
    A text without words maps to a fixed bucket. ``embedded_texts`` lists every text embedded, in
    order, so tests can prove a text was never embedded twice.
    """

    def __init__(
        self, dimension: int = 384, model_id: str = "hashing-test", revision: str = ""
    ) -> None:
        self.model_id = model_id
        self.revision = revision
        self.dimension = dimension
        self.embedded_texts: list[str] = []
        self.warmed = False
        self._lock = threading.Lock()

    def warm(self) -> None:
        self.warmed = True

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            self.embedded_texts.extend(texts)
        return np.stack([self.vector(text) for text in texts]) if texts else self._empty()

    def vector(self, text: str) -> np.ndarray:
        """The vector of one text (without counting it as embedded)."""
        vector = np.zeros(self.dimension, dtype=np.float32)
        words = _WORD.findall(text.lower()) or [""]
        for word in words:
            digest = hashlib.sha256(word.encode("utf-8")).digest()
            vector[int.from_bytes(digest[:4], "big") % self.dimension] += 1.0
        return vector / np.linalg.norm(vector)

    def _empty(self) -> np.ndarray:
        return np.zeros((0, self.dimension), dtype=np.float32)
