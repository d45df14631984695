"""The FastMCP adapter: builds the server over a :class:`LithosApp` and runs it.

Every tool failure leaves here as one envelope, ``{"status": "error", "code", "message"}``,
produced by :class:`~lithos.mcp.envelope.ErrorEnvelope` and nowhere else.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")

from fastmcp import FastMCP
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.server.middleware.dereference import DereferenceRefsMiddleware
from fastmcp.tools import Tool
from fastmcp.utilities.json_schema import dereference_refs
from starlette.requests import Request
from starlette.responses import JSONResponse

from lithos import __version__
from lithos.errors import LithosError
from lithos.mcp.envelope import ErrorEnvelope
from lithos.mcp.host_guard import HostPortGuard
from lithos.mcp.registry import LithosTool, ToolRegistry
from lithos.mcp.tool_schemas import StoredToolSchemas
from lithos.mcp.tools import agents, coordination, edges, knowledge, retrieval, search, system
from lithos.runtime import freeze_long_lived_objects

if TYPE_CHECKING:
    import mcp.types as mt
    from fastmcp.tools.base import ToolResult
    from starlette.applications import Starlette

    from lithos.app import LithosApp
    from lithos.config import ServerConfig

log = logging.getLogger("lithos.mcp")

# Threads for the blocking work of tool handlers (asyncio.to_thread): Python's own default,
# cores + 4. More only add GIL hand-offs: with 16 connections of mixed reads, full-text
# searches and claims, 16 threads served 12-40% fewer calls a second than 6 on two cores, and
# 16 concurrent writers were no faster with 16 than with 4 (their full-text commits are
# shared by the committer thread, not by waiting writers).
IO_THREADS = min(32, (os.cpu_count() or 1) + 4)
# The background work LithosApp.start deferred (the index check beside serving; the
# embedding worker, which first loads the model and the search matrices: ~0.9 s of CPU at
# 10,000 notes) begins once the server has answered its first tool call (and then been idle:
# BACKGROUND_IDLE_S), or this many seconds after it started serving, whichever comes first.
# On two cores those threads held the GIL and the cores while the MCP stack was imported and
# the tools were built, and the first call waited for them (bench/NOTES.md).
BACKGROUND_AT_LATEST_S = 2.0
# After the first answered tool call it waits until no request has been in flight this long:
# a client may follow its first call with another request at once (fastmcp's client lists
# the tools to check the result against the tool's output schema), which is then answered
# without the background threads sharing the two cores.
BACKGROUND_IDLE_S = 0.1

INSTRUCTIONS = """Lithos is a shared knowledge base and coordination service for agents.
Search before you write (lithos_search, mode=hybrid for natural language), read with
lithos_read, save durable knowledge with lithos_write (pass expected_version when updating to
avoid overwriting someone else's change), and divide work with lithos_task_* claims.
Every failure is {"status": "error", "code": ..., "message": ...}."""


class _ExpectedErrorFilter(logging.Filter):
    """FastMCP logs every exception a tool raises with a traceback; a LithosError is an
    expected outcome answered with an envelope, so it is logged at debug level instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, LithosError):
            log.debug("%s: %s", error.code, error.message)
            return False
        return True


logging.getLogger("fastmcp.server.server").addFilter(_ExpectedErrorFilter())


