"""The retrieval pipeline is built on first use, once, by whichever thread asks first: an
app serves its first full-text call without importing it."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from lithos.app import LithosApp
from lithos.domain.retrieval import RetrievalQuery
from lithos.services.knowledge import WriteRequest
from tests.support import make_app

FRESH = """
import sys
from tests.support import make_app

app = make_app(__import__("pathlib").Path(sys.argv[1]))
try:
    before = "lithos.retrieval.service" in sys.modules
    first = app.retrieval
    print(before, "lithos.retrieval.service" in sys.modules, app.retrieval is first)
finally:
    app.close()
"""


def test_a_fresh_app_imports_retrieval_only_when_it_is_first_used(data_dir: Path):
    done = subprocess.run(
        [sys.executable, "-c", FRESH, str(data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False True True"


class _WatchedLock:
    """A lock that tells when a second caller is waiting for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.contended = threading.Event()

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            self.contended.set()
            self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def test_two_first_callers_at_once_get_one_pipeline_built_once(data_dir: Path):
    app = make_app(data_dir)
    lock = _WatchedLock()
    app._retrieval_lock = lock  # type: ignore[assignment]
    build = app.build_retrieval
    building, builds = threading.Event(), []

    def slow_build() -> Any:
        builds.append(threading.current_thread().name)
        building.set()
        # The second caller is waiting for the lock before this one finishes building.
        assert lock.contended.wait(30)
        return build()

    app.build_retrieval = slow_build  # type: ignore[method-assign]
    got: dict[str, Any] = {}

    def first_use(name: str) -> None:
        got[name] = app.retrieval

    one = threading.Thread(target=first_use, args=("one",), name="one")
    two = threading.Thread(target=first_use, args=("two",), name="two")
    try:
        one.start()
        assert building.wait(30)
        two.start()
        one.join(30)
        two.join(30)
        assert builds == ["one"]
        assert got["one"] is got["two"] is app.retrieval
    finally:
        app.close()


async def test_the_first_retrieve_after_opening_finds_a_note(data_dir: Path):
    app: LithosApp = make_app(data_dir)
    app.start(watch=False)
    try:
        written = await app.knowledge.write(
            WriteRequest(
                agent="w",
                title="Lazy pipelines",
                content="The retrieval pipeline is built on first use.",
            )
        )
        query = RetrievalQuery(query="retrieval pipeline built on first use", limit=1)
        got = await app.retrieval.retrieve(query)
        assert [r.id for r in got.results] == [written["id"]]
    finally:
        app.close()
