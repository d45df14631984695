"""Process-wide memory tuning for the long-running server (glibc on Linux; no-ops elsewhere).

glibc keeps memory that Python frees in per-thread arenas instead of returning it to the
system, so resident memory only ever grows: after loading 86k vectors and the embedding model
at 10k notes, ``malloc_trim`` gave back 75 MB, and capping the arenas at two stopped a
50-session load test from leaving ~230 MB behind (bench/RESULTS.md).
"""

from __future__ import annotations

import ctypes
import functools

M_ARENA_MAX = -8


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") else None


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Cap glibc's malloc arenas; call before the server starts its threads."""
    libc = _libc()
    if libc is not None:
        libc.mallopt(M_ARENA_MAX, arenas)


def release_free_memory() -> None:
    """Return memory that is free inside the allocator to the operating system."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
