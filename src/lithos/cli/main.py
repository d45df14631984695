"""The ``lithos`` command: serve, stats, search, reindex, validate."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lithos.app import LithosApp
from lithos.config import LithosConfig, load_config
from lithos.errors import LithosError
from lithos.runtime import limit_malloc_arenas
from lithos.services.indexing import Progress
from lithos.services.search import Mode
from lithos.services.validation import validate


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lithos", description=__doc__)
    parser.add_argument("--data-dir", type=Path, help="data directory (default ./data)")
    parser.add_argument("--config", type=Path, help="config file (default <data-dir>/config.yaml)")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the MCP server")
    serve.add_argument("--transport", choices=["stdio", "http", "sse"])
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--no-watch", action="store_true", help="do not watch knowledge/ for edits")

    commands.add_parser("stats", help="print knowledge-base statistics as JSON")

    search = commands.add_parser("search", help="search the knowledge base")
    search.add_argument("query")
    search.add_argument("--semantic", action="store_true", help="semantic search")
    search.add_argument("--mode", choices=["fulltext", "semantic", "hybrid"])
    search.add_argument("--limit", type=int, default=10)

    reindex = commands.add_parser("reindex", help="verify and repair every index from the files")
    reindex.add_argument("--clear", action="store_true", help="rebuild every index from scratch")
    reindex.add_argument("--no-embed", action="store_true", help="leave embedding to the server")

    commands.add_parser("validate", help="report broken links and bad frontmatter")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        config = load_config(args.data_dir, args.config, _overrides(args))
        handler = {
            "serve": _serve,
            "stats": _stats,
            "search": _search,
            "reindex": _reindex,
            "validate": _validate,
        }[args.command]
        return handler(config, args)
    except LithosError as exc:
        print(f"lithos: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for flag, key in (
        ("transport", "server.transport"),
        ("host", "server.host"),
        ("port", "server.port"),
    ):
        value = getattr(args, flag, None)
        if value is not None:
            overrides[key] = value
    if getattr(args, "no_watch", False):
        overrides["server.watch_files"] = False
    return overrides


def _serve(config: LithosConfig, args: argparse.Namespace) -> int:
    from lithos.mcp.server import serve

    limit_malloc_arenas()
    app = LithosApp(config).open()
    try:
        app.start()
        cfg = config.server
        asyncio.run(serve(app, cfg.transport, cfg.host, cfg.port))
    finally:
        app.close()
    return 0


def _stats(config: LithosConfig, args: argparse.Namespace) -> int:
    app = LithosApp(config).open(read_only=True)
    try:
        _print(asyncio.run(app.stats()))
    finally:
        app.close()
    return 0


def _search(config: LithosConfig, args: argparse.Namespace) -> int:
    mode: Mode = args.mode or ("semantic" if args.semantic else "fulltext")
    app = LithosApp(config).open(read_only=True)
    try:
        result = asyncio.run(app.search.search(args.query, mode=mode, limit=args.limit))
    finally:
        app.close()
    for hit in result["results"]:
        score = hit.get("similarity", hit.get("score"))
        print(f"{score:.4f}  {hit['path']}  {hit['title']}")
        print(f"        {' '.join(hit['snippet'].split())[:160]}")
    if result.get("pending_chunks"):
        print(f"({result['pending_chunks']} chunks not embedded yet)", file=sys.stderr)
    return 0


def _reindex(config: LithosConfig, args: argparse.Namespace) -> int:
    app = LithosApp(config).open()
    try:
        report = app.reconcile(clear=args.clear, progress=_progress("files"))
        if not args.no_embed:
            app.embedding.start()
            _wait_for_embeddings(app)
        _print(report.as_dict())
    finally:
        app.close()
    return 0


def _validate(config: LithosConfig, args: argparse.Namespace) -> int:
    app = LithosApp(config).open(read_only=True)
    try:
        problems = validate(app.files, app.catalog, app.max_file_bytes)
    finally:
        app.close()
    for problem in problems:
        print(f"{problem.path}: {problem.kind}: {problem.message}")
    print(f"{len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


def _wait_for_embeddings(app: LithosApp) -> None:
    report = _progress("chunks embedded")
    total = app.vectors.pending_count()
    while not app.embedding.wait_idle(timeout=1.0):
        pending = app.vectors.pending_count()
        report(max(0, total - pending), total)
    report(total, total)


def _progress(unit: str) -> Progress:
    """A progress line on a terminal; silent when stderr is a file or a pipe."""
    interactive = sys.stderr.isatty()

    def show(done: int, total: int) -> None:
        if interactive and (done == total or done % 50 == 0):
            end = "\n" if done >= total else ""
            print(f"\r{unit}: {done}/{total}", end=end, file=sys.stderr, flush=True)

    return show


def _print(payload: dict[str, Any]) -> None:
    print(json.dumps(payload, indent=2, default=str))


if __name__ == "__main__":
    raise SystemExit(main())
