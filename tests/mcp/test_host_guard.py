"""The port half of the DNS-rebinding guard, through the real HTTP app in memory."""

from __future__ import annotations

import httpx2 as httpx
import pytest

from lithos.app import LithosApp
from lithos.config import ServerConfig
from lithos.mcp.host_guard import split_host
from lithos.mcp.server import create_server, http_app


async def status(app: LithosApp, settings: ServerConfig, **headers: str) -> int:
    asgi = http_app(create_server(app), settings)
    transport = httpx.ASGITransport(app=asgi)
    base = f"http://127.0.0.1:{settings.port}"
    async with httpx.AsyncClient(transport=transport, base_url=base) as web:
        return (await web.get("/health", headers=headers)).status_code


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Host": "127.0.0.1:8765"}, 200),
        ({"Host": "localhost"}, 200),  # no port: the scheme's default, as proxies send it
        ({"Host": "[::1]:8765"}, 200),
        ({"Host": "127.0.0.1:8766"}, 421),
        ({"Host": "localhost:80"}, 421),
        ({"Host": "[::1]:9999"}, 421),
        ({"Host": "localhost:8765x"}, 421),
        ({"Origin": "http://localhost:8765"}, 200),
        ({"Origin": "http://127.0.0.1:3000"}, 403),  # another program's page on this machine
        ({"Origin": "http://localhost"}, 403),
    ],
)
async def test_a_host_or_loopback_origin_naming_another_port_is_refused(
    app: LithosApp, headers: dict[str, str], expected: int
):
    assert await status(app, ServerConfig(port=8765), **headers) == expected


async def test_allowed_hosts_and_origins_may_name_a_port_or_any_port(app: LithosApp):
    settings = ServerConfig(
        port=8765,
        allowed_hosts=["lithos:*", "proxy.internal:443"],
        allowed_origins=["http://localhost:*"],
    )
    assert await status(app, settings, Host="lithos:9000") == 200
    assert await status(app, settings, Host="proxy.internal:443") == 200
    assert await status(app, settings, Host="proxy.internal:444") == 421
    assert await status(app, settings, Host="other:9000") == 421
    assert await status(app, settings, Origin="http://localhost:3000") == 200
    plain = ServerConfig(port=8765, allowed_hosts=["lithos"])
    assert await status(app, plain, Host="lithos:8765") == 200
    assert await status(app, plain, Host="lithos:9000") == 421


def test_host_values_split_into_name_and_port():
    assert split_host("[::1]:8765") == ("::1", 8765)
    assert split_host("LocalHost") == ("localhost", None)
    assert split_host("lithos:*", wildcard=True) == ("lithos", "*")
    assert split_host("lithos:*") == ("lithos", -1)
    assert split_host("::1") == ("::1", None)  # a bare IPv6 address has no port
