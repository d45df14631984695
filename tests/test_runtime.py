"""Process-wide tuning: numpy's BLAS runs one thread per product once an app is open and
numpy is in use (tests/test_lazy_numpy.py: not before); the objects alive when the server
starts serving are frozen out of garbage collections."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lithos.lazy_numpy import np
from lithos.runtime import set_blas_threads
from tests.support import make_app


def test_opening_an_app_caps_blas_at_the_configured_threads(data_dir: Path):
    set_blas_threads(2)
    assert set_blas_threads(0) == 2  # 0 reads without changing
    app = make_app(data_dir)
    try:
        assert np.ones(2).sum() == 2
        assert set_blas_threads(0) == 1
    finally:
        app.close()
    app = make_app(data_dir, **{"search.blas_threads": 2})
    try:
        assert set_blas_threads(0) == 2
    finally:
        app.close()
        set_blas_threads(1)


FREEZE_CHECK = """
import gc, weakref
from lithos.runtime import freeze_long_lived_objects

class Node:
    pass

young_garbage = Node()
young_garbage.self = young_garbage
young = weakref.ref(young_garbage)
del young_garbage
tracked = len(gc.get_objects())
freeze_long_lived_objects()
assert young() is None, "the young collection before the freeze frees young cycles"
assert gc.get_freeze_count() > tracked // 2, (gc.get_freeze_count(), tracked)
assert len(gc.get_objects()) < tracked // 10, (len(gc.get_objects()), tracked)
later = Node()
later.self = later
ref = weakref.ref(later)
del later
gc.collect()
assert ref() is None, "a cycle made after the freeze is still collected"
print("ok")
"""


def test_freezing_leaves_live_objects_out_of_collections_but_still_collects_later_cycles():
    # In a process of its own: a freeze would keep this test run's garbage forever.
    done = subprocess.run(
        [sys.executable, "-c", FREEZE_CHECK], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
