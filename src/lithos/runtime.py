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


# OpenBLAS (numpy's BLAS) splits each matrix product over every core by default. The server
# already runs requests, scouts and the embedding model in threads of their own, so on a
# machine whose cores are busy a product waits for a BLAS thread that cannot run: measured at
# load 10-13 on 2 cores, a 300 x 384 by 384 product took 32 ms (p50) on 2 BLAS threads against
# 0.17 ms on one, and scoring 86k float32 vectors 57 ms against 19 ms (bench/NOTES.md).
_BLAS_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)
_BLAS_GETTERS = tuple(name.replace("set_num", "get_num") for name in _BLAS_SETTERS)


def _loaded_blas() -> list[ctypes.CDLL]:
    """The OpenBLAS libraries loaded into this process (numpy's among them once imported)."""
    import numpy  # noqa: F401  (loads numpy's BLAS)

    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        return []
    libraries = []
    for path in sorted(paths):
        try:
            libraries.append(ctypes.CDLL(path))
        except OSError:
            continue
    return libraries


def set_blas_threads(threads: int) -> int | None:
    """Have OpenBLAS use ``threads`` threads per product (0: leave it as it is). Returns the
    number it uses now, or None when no OpenBLAS is found (another BLAS, another system)."""
    found = None
    for library in _loaded_blas():
        for setter, getter in zip(_BLAS_SETTERS, _BLAS_GETTERS, strict=True):
            if hasattr(library, setter):
                if threads > 0:
                    getattr(library, setter)(threads)
                found = int(getattr(library, getter)()) if hasattr(library, getter) else threads
                break
    return found
