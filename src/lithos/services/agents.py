"""The agent registry: who has talked to Lithos, and when last.

Agents never have to register: every service method that names an agent records it on first
sight and refreshes its ``last_seen_at`` afterwards, but only when the call succeeds
(:meth:`AgentRegistry.seen` inside the change's own transaction, or :meth:`AgentRegistry.touch`
after a note was written). A failed call leaves the registry as it was. Explicit registration
only adds a name, a type and metadata.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from lithos.domain.coordination import Agent, require_text
from lithos.domain.timestamps import parse_timestamp, utc_now
from lithos.errors import AgentNotFound
from lithos.store.coordination import AgentStore
from lithos.store.sqlite import Database

# How stale a known agent's ``last_seen_at`` may be after a write: each transaction on
# coordination.db costs an fsync, which a write paid for a timestamp (3.4 ms of a ~14 ms write
# at load average 7, bench/NOTES.md). A new agent is always recorded at once.
TOUCH_RESOLUTION = timedelta(seconds=1)


class AgentRegistry:
    """Registers agents and answers who is known. Safe to share between services."""

    def __init__(self, db: Database, clock: Callable[[], datetime] = utc_now) -> None:
        self._store = AgentStore(db)
        self._clock = clock
        self._touched: dict[str, datetime] = {}  # the last touch recorded, per agent
        self._touched_lock = threading.Lock()

    async def touch(self, agent_id: str) -> str:
        """Record that ``agent_id`` acted now: create it if unknown, else bump ``last_seen_at``
        (skipped when this registry recorded it less than :data:`TOUCH_RESOLUTION` ago).

        Returns the id as stored (surrounding whitespace stripped); callers should use it.
        Raises :class:`~lithos.errors.InvalidInput` when ``agent_id`` is blank.
        """
        agent_id = require_text("agent", agent_id)
        now = self._clock()
        with self._touched_lock:
            last = self._touched.get(agent_id)
        if last is not None and timedelta(0) <= now - last < TOUCH_RESOLUTION:
            return agent_id
        await self._store.run(lambda conn: self._store.touch(conn, agent_id, now))
        with self._touched_lock:
            self._touched[agent_id] = now
        return agent_id

    def seen(self, conn: sqlite3.Connection, agent_id: str) -> None:
        """Inside a caller's transaction: record that ``agent_id`` acted now. Call it last in
        the transaction of a change that succeeded, so a failed call records nothing."""
        self._store.touch(conn, agent_id, self._clock())

    async def register(
        self,
        id: str,
        name: str | None = None,
        type: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Create the agent, or update the fields given (``None`` keeps the stored value).

        Always refreshes ``last_seen_at``. Returns ``{"success": True, "created": bool}``.
        Raises :class:`~lithos.errors.InvalidInput` when ``id`` is blank.
        """
        agent_id = require_text("id", id)
        now = self._clock()

        def work(conn: sqlite3.Connection) -> bool:
            known = self._store.get(conn, agent_id)
            if known is None:
                agent = Agent(agent_id, name, type, now, now, dict(metadata or {}))
                self._store.save(conn, agent)
                return True
            self._store.save(
                conn,
                replace(
                    known,
                    name=known.name if name is None else name,
                    type=known.type if type is None else type,
                    metadata=known.metadata if metadata is None else dict(metadata),
                    last_seen_at=now,
                ),
            )
            return False

        created = await self._store.run(work)
        return {"success": True, "created": created}

    async def info(self, id: str) -> dict[str, Any]:
        """``{id, name, type, first_seen_at, last_seen_at, metadata}`` of the agent.

        Raises :class:`~lithos.errors.AgentNotFound` when the agent was never seen.
        """
        agent_id = id.strip()
        agent = await self._store.run(lambda conn: self._store.get(conn, agent_id))
        if agent is None:
            raise AgentNotFound(f"Agent {id!r} is not known", agent_id=id)
        return agent.to_dict()

    async def count(self) -> int:
        """How many agents are known."""
        return await self._store.run(self._store.count)

    def count_in(self, conn: sqlite3.Connection) -> int:
        """:meth:`count` inside a caller's transaction (one hop for several counts)."""
        return self._store.count(conn)

    async def list(
        self, type: str | None = None, active_since: str | None = None
    ) -> dict[str, Any]:
        """``{"agents": [{id, name, type, last_seen_at}]}``, most recently seen first.

        ``type`` filters by exact type; ``active_since`` (ISO 8601) keeps agents seen at or
        after that moment. Raises :class:`~lithos.errors.InvalidInput` on a bad timestamp.
        """
        since = None if active_since is None else parse_timestamp(active_since, "active_since")
        agents = await self._store.run(lambda conn: self._store.list(conn, type, since))
        return {"agents": [agent.to_summary() for agent in agents]}
