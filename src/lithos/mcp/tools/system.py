"""System tools: lithos_stats."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastmcp import FastMCP

if TYPE_CHECKING:
    from lithos.app import LithosApp


def register(server: FastMCP, app: LithosApp) -> None:
    @server.tool
    async def lithos_stats() -> dict[str, Any]:
        """Knowledge-base counts: documents, chunks, agents, active_tasks, open_claims, tags,
        plus per-index counts (`indexes`: documents in each index, embedded and pending
        chunks) so you can tell whether search is fully caught up."""
        return await app.stats()
