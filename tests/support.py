"""Helpers shared by the tests: calling tools and building apps over a temporary data dir."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from lithos.app import LithosApp
from lithos.config import load_config
from lithos.domain.embedding import Embedder
from lithos.store.markdown import KnowledgeFiles
from tests.fakes import HashingEmbedder


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool and return its JSON object, for successes and error envelopes alike."""
    result = await client.call_tool(tool, arguments, raise_on_error=False)
    if result.structured_content is not None:
        payload = result.structured_content
        # FastMCP wraps non-object return values as {"result": ...}; ours are all objects.
        return payload
    text = result.content[0].text  # type: ignore[union-attr]
    return json.loads(text)


def make_app(
    data_dir: Path,
    embedder: Embedder | None = None,
    clock: Callable[[], datetime] | None = None,
    **overrides: Any,
) -> LithosApp:
    """An opened (not started) app on ``data_dir`` with the fast fake embedder by default;
    ``clock`` (the settable test clock) sets the time LCMA's learned state sees."""
    settings = {"server.watch_files": False, "index.watch_debounce_ms": 100, **overrides}
    config = load_config(data_dir=data_dir, overrides=settings)
    embedder = embedder or HashingEmbedder()
    if clock is None:
        return LithosApp(config, embedder=embedder).open()
    return LithosApp(config, embedder=embedder, clock=clock).open()


def note_file(front: dict[str, Any] | None, body: str) -> str:
    """The text of a hand-written Markdown file."""
    if front is None:
        return body
    import yaml

    return f"---\n{yaml.safe_dump(front, sort_keys=False)}---\n\n{body}"


async def get_health(app: LithosApp) -> tuple[int, dict[str, Any]]:
    """``GET /health`` through the real HTTP app (Host/Origin guard included), in memory."""
    import httpx2 as httpx

    from lithos.mcp.server import create_server, http_app

    asgi = http_app(create_server(app), app.config.server)
    transport = httpx.ASGITransport(app=asgi)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as web:
        response = await web.get("/health")
    return response.status_code, response.json()


class CheckHold:
    """Holds the start-up index check once :attr:`armed`: its listing of the knowledge files
    (under the indexer lock) waits for :attr:`release`; :attr:`entered` tells it got there."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.armed = False
        self.entered, self.release = threading.Event(), threading.Event()
        real = KnowledgeFiles.scan

        def scan(files: KnowledgeFiles) -> Any:
            if self.armed and not self.entered.is_set():
                self.entered.set()
                assert self.release.wait(10)
            return real(files)

        monkeypatch.setattr(KnowledgeFiles, "scan", scan)

    def start_held(self, app: LithosApp, **start: Any) -> None:
        """``app.start(check_in_background=True)``, returned while its check is held."""
        self.armed = True
        assert app.start(check_in_background=True, **start) is None
        assert self.entered.wait(10)
        assert app.health()["components"]["index_check"] == "running"