class _BackgroundStart(Middleware):
    """Begins the app's deferred background work (:meth:`LithosApp.begin_background`) once
    the first tool call is answered and no request has been in flight for
    :data:`BACKGROUND_IDLE_S`, or :data:`BACKGROUND_AT_LATEST_S` after :meth:`arm`, whichever
    comes first; once. Used on the event loop only."""

    def __init__(self, begin: Callable[[], None]) -> None:
        self._begin = begin
        self._begun = False
        self._answered = False
        self._in_flight = 0
        self._timer: asyncio.TimerHandle | None = None
        self._idle: asyncio.TimerHandle | None = None

    def arm(self) -> None:
        """Start the upper bound's clock (the server starts serving)."""
        if not self._begun and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(BACKGROUND_AT_LATEST_S, self._start)

    def disarm(self) -> None:
        """Forget the upper bound and any idle wait (the server stops serving)."""
        for timer in (self._timer, self._idle):
            if timer is not None:
                timer.cancel()
        self._timer = self._idle = None

    async def on_request(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        if self._begun:  # nothing left to wait for
            return await call_next(context)
        self._in_flight += 1
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        try:
            return await call_next(context)
        finally:
            self._in_flight -= 1
            if self._answered and not self._begun and self._in_flight == 0:
                # The answer is on its way before the threads start, and a request that
                # follows it at once is answered without them.
                loop = asyncio.get_running_loop()
                self._idle = loop.call_later(BACKGROUND_IDLE_S, self._start)

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        try:
            return await call_next(context)
        finally:
            self._answered = True

    def _start(self) -> None:
        if self._begun:
            return
        self._begun = True
        self.disarm()
        self._begin()


class _InputSchemas:
    """Each tool's input schema as tools/list shows it (``$ref`` inlined), for the MCP SDK's
    check of a call's Mcp-Param-* headers: dereferenced on the tool's first call rather than
    by a whole tools/list (~20 ms of CPU) before the server answers anything. Read and
    filled on the event loop only."""

    def __init__(self) -> None:
        self._raw: dict[str, dict[str, Any]] = {}
        self._ready: dict[str, dict[str, Any]] = {}

    def fill(self, tools: Iterable[Tool]) -> None:
        self._raw = {tool.name: tool.parameters for tool in tools}

    def __call__(self, name: str) -> dict[str, Any] | None:
        schema = self._ready.get(name)
        if schema is None and name in self._raw:
            schema = self._ready[name] = dereference_refs(self._raw[name])
        return schema


class _DereferencedTools(DereferenceRefsMiddleware):
    """FastMCP's inlining of ``$ref`` in the schemas that tools/list shows (some clients
    cannot follow one), done once per tool rather than on every tools/list: ~0.09 s of CPU
    over Lithos's tools, paid by each new session's listing and by the first call of a
    fastmcp client. A tool is known by its name and redone when the server holds another
    object under that name. Used on the event loop only."""

    def __init__(self) -> None:
        self._done: dict[str, tuple[Tool, Tool]] = {}

    async def on_list_tools(
        self,
        context: MiddlewareContext[mt.ListToolsRequest],
        call_next: CallNext[mt.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        shown = []
        for tool in await call_next(context):
            done = self._done.get(tool.name)
            if done is None or done[0] is not tool:
                done = self._done[tool.name] = (tool, await self._inlined(context, tool))
            shown.append(done[1])
        return shown

    async def _inlined(self, context: MiddlewareContext[mt.ListToolsRequest], tool: Tool) -> Tool:
        listed = tool.listed() if isinstance(tool, LithosTool) else None
        if listed is not None:
            return listed

        async def only(context: MiddlewareContext[mt.ListToolsRequest]) -> Sequence[Tool]:
            return [tool]

        (inlined,) = await super().on_list_tools(context, only)
        return inlined


def create_server(app: LithosApp) -> FastMCP:
    """A FastMCP server exposing every Lithos tool over ``app`` (which must be open). The
    background work ``app.start(defer_background=True)`` left waiting begins once the server
    has answered its first tool call, or :data:`BACKGROUND_AT_LATEST_S` after it started
    serving when none comes first."""
    input_schemas = _InputSchemas()
    background = _BackgroundStart(app.begin_background)

    @asynccontextmanager
    async def lifespan(server: FastMCP) -> AsyncIterator[dict[str, Any]]:
        # The tools as registered: no middleware, so no schema is dereferenced yet.
        input_schemas.fill(await server.list_tools(run_middleware=False))
        background.arm()
        try:
            yield {}
        finally:
            background.disarm()

    server: FastMCP = FastMCP(
        "lithos",
        instructions=INSTRUCTIONS,
        version=__version__,
        lifespan=lifespan,
        dereference_schemas=False,  # _DereferencedTools does it, once per tool
    )
    server.add_middleware(background)
    server.add_middleware(_DereferencedTools())
    # On the stateless 2026-07-28 streamable HTTP path the MCP SDK checks the Mcp-Param-*
    # headers of every tools/call with arguments against the tool's input schema, which it
    # otherwise gets by running the whole tools/list (every schema dereferenced: ~20 ms of
    # CPU a call). The tools are fixed once the server starts, so it looks them up here;
    # a name not found is one FastMCP answers as unknown anyway. FastMCP has no public
    # setter for this SDK hook.
    server._mcp_server.get_tool_input_schema = input_schemas
    server.add_middleware(ErrorEnvelope(app.files.root))
    stored = StoredToolSchemas(app.tool_schemas_path)
    tools = ToolRegistry(server, stored)
    for group in (knowledge, search, retrieval, edges, agents, coordination, system):
        group.register(tools, app)
    stored.save()

    @server.custom_route("/health", methods=["GET"])
    async def health(request: Request) -> JSONResponse:
        # degraded is 200: Lithos serves and repairs itself; a restart would only start the
        # repair over. failed and starting are 503 (docs/failure-modes.md).
        body = app.health()
        healthy = body["status"] in ("ok", "degraded")
        return JSONResponse(body, status_code=200 if healthy else 503)

    return server


def http_app(server: FastMCP, settings: ServerConfig, transport: str = "http") -> Starlette:
    """The ASGI app: streamable HTTP at /mcp plus legacy SSE at /sse (``transport="sse"``:
    SSE only), and /health.

    FastMCP's Host/Origin guard runs in front of every route in strict mode with the trusted
    hosts and origins of ``settings`` (DNS-rebinding protection): a request naming another
    site is refused with 421 (Host) or 403 (Origin) before any tool runs. FastMCP compares
    host names only, so :class:`HostPortGuard` in front of it compares the ports too.
    """
    guard: dict[str, Any] = {
        "host_origin_protection": True,
        "allowed_hosts": settings.trusted_hosts(),
        "allowed_origins": settings.trusted_origins(),
    }
    if transport == "sse":
        return _with_port_guard(server.http_app(path="/sse", transport="sse", **guard), settings)
    # One application/json body per POST instead of a one-event SSE stream (clients must
    # accept both); /sse is unaffected.
    app = server.http_app(
        path="/mcp", transport="http", json_response=settings.json_response, **guard
    )
    sse = server.http_app(path="/sse", transport="sse", **guard)
    known = {getattr(r, "path", None) for r in app.router.routes}
    app.router.routes.extend(r for r in sse.router.routes if getattr(r, "path", None) not in known)
    return _with_port_guard(app, settings)


def _with_port_guard(app: Starlette, settings: ServerConfig) -> Starlette:
    app.add_middleware(
        HostPortGuard,
        port=settings.port,
        allowed_hosts=settings.allowed_hosts,
        allowed_origins=settings.allowed_origins,
    )
    return app


async def serve(app: LithosApp, settings: ServerConfig) -> None:
    """Run the server until cancelled with the transport, address and trusted hosts of
    ``settings``. ``app`` must be started; background work it deferred
    (``start(defer_background=True)``) begins after the first answered tool call
    (:func:`create_server`)."""
    await run(create_server(app), settings)


async def run(server: FastMCP, settings: ServerConfig) -> None:
    """Run a built server until cancelled (``serve`` builds it over an app)."""
    transport, host, port = settings.transport, settings.host, settings.port
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(max_workers=IO_THREADS, thread_name_prefix="lithos-io")
    )
    if transport == "stdio":
        log.info("Lithos %s serving MCP over stdio", __version__)
        freeze_long_lived_objects()
        await server.run_stdio_async(show_banner=False)
        return
    import uvicorn

    base = f"http://{host}:{port}"
    if transport == "http":
        asgi = http_app(server, settings)
        endpoints = f"streamable HTTP at {base}/mcp, legacy SSE at {base}/sse"
    else:
        asgi = http_app(server, settings, transport="sse")
        endpoints = f"SSE at {base}/sse"
    # No access log: at log level warning uvicorn would still format each request's line
    # before the logger dropped it.
    config = uvicorn.Config(
        asgi, host=host, port=port, log_level="warning", lifespan="on", access_log=False
    )
    log.info("Lithos %s serving MCP: %s, health at %s/health", __version__, endpoints, base)
    freeze_long_lived_objects()
    await uvicorn.Server(config).serve()
