"""Agent tools: lithos_agent_register, lithos_agent_info, lithos_agent_list."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, cast

from pydantic import Field

from lithos.mcp.registry import ToolRegistry
from lithos.mcp.tools.results import AgentInfo, AgentList, AgentRegistered
from lithos.mcp.tools.types import READ_ONLY, AgentId, IsoTime, tool_hints

if TYPE_CHECKING:
    from lithos.app import LithosApp

Label = Annotated[str, Field(max_length=200)]


def register(server: ToolRegistry, app: LithosApp) -> None:
    @server.tool(annotations=tool_hints(destructive=True, idempotent=True))
    async def lithos_agent_register(
        id: AgentId,
        name: Annotated[Label | None, Field(description="a display name")] = None,
        type: Annotated[
            Label | None, Field(description="kind of agent, e.g. 'claude-code', 'openclaw'")
        ] = None,
        metadata: Annotated[
            dict[str, Any] | None, Field(description="free-form facts about you; replaces the old")
        ] = None,
    ) -> AgentRegistered:
        """Optional: describe yourself (agents are registered automatically on first use).
        `type` e.g. "claude-code", "openclaw", "custom". Registering again updates the fields
        you pass. Returns {success, created}."""
        return cast(AgentRegistered, await app.agents.register(id, name, type, metadata))

    @server.tool(annotations=READ_ONLY)
    async def lithos_agent_info(
        id: Annotated[AgentId, Field(description="the agent's id")],
    ) -> AgentInfo:
        """One agent. Returns {id, name, type, first_seen_at, last_seen_at, metadata}.
        Errors: agent_not_found."""
        return cast(AgentInfo, await app.agents.info(id))

    @server.tool(annotations=READ_ONLY)
    async def lithos_agent_list(
        type: Annotated[Label | None, Field(description="only agents of this type")] = None,
        active_since: Annotated[
            IsoTime | None, Field(description="ISO 8601: only agents seen at or after it")
        ] = None,
    ) -> AgentList:
        """Known agents, most recently seen first. `active_since` (ISO 8601) keeps agents
        seen at or after it. Returns {agents: [{id, name, type, last_seen_at}]}."""
        return cast(AgentList, await app.agents.list(type, active_since))
