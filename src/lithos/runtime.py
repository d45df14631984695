"""Process-wide memory tuning for the long-running server (glibc on Linux; no-ops elsewhere).

glibc keeps memory that Python frees in per-thread arenas instead of returning it to the
system, so resident memory only ever grows: after loading 86k vectors and the embedding model
at 10k notes, ``malloc_trim`` gave back 75 MB, and capping the arenas at two stopped a
50-session load test from leaving ~230 MB behind (bench/RESULTS.md). Python's cyclic garbage
collector is kept off the objects the server holds for its whole life
(:func:`freeze_long_lived_objects`), and off altogether while the ``lithos`` command imports
its modules (:func:`pause_collection`).
"""

from __future__ import annotations

import ctypes
import functools
import gc

M_ARENA_MAX = -8
# Whether pause_collection turned the collector off (and resume_collection has not yet
# turned it back on). Read and written by the main thread only.
_paused = False


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


def pause_collection() -> None:
    """Turn the cyclic garbage collector off while a process imports its modules; call first
    thing (the ``lithos`` command's entry point), then :func:`resume_collection` once the
    imports are done. A no-op when the collector is off already.

    Importing Lithos and the MCP stack allocates ~190,000 objects; each time the collector's
    thresholds pass it walks them again, the oldest generation three times: ~110-130 ms of
    the ~1 s of CPU before ``lithos serve`` answers its first call, for ~1,200 objects of
    cyclic garbage (bench/NOTES.md)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_collection() -> None:
    """End :func:`pause_collection`: the objects alive now are frozen out of later
    collections (the modules and what they made, with the imports' few cyclic garbage,
    ~0.6 MB, which is kept) and the collector is on again. A no-op without a pause, once."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def freeze_long_lived_objects() -> None:
    """Leave the objects alive now (modules, the tools' schemas and validators, open stores)
    out of every later garbage collection; call once the server is built, before it serves.

    A full collection walks every tracked object: ~130,000 of them in a built server, 60-80
    ms of CPU each time, with the event loop stopped, every few seconds of steady load. The
    young collection first frees the garbage of start-up's last steps; what cyclic garbage
    older than that is frozen with the rest stays (a few hundred objects, once). Objects
    frozen are still freed when their last reference goes."""
    gc.collect(1)
    gc.freeze()


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
