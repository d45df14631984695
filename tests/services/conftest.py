"""Fixtures for the coordination and agent services: a settable clock and the registry."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lithos.app import LithosApp
from lithos.services.agents import AgentRegistry
from lithos.store.sqlite import Database
from tests.support import make_app

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class Clock:
    """A settable clock: ``clock()`` is now, ``clock.advance(minutes=5)`` moves it."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def agents(db: Database, clock: Clock) -> AgentRegistry:
    return AgentRegistry(db, clock=clock)


@pytest.fixture
def lithos(data_dir: Path, clock: Clock) -> Iterator[LithosApp]:
    """A started app on the settable clock without the consolidation thread: tests call
    consolidation, the sweep and concept formation themselves (decay batches of two). Concepts
    are on (off by default) so that their tests run them."""
    settings = {
        "lcma.consolidation": {"enabled": False, "decay_batch": 2},
        "lcma.concepts": {"enabled": True},
    }
    app = make_app(data_dir, clock=clock, **settings)
    app.start(watch=False, embed=False)
    try:
        yield app
    finally:
        app.close()
