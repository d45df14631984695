"""Fixtures for the coordination and agent services: a settable clock and the registry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lithos.services.agents import AgentRegistry
from lithos.store.sqlite import Database

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
