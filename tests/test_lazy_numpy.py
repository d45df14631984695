"""numpy is imported on its first use through ``lithos.lazy_numpy.np``, not at start-up: a
server answers full-text searches without it, and numpy's BLAS still gets the configured
threads before any product. Each check runs in a fresh interpreter, where nothing has used
numpy yet."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.services.test_indexing import write
from tests.support import make_app

ROOT = Path(__file__).resolve().parents[1]


def run_fresh(script: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_np_imports_numpy_on_first_use_and_runs_the_hooks_once() -> None:
    run_fresh(
        """
        import sys
        from lithos.lazy_numpy import after_import, np
        ran = []
        after_import(lambda: ran.append("numpy" in sys.modules))
        assert "numpy" not in sys.modules and ran == []
        assert np.zeros(3).sum() == 0 and np.float32 is sys.modules["numpy"].float32
        assert ran == [True]
        assert np.ones(2).sum() == 2 and ran == [True]
        after_import(lambda: ran.append("later"))  # numpy is in: at once
        assert ran == [True, "later"]
        """
    )


def test_a_started_server_answers_full_text_without_numpy_and_caps_blas_on_first_use(
    data_dir: Path,
) -> None:
    app = make_app(data_dir)
    app.start(watch=False)
    write(app, "Heron", "a grey heron by the water")
    assert app.embedding.wait_idle(60)  # else the note may still wait for its vector
    app.close()
    run_fresh(
        f"""
        import asyncio
        from pathlib import Path
        from lithos.lazy_numpy import after_import
        from lithos.runtime import set_blas_threads
        used = []
        after_import(lambda: used.append(True))
        set_blas_threads(3)
        from tests.support import make_app
        app = make_app(Path({str(data_dir)!r}), **{{"search.blas_threads": 1}})
        try:
            app.start(watch=False, check_in_background=True, defer_background=True)
            found = asyncio.run(app.search.search("heron", mode="fulltext"))
            assert [hit["title"] for hit in found["results"]] == ["Heron"], found
            assert used == [] and set_blas_threads(0) == 3
            found = asyncio.run(app.search.search("grey heron", mode="semantic"))
            assert [hit["title"] for hit in found["results"]] == ["Heron"], found
            assert used == [True] and set_blas_threads(0) == 1
        finally:
            app.close()
        """
    )
