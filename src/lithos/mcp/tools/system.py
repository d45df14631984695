"""System tools: lithos_stats."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from lithos.mcp.registry import ToolRegistry
from lithos.mcp.tools.results import StatsResult
from lithos.mcp.tools.types import READ_ONLY

if TYPE_CHECKING:
    from lithos.app import LithosApp


def register(server: ToolRegistry, app: LithosApp) -> None:
    @server.tool(annotations=READ_ONLY)
    async def lithos_stats() -> StatsResult:
        """Knowledge-base counts: documents, chunks, agents, active_tasks, open_claims, tags,
        plus per-index counts (`indexes`: documents in each index, embedded and pending
        chunks, pending index updates) so you can tell whether search is fully caught up, and
        `stores`: each store's state (ok, rebuilding, failed with a reason)."""
        return cast(StatsResult, await app.stats())
