"""Fixtures for MCP scenarios that need time to pass."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.mcp.server import create_server
from tests.services.conftest import Clock
from tests.support import make_app


@pytest.fixture
async def scenario(
    data_dir: Path, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[LithosApp, Client, Clock]]:
    """A started app on a settable clock, with an in-memory MCP client; settings from the
    test's ``indirect`` parameter."""
    clock = Clock()
    app = make_app(data_dir, clock=clock, **getattr(request, "param", {}))
    app.start(watch=False)
    try:
        async with Client(create_server(app)) as client:
            yield app, client, clock
    finally:
        app.close()
