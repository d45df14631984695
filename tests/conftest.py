"""Fixtures: a real app on a temporary data directory, an in-memory MCP client over it, and
a real coordination database."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.mcp.server import create_server
from lithos.store.coordination import COORDINATION_MIGRATIONS
from lithos.store.sqlite import Database
from tests.support import make_app

# Settings from the developer's shell must not leak into tests.
for _name in [n for n in os.environ if n.startswith("LITHOS_")]:
    del os.environ[_name]


_connect = socket.socket.connect


def _loopback_only(sock: socket.socket, address: object) -> None:
    """Tests never need the network: any connection off this machine fails loudly."""
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        host = str(address[0])  # type: ignore[index]
        if host != "localhost" and not ipaddress.ip_address(host).is_loopback:
            raise RuntimeError(f"test tried to reach the network: {address!r}")
    _connect(sock, address)  # type: ignore[arg-type]


socket.socket.connect = _loopback_only  # type: ignore[method-assign]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / ".lithos" / "coordination.db"


@pytest.fixture
def db(db_path: Path) -> Iterator[Database]:
    database = Database(db_path, COORDINATION_MIGRATIONS)
    yield database
    database.close()


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


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fault-full",
        action="store_true",
        default=False,
        help="run the long form of the fault suite (more kill -9 cycles)",
    )
