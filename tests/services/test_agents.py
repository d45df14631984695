"""AgentRegistry against a real SQLite file, with an injected clock."""

from __future__ import annotations

import pytest

from lithos.errors import AgentNotFound, InvalidInput
from lithos.services.agents import AgentRegistry
from tests.services.conftest import Clock

START_STAMP = "2026-01-05T09:00:00.000000Z"


async def test_touch_registers_an_unknown_agent(agents: AgentRegistry) -> None:
    await agents.touch("agent-zero")
    assert await agents.info("agent-zero") == {
        "id": "agent-zero",
        "name": None,
        "type": None,
        "first_seen_at": START_STAMP,
        "last_seen_at": START_STAMP,
        "metadata": {},
    }


async def test_touch_refreshes_last_seen_and_keeps_first_seen(
    agents: AgentRegistry, clock: Clock
) -> None:
    await agents.touch("agent-zero")
    clock.advance(minutes=30)
    await agents.touch("agent-zero")
    info = await agents.info("agent-zero")
    assert (info["first_seen_at"], info["last_seen_at"]) == (
        START_STAMP,
        "2026-01-05T09:30:00.000000Z",
    )


async def test_touch_returns_the_id_without_surrounding_spaces(agents: AgentRegistry) -> None:
    assert await agents.touch("  agent-zero ") == "agent-zero"


async def test_touch_with_a_blank_id_is_invalid_input(agents: AgentRegistry) -> None:
    with pytest.raises(InvalidInput):
        await agents.touch("   ")


async def test_registering_a_new_agent_reports_created(agents: AgentRegistry) -> None:
    result = await agents.register("openclaw", name="OpenClaw", type="openclaw")
    assert result == {"success": True, "created": True}


async def test_registering_a_known_agent_reports_not_created(agents: AgentRegistry) -> None:
    await agents.touch("openclaw")
    result = await agents.register("openclaw", name="OpenClaw")
    assert result == {"success": True, "created": False}


async def test_registering_again_updates_given_fields_and_last_seen(
    agents: AgentRegistry, clock: Clock
) -> None:
    await agents.register("openclaw", name="Old", type="custom", metadata={"v": 1})
    clock.advance(minutes=5)
    await agents.register("openclaw", name="OpenClaw", metadata={"v": 2})
    info = await agents.info("openclaw")
    assert (info["name"], info["type"], info["metadata"]) == ("OpenClaw", "custom", {"v": 2})
    assert info["last_seen_at"] == "2026-01-05T09:05:00.000000Z"


async def test_info_of_an_unknown_agent_is_agent_not_found(agents: AgentRegistry) -> None:
    with pytest.raises(AgentNotFound):
        await agents.info("nobody")


async def test_list_filters_by_type(agents: AgentRegistry) -> None:
    await agents.register("a", type="claude-code")
    await agents.register("b", type="openclaw")
    listed = await agents.list(type="openclaw")
    assert listed == {
        "agents": [{"id": "b", "name": None, "type": "openclaw", "last_seen_at": START_STAMP}]
    }


async def test_list_active_since_keeps_agents_seen_at_or_after(
    agents: AgentRegistry, clock: Clock
) -> None:
    await agents.touch("idle")
    clock.advance(hours=1)
    await agents.touch("busy")
    listed = await agents.list(active_since="2026-01-05T10:00:00Z")
    assert [agent["id"] for agent in listed["agents"]] == ["busy"]


async def test_list_shows_most_recently_seen_first(agents: AgentRegistry, clock: Clock) -> None:
    await agents.touch("first")
    clock.advance(seconds=1)
    await agents.touch("second")
    assert [agent["id"] for agent in (await agents.list())["agents"]] == ["second", "first"]


async def test_list_with_a_garbage_active_since_is_invalid_input(agents: AgentRegistry) -> None:
    with pytest.raises(InvalidInput):
        await agents.list(active_since="last tuesday")


async def test_count_counts_every_known_agent(agents: AgentRegistry) -> None:
    await agents.touch("a")
    await agents.touch("b")
    await agents.touch("a")
    assert await agents.count() == 2


async def test_touches_within_a_second_record_once_and_later_ones_again(
    agents: AgentRegistry, clock: Clock
) -> None:
    await agents.touch("agent-zero")
    clock.advance(seconds=0.5)
    await agents.touch("agent-zero")  # known and recorded half a second ago: not written
    assert (await agents.info("agent-zero"))["last_seen_at"] == START_STAMP
    clock.advance(seconds=0.5)
    await agents.touch("agent-zero")
    assert (await agents.info("agent-zero"))["last_seen_at"] == "2026-01-05T09:00:01.000000Z"
