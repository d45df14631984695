"""Process-wide tuning: numpy's BLAS runs one thread per product once an app is open and
numpy is in use (tests/test_lazy_numpy.py: not before)."""

from __future__ import annotations

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
