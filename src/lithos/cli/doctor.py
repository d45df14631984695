"""``lithos doctor``: what is wrong with this installation and data directory, and how to fix it.

Each check gives a :class:`Check`; ``fail`` means Lithos will not work as configured, ``warn``
that it works but something wants attention. The command exits 1 when any check fails.
"""

from __future__ import annotations

import asyncio
import json
import platform
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Literal

from lithos import __version__
from lithos.app import LithosApp
from lithos.config import LithosConfig
from lithos.errors import LithosError, StateCorrupt
from lithos.store.embedder import MODEL_DIR, verify_model_files

Status = Literal["ok", "warn", "fail"]
PACKAGES = ("fastmcp-slim", "mcp", "onnxruntime", "tantivy", "numpy")


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""


def run_checks(config: LithosConfig) -> list[Check]:
    checks = [check_versions(), check_data_dir(config), check_model()]
    if config.data_dir.is_dir():
        checks += check_indexes(config)
    checks.append(check_port(config.server.host, config.server.port))
    return checks


def check_versions() -> Check:
    found = [f"lithos {__version__}", f"python {platform.python_version()}"]
    for name in PACKAGES:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            return Check("versions", "fail", f"{name} is not installed", "reinstall Lithos")
    return Check("versions", "ok", ", ".join(found))


def check_data_dir(config: LithosConfig) -> Check:
    data = config.data_dir
    if not data.is_dir():
        return Check(
            "data dir",
            "fail",
            f"{data} does not exist",
            "pass --data-dir (or LITHOS_DATA_DIR) pointing at your data, "
            "or run `lithos serve` to create a new knowledge base there",
        )
    if not config.knowledge_dir.is_dir():
        return Check(
            "data dir",
            "warn",
            f"{data} has no {config.storage.knowledge_subdir}/ folder yet",
            "`lithos serve` creates it; notes go there",
        )
    return Check("data dir", "ok", str(data))


def check_model() -> Check:
    try:
        verify_model_files()
    except LithosError as exc:
        return Check(
            "model", "fail", exc.message, "reinstall Lithos (pip install --force-reinstall)"
        )
    return Check("model", "ok", f"all-MiniLM-L6-v2 int8, sha256 verified ({MODEL_DIR})")


def check_indexes(config: LithosConfig) -> list[Check]:
    try:
        app = LithosApp(config).open(read_only=True)
    except StateCorrupt as exc:
        return [Check("state", "fail", exc.message, "restore it from a backup")]
    except LithosError as exc:
        hint = "run `lithos reindex` (a starting server also repairs it by itself)"
        return [Check("indexes", "fail", exc.message, hint)]
    try:
        stats = asyncio.run(app.stats())
    finally:
        app.close()
    counts = stats["indexes"]
    documents = counts["catalog_documents"]
    if documents is None:
        hint = "run `lithos reindex` (a starting server also repairs it by itself)"
        return [Check("catalog", "fail", "the catalog cannot be read", hint)]
    checks = [Check("catalog", "ok", f"{documents} notes")]
    for name, key in (
        ("full-text index", "fulltext_documents"),
        ("vector index", "vector_documents"),
    ):
        if counts[key] == documents:
            checks.append(Check(name, "ok", f"{counts[key]} notes"))
        else:
            checks.append(
                Check(
                    name,
                    "warn",
                    f"{counts[key]} notes, the catalog has {documents}",
                    "run `lithos reindex` (a running server repairs it at its next start)",
                )
            )
    pending = counts["pending_chunks"]
    checks.append(
        Check("embeddings", "ok", f"{counts['embedded_chunks']} chunks embedded")
        if not pending
        else Check(
            "embeddings",
            "warn",
            f"{pending} chunks wait to be embedded (semantic search misses them until then)",
            "leave `lithos serve` running, or run `lithos reindex`",
        )
    )
    if stats["problems"]:
        checks.append(
            Check(
                "files",
                "warn",
                f"{stats['problems']} files could not be indexed",
                "run `lithos validate` to see which and why",
            )
        )
    return checks


def check_port(host: str, port: int) -> Check:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            pass
        else:
            return Check("port", "ok", f"{host}:{port} is free")
    if _lithos_answers(host, port):
        return Check("port", "ok", f"{host}:{port} is served by a running Lithos")
    return Check(
        "port",
        "fail",
        f"{host}:{port} is in use by another program",
        "stop it, or serve on another port: `lithos serve --port N` (or LITHOS_PORT)",
    )


def _lithos_answers(host: str, port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/health", timeout=2) as response:
            body = json.loads(response.read())
    except (OSError, urllib.error.URLError, ValueError):
        return False
    return isinstance(body, dict) and "embedding_worker" in body.get("components", {})


def render(checks: list[Check]) -> str:
    lines = []
    for check in checks:
        lines.append(f"{check.status:<4}  {check.name}: {check.detail}")
        if check.fix:
            lines.append(f"      fix: {check.fix}")
    return "\n".join(lines)
