"""The agent tools through a real in-memory MCP client over a started app."""

from __future__ import annotations

from fastmcp import Client

from tests.support import call


async def test_registering_a_new_agent_reports_created(client: Client) -> None:
    result = await call(client, "lithos_agent_register", id="openclaw", type="openclaw")
    assert result == {"success": True, "created": True}


async def test_registering_again_reports_not_created_and_updates_fields(client: Client) -> None:
    await call(client, "lithos_agent_register", id="openclaw", name="Old", type="openclaw")
    again = await call(client, "lithos_agent_register", id="openclaw", metadata={"version": 2})
    info = await call(client, "lithos_agent_info", id="openclaw")
    assert again == {"success": True, "created": False}
    assert (info["name"], info["type"], info["metadata"]) == ("Old", "openclaw", {"version": 2})


async def test_agent_info_returns_every_field(client: Client) -> None:
    await call(client, "lithos_agent_register", id="zero", name="Agent Zero", type="agent-zero")
    info = await call(client, "lithos_agent_info", id="zero")
    assert set(info) == {"id", "name", "type", "first_seen_at", "last_seen_at", "metadata"}
    assert (info["id"], info["name"], info["type"]) == ("zero", "Agent Zero", "agent-zero")


async def test_unknown_agent_info_returns_agent_not_found(client: Client) -> None:
    failed = await call(client, "lithos_agent_info", id="nobody")
    assert (failed["status"], failed["code"]) == ("error", "agent_not_found")


async def test_creating_a_task_registers_its_agent(client: Client) -> None:
    await call(client, "lithos_task_create", title="T", agent="newcomer")
    info = await call(client, "lithos_agent_info", id="newcomer")
    assert info["id"] == "newcomer"


async def test_agent_list_filters_by_type(client: Client) -> None:
    await call(client, "lithos_agent_register", id="a", type="claude-code")
    await call(client, "lithos_agent_register", id="b", type="openclaw")
    listed = await call(client, "lithos_agent_list", type="openclaw")
    assert [agent["id"] for agent in listed["agents"]] == ["b"]


async def test_agent_list_active_since_the_future_is_empty(client: Client) -> None:
    await call(client, "lithos_agent_register", id="a")
    listed = await call(client, "lithos_agent_list", active_since="2999-01-01T00:00:00Z")
    assert listed == {"agents": []}


async def test_agent_list_with_a_bad_active_since_returns_invalid_input(client: Client) -> None:
    failed = await call(client, "lithos_agent_list", active_since="last tuesday")
    assert failed["code"] == "invalid_input"


async def test_blank_agent_id_returns_invalid_input(client: Client) -> None:
    failed = await call(client, "lithos_agent_register", id="  ")
    assert failed["code"] == "invalid_input"
