"""The ``lithos`` command: serve, stats, search, reindex, reembed, migrate, import,
validate, doctor, adopt, audit."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import threading
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from lithos import __version__
from lithos.app import LithosApp
from lithos.cli import audit
from lithos.cli.doctor import render, run_checks
from lithos.cli.logs import LOG_FORMAT, file_log
from lithos.cli.migrations import migration_report, render_migration
from lithos.cli.progress import ProgressBar
from lithos.cli.tables import render_stats
from lithos.config import LithosConfig, load_config
from lithos.errors import DataDirNotFound, LithosError
from lithos.runtime import limit_malloc_arenas, resume_collection
from lithos.services.reembed import reembed
from lithos.services.search import Mode
from lithos.services.validation import validate

log = logging.getLogger("lithos.cli")


# Commands that read an existing knowledge base: a data directory that does not exist is a
# mistyped path, not a request to start an empty one (only `serve` creates one).
NEEDS_EXISTING_DATA = frozenset(
    {"stats", "search", "reindex", "reembed", "migrate", "validate", "adopt", "audit"}
)
EXIT_PROBLEMS = 1
EXIT_ERROR = 2


def _global_options(in_subcommand: bool) -> argparse.ArgumentParser:
    """Options every command takes, before or after the command name.

    The copy on each subcommand defaults to SUPPRESS so that it only sets a value the user
    actually typed there, and never hides one typed before the command.
    """
    options = argparse.ArgumentParser(add_help=False)
    unset = argparse.SUPPRESS if in_subcommand else None
    options.add_argument(
        "--data-dir", type=Path, default=unset, help="data directory (default ./data)"
    )
    options.add_argument(
        "--config", type=Path, default=unset, help="config file (default <data-dir>/config.yaml)"
    )
    options.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS if in_subcommand else False,
        help="debug logging",
    )
    return options


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lithos", description=__doc__, parents=[_global_options(in_subcommand=False)]
    )
    parser.add_argument("--version", action="version", version=f"lithos {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    shared = [_global_options(in_subcommand=True)]

    serve = commands.add_parser("serve", help="run the MCP server", parents=shared)
    serve.add_argument("--transport", choices=["stdio", "http", "sse"])
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--no-watch", action="store_true", help="do not watch knowledge/ for edits")

    stats = commands.add_parser("stats", help="knowledge-base counts", parents=shared)
    stats.add_argument("--json", action="store_true", help="print JSON for scripts")

    search = commands.add_parser("search", help="search the knowledge base", parents=shared)
    search.add_argument("query")
    search.add_argument("--semantic", action="store_true", help="semantic search")
    search.add_argument("--mode", choices=["fulltext", "semantic", "hybrid"])
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--json", action="store_true", help="print JSON for scripts")

    reindex = commands.add_parser(
        "reindex", help="verify and repair every index from the files", parents=shared
    )
    reindex.add_argument("--clear", action="store_true", help="rebuild every index from scratch")
    reindex.add_argument("--no-embed", action="store_true", help="leave embedding to the server")

    commands.add_parser(
        "reembed",
        help="embed every chunk in the configured model's space now, then retire the old space",
        parents=shared,
    )

    migrate = commands.add_parser(
        "migrate",
        help="bring every note's frontmatter to the current schema version",
        parents=shared,
    )
    migrate.add_argument(
        "--dry-run", action="store_true", help="show what would change in each file; change nothing"
    )
    migrate.add_argument("--json", action="store_true", help="print JSON for scripts")

    commands.add_parser("validate", help="report broken links and bad frontmatter", parents=shared)

    doctor = commands.add_parser(
        "doctor", help="check the installation and data directory; say how to fix", parents=shared
    )
    doctor.add_argument("--json", action="store_true", help="print JSON for scripts")
    doctor.add_argument("--host", help="the address `lithos serve` would listen on")
    doctor.add_argument("--port", type=int, help="the port `lithos serve` would listen on")
    importer = commands.add_parser(
        "import",
        help="copy a folder of Markdown files into the knowledge base and index them",
        parents=shared,
    )
    importer.add_argument("folder", type=Path, help="folder to import (only read, never changed)")
    importer.add_argument("--into", default="", help="folder of the knowledge base to copy into")
    adopt = commands.add_parser(
        "adopt",
        help="write ids into hand-written files (which Lithos otherwise never changes)",
        parents=shared,
    )
    adopt.add_argument(
        "path", nargs="?", help="a note file or folder inside knowledge/ (default: every file)"
    )
    audit.add_parser(commands, shared)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command != "serve":  # serve imports the MCP stack first (_run_server)
        resume_collection()
    level = logging.DEBUG if args.verbose else logging.INFO
    logging.basicConfig(level=level, stream=sys.stderr, format=LOG_FORMAT)
    logging.getLogger().setLevel(level)  # also when a host (pytest) configured logging first
    try:
        config = load_config(args.data_dir, args.config, _overrides(args))
        if args.command in NEEDS_EXISTING_DATA and not config.data_dir.is_dir():
            raise DataDirNotFound(
                f"no knowledge base at {config.data_dir}: check --data-dir (or LITHOS_DATA_DIR); "
                "`lithos serve` creates a new one"
            )
        handler = {
            "serve": _serve,
            "stats": _stats,
            "search": _search,
            "reindex": _reindex,
            "reembed": _reembed,
            "migrate": _migrate,
            "validate": _validate,
            "doctor": _doctor,
            "adopt": _adopt,
            "audit": audit.run,
            "import": _import,
        }[args.command]
        return handler(config, args)
    except LithosError as exc:
        print(f"lithos: {exc.code}: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
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
    limit_malloc_arenas()
    created = not config.data_dir.exists()
    with file_log(config.data_dir) as path:
        if created:
            log.warning("no knowledge base at %s: creating a new, empty one", config.data_dir)
        log.info("logging to %s", path)
        return _run_server(config)


def _run_server(config: LithosConfig) -> int:
    # The MCP stack (FastMCP, the MCP SDK, uvicorn) is imported while the stores open, which
    # mostly waits on the disk and SQLite, so that the first call is answered sooner. The
    # garbage collector stays off (lithos.cli.entry) until both are done, and is on again
    # before start(), whose index check reads every file when the catalog must be filled.
    stack = threading.Thread(target=_import_mcp_stack, name="lithos-import", daemon=True)
    stack.start()
    try:
        app = LithosApp(config).open()
    finally:
        stack.join()
        resume_collection()
    try:
        app.start(check_in_background=config.index.check_in_background, defer_background=True)
        from lithos.mcp.server import serve

        asyncio.run(serve(app, config.server))
    finally:
        app.close()
    return 0


def _import_mcp_stack() -> None:
    """Import what serving needs; a failure is raised again by the import that needs it."""
    try:
        import uvicorn  # noqa: F401

        import lithos.mcp.server  # noqa: F401
    except Exception:
        log.debug("importing the MCP stack ahead failed", exc_info=True)


def _stats(config: LithosConfig, args: argparse.Namespace) -> int:
    app = LithosApp(config).open(read_only=True)
    try:
        stats = asyncio.run(app.stats())
    finally:
        app.close()
    if args.json:
        _print(stats)
    else:
        print(render_stats(stats))
    return 0


def _search(config: LithosConfig, args: argparse.Namespace) -> int:
    mode: Mode = args.mode or ("semantic" if args.semantic else "fulltext")
    app = LithosApp(config).open(read_only=True)
    try:
        result = asyncio.run(app.search.search(args.query, mode=mode, limit=args.limit))
    finally:
        app.close()
    if args.json:
        _print(result)
        return 0
    for hit in result["results"]:
        score = hit.get("similarity", hit.get("score"))
        print(f"{score:.4f}  {hit['path']}  {hit['title']}")
        print(f"        {' '.join(hit['snippet'].split())[:160]}")
    if result.get("pending_chunks"):
        print(f"({result['pending_chunks']} chunks not embedded yet)", file=sys.stderr)
    return 0


def _reindex(config: LithosConfig, args: argparse.Namespace) -> int:
    with file_log(config.data_dir):
        return _reindex_logged(config, args)


def _reindex_logged(config: LithosConfig, args: argparse.Namespace) -> int:
    app = LithosApp(config).open()
    try:
        files = ProgressBar("files")
        report = app.reconcile(clear=args.clear, progress=files)
        files.finish()
        if not args.no_embed:
            app.embedding.start()
            _wait_for_embeddings(app)
        _print(report.as_dict())
    finally:
        app.close()
    if report.problems:
        print(
            f"lithos: {len(report.problems)} file(s) not indexed (see `problems`, "
            "or run `lithos validate`)",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    return 0


def _reembed(config: LithosConfig, args: argparse.Namespace) -> int:
    with file_log(config.data_dir):
        app = LithosApp(config).open()
        try:
            app.reconcile()  # the chunks to embed are those of the files as they are now
            chunks = ProgressBar("reembed")
            report = reembed(
                app.vectors, app.embedder, config.search.embedding_batch_size, progress=chunks
            )
            chunks.finish()
        finally:
            app.close()
    _print(report.as_dict())
    return 0


def _migrate(config: LithosConfig, args: argparse.Namespace) -> int:
    # A dry run reads the files only, so it works beside a running server; applying writes
    # them and refuses (index_locked) while a server owns the indexes.
    app = LithosApp(config).open(read_only=args.dry_run)
    try:
        run = app.migrator.plan() if args.dry_run else app.migrator.apply()
    finally:
        app.close()
    if args.json:
        _print(migration_report(run))
    else:
        print(render_migration(run), end="")
    verb = "would be migrated" if args.dry_run else "migrated"
    print(
        f"{len(run.notes)} of {run.files} file(s) {verb} to schema version "
        f"{run.current_version}; {len(run.skipped)} skipped",
        file=sys.stderr,
    )
    return 0


def _import(config: LithosConfig, args: argparse.Namespace) -> int:
    if not config.data_dir.exists():
        log.warning("no knowledge base at %s: creating a new, empty one", config.data_dir)
    app = LithosApp(config).open()
    try:
        files = ProgressBar("files")
        report = app.importer.import_folder(args.folder, args.into, progress=files)
        files.finish()
    finally:
        app.close()
    _print(
        {
            "files": report.files,
            "imported": report.imported,
            "in_place": report.in_place,
            "seconds": report.seconds,
            "notes_per_s": report.notes_per_s,
            "skipped": [asdict(skipped) for skipped in report.skipped],
        }
    )
    if report.imported:
        print(
            "lithos: the imported notes are searchable by full text now; the server embeds "
            "them for semantic search in the background",
            file=sys.stderr,
        )
    return EXIT_PROBLEMS if report.skipped else 0


def _validate(config: LithosConfig, args: argparse.Namespace) -> int:
    app = LithosApp(config).open(read_only=True)
    try:
        problems = validate(app.files, app.catalog, app.max_file_bytes)
    finally:
        app.close()
    for problem in problems:
        print(f"{problem.path}: {problem.kind}: {problem.message}")
    print(f"{len(problems)} problem(s)", file=sys.stderr)
    return EXIT_PROBLEMS if problems else 0


def _doctor(config: LithosConfig, args: argparse.Namespace) -> int:
    checks = run_checks(config)
    if args.json:
        print(json.dumps([asdict(check) for check in checks], indent=2))
    else:
        print(render(checks))
    return EXIT_PROBLEMS if any(check.status == "fail" for check in checks) else 0


def _adopt(config: LithosConfig, args: argparse.Namespace) -> int:
    app = LithosApp(config).open()
    try:
        app.reconcile()
        adopted = app.indexer.adopt(_files_under(app, args.path))
    finally:
        app.close()
    for path in adopted:
        print(path)
    print(f"{len(adopted)} file(s) adopted", file=sys.stderr)
    return 0


def _files_under(app: LithosApp, path: str | None) -> list[str]:
    """Every note file at or below ``path`` (a file or a folder; None: the whole base)."""
    if path and path.strip().endswith(".md"):
        return [app.files.check_file(path)]
    folder = app.files.check_dir(path)
    prefix = f"{folder}/" if folder else ""
    return [info.path for info in app.files.scan() if info.path.startswith(prefix)]


def _wait_for_embeddings(app: LithosApp) -> None:
    total = app.vectors.pending_count(migrate=app.embedding.migrate)
    if not total:
        return
    chunks = ProgressBar("embedding")
    chunks(0, total)
    while not app.embedding.wait_idle(timeout=0.5):
        left = app.vectors.pending_count(migrate=app.embedding.migrate)
        chunks(max(0, total - left), total)
    chunks(total, total)
    chunks.finish()


def _print(payload: dict[str, Any]) -> None:
    print(json.dumps(payload, indent=2, default=str))


if __name__ == "__main__":
    raise SystemExit(main())
