"""The embedder contract: text in, unit vectors out.

Stores and services depend on this Protocol, never on a concrete model, so tests can run a
deterministic fake and the composition root picks the real model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors in one embedding space.

    ``model_id`` names the space: vectors from different ``model_id`` values are never compared,
    and a stored vector is reused only for the same ``model_id``. ``dimension`` is the length of
    every vector.
    """

    model_id: str
    dimension: int

    def warm(self) -> None:
        """Load whatever the first :meth:`embed` would (model files, sessions), so a later
        call does not pay for it. Safe to call more than once."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in order.

        Returns a float32 array of shape ``(len(texts), dimension)`` whose rows have L2 norm 1,
        so a dot product is a cosine similarity. An empty ``texts`` gives shape
        ``(0, dimension)``. Implementations must be safe to call from several threads.
        """
        ...
