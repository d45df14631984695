"""The port half of the DNS-rebinding guard.

FastMCP's Host/Origin guard compares host *names* only: it drops the port from the ``Host``
header and from every allowed pattern, and accepts any loopback ``Origin`` for a loopback
``Host`` whatever its port. So a page served by another program on this machine
(``http://localhost:3000``) could call Lithos on ``localhost:8765``. This guard, in front of
FastMCP's, also requires the port, as the MCP SDK's ``TransportSecuritySettings`` does
(``host:port`` exactly, or ``host:*`` for any port):

- a ``Host`` with a port must name the port Lithos listens on, or match an
  ``allowed_hosts`` entry ``name:port`` / ``name:*`` (``*`` allows everything); a ``Host``
  without a port (the scheme's default, as proxies send it) is left to the name check;
- an ``Origin`` naming a loopback host must carry that same port, or be listed in
  ``allowed_origins`` (``http://localhost:*`` allows any port).
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK = ("localhost", "127.0.0.1", "::1")


class HostPortGuard:
    """ASGI middleware refusing a ``Host`` (421) or loopback ``Origin`` (403) that names a
    port Lithos does not serve."""

    def __init__(
        self,
        app: ASGIApp,
        port: int,
        allowed_hosts: Sequence[str] = (),
        allowed_origins: Sequence[str] = (),
    ) -> None:
        self.app = app
        self.port = port
        self.allowed_hosts = tuple(h.strip().lower() for h in allowed_hosts)
        self.allowed_origins = tuple(o.strip().lower().rstrip("/") for o in allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            ports = self._served_ports(scope)
            if not self.host_allowed(headers.get("host", ""), ports):
                await Response("Misdirected Request", status_code=421)(scope, receive, send)
                return
            origin = headers.get("origin")
            if origin and not self.origin_allowed(origin, ports):
                await Response("Forbidden Origin", status_code=403)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _served_ports(self, scope: Scope) -> set[int]:
        """The configured port and the one this request actually arrived on."""
        server = scope.get("server")
        return {self.port, server[1]} if server and server[1] else {self.port}

    def host_allowed(self, host: str, ports: set[int]) -> bool:
        name, port = split_host(host)
        if port is None or port in ports:
            return True
        for allowed in self.allowed_hosts:
            if allowed == "*":
                return True
            pattern, allowed_port = split_host(allowed, wildcard=True)
            if allowed_port in ("*", port) and fnmatchcase(name, pattern):
                return True
        return False

    def origin_allowed(self, origin: str, ports: set[int]) -> bool:
        try:
            parts = urlsplit(origin.strip().lower())
            host, port = parts.hostname, parts.port
        except ValueError:
            return True  # not a URL ("null"): FastMCP's guard refuses it
        if host not in LOOPBACK:
            return True  # another name: FastMCP's guard compares the whole origin
        if port is None:
            port = {"http": 80, "https": 443}.get(parts.scheme)
        if port in ports:
            return True
        normalised = origin.strip().lower().rstrip("/")
        return any(
            allowed == "*" or fnmatchcase(normalised, allowed) for allowed in self.allowed_origins
        )


def split_host(value: str, wildcard: bool = False) -> tuple[str, int | str | None]:
    """``(name, port)`` of a ``Host`` value: ``[::1]:8765`` -> ``("::1", 8765)``; the port is
    None when absent, -1 when unreadable (no port matches it), and may be ``"*"`` when
    ``wildcard``."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        name, rest = (value[1:end], value[end + 1 :]) if end != -1 else (value, "")
        port_text = rest[1:] if rest.startswith(":") else None
    elif value.count(":") == 1:
        name, port_text = value.split(":")
    else:
        name, port_text = value, None
    if port_text is None or port_text == "":
        return name, None
    if wildcard and port_text == "*":
        return name, "*"
    return name, int(port_text) if port_text.isdigit() else -1
