"""A bare FastMCP server with one trivial tool, for the start-up floor (bench/perf.py).

It imports the same MCP stack as Lithos (FastMCP, the MCP SDK, uvicorn) and serves streamable
HTTP the same way, with a ``lithos_search`` tool that returns nothing and a ``/health`` route,
so that the time from spawning it to the answer of its first tool call is what any FastMCP
server costs on this machine before doing any work of its own.

    python bench/bare_server.py --port PORT
"""

from __future__ import annotations

import argparse
import asyncio

import uvicorn
from fastmcp import FastMCP
from starlette.requests import Request
from starlette.responses import JSONResponse
from typing_extensions import TypedDict


class Found(TypedDict):
    results: list[str]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    server: FastMCP = FastMCP("bare")

    @server.tool
    def lithos_search(query: str, limit: int = 5) -> Found:
        """Find nothing."""
        return {"results": []}

    @server.custom_route("/health", methods=["GET"])
    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    app = server.http_app()
    config = uvicorn.Config(app, host="127.0.0.1", port=args.port, log_level="warning")
    asyncio.run(uvicorn.Server(config).serve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
