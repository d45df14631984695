"""Fixtures: a real app on a temporary data directory and an in-memory MCP client over it."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.mcp.server import create_server
from tests.support import make_app

# Settings from the developer's shell must not leak into tests.
for _name in [n for n in os.environ if n.startswith("LITHOS_")]:
    del os.environ[_name]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def app(data_dir: Path) -> Iterator[LithosApp]:
    lithos = make_app(data_dir)
    lithos.start(watch=False)
    try:
        yield lithos
    finally:
        lithos.close()


@pytest.fixture
async def client(app: LithosApp) -> AsyncIterator[Client]:
    async with Client(create_server(app)) as connected:
        yield connected
