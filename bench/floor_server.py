"""``lithos serve --transport http`` plus one trivial tool, for benchmarks only.

``bench_noop`` returns a constant through the same FastMCP stack, middleware and transport as
every Lithos tool, so its server CPU per call is the protocol floor the real tools are compared
with (bench/load.py). The product never registers it.

    python bench/floor_server.py --data-dir DIR --port PORT [--json-response] [--no-embed]

``--no-embed`` leaves the embedding worker off, so that the server's CPU time counts only the
calls (chunks stay pending).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from typing_extensions import TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lithos.app import LithosApp
from lithos.config import load_config
from lithos.mcp.server import create_server, run
from lithos.runtime import limit_malloc_arenas


class Noop(TypedDict):
    ok: bool


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--json-response", action="store_true")
    parser.add_argument("--no-embed", action="store_true", help="no embedding worker")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    limit_malloc_arenas()
    overrides = {
        "server.watch_files": False,
        "server.transport": "http",
        "server.host": "127.0.0.1",
        "server.port": args.port,
        "server.json_response": args.json_response,
    }
    config = load_config(args.data_dir, overrides=overrides)
    app = LithosApp(config).open()
    try:
        app.start(watch=False, embed=not args.no_embed)
        server = create_server(app)

        @server.tool(annotations={"readOnlyHint": True})
        def bench_noop() -> Noop:
            """Does nothing: the cost of one tool call through the stack."""
            return {"ok": True}

        asyncio.run(run(server, config.server))
    except KeyboardInterrupt:
        pass
    finally:
        app.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
