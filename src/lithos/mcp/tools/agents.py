"""Agent tools: lithos_agent_register, lithos_agent_info, lithos_agent_list."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from lithos.mcp.tools.types import AgentId, IsoTime

if TYPE_CHECKING:
    from lithos.app import LithosApp

Label = Annotated[str, Field(max_length=200)]


def register(server: FastMCP, app: LithosApp) -> None:
    @server.tool
    async def lithos_agent_register(
        id: AgentId,
        name: Label | None = None,
        type: Label | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Optional: describe yourself (agents are registered automatically on first use).
        `type` e.g. "claude-code", "openclaw", "custom". Registering again updates the fields
        you pass. Returns {success, created}."""
        return await app.agents.register(id, name, type, metadata)

    @server.tool
    async def lithos_agent_info(id: AgentId) -> dict[str, Any]:
        """One agent. Returns {id, name, type, first_seen_at, last_seen_at, metadata}.
        Errors: agent_not_found."""
        return await app.agents.info(id)

    @server.tool
    async def lithos_agent_list(
        type: Label | None = None, active_since: IsoTime | None = None
    ) -> dict[str, Any]:
        """Known agents, most recently seen first. `active_since` (ISO 8601) keeps agents
        seen at or after it. Returns {agents: [{id, name, type, last_seen_at}]}."""
        return await app.agents.list(type, active_since)
