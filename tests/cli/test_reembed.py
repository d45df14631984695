"""`lithos reembed`: the batch migration to the configured model's embedding space, with its
report, its progress lines, a second run that finds nothing to do, and a run killed half-way
that the next run completes without embedding any text twice."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lithos.cli.main import main
from lithos.domain.embedding import space_of
from lithos.store.embedder import MODELS, OnnxEmbedder, register_model
from tests.fakes import HashingEmbedder
from tests.support import make_app

OLD = HashingEmbedder(model_id="hashing-test")
NEW = HashingEmbedder(dimension=64, model_id="hashing-small")


@pytest.fixture
def models() -> Iterator[None]:
    register_model("hashing-test", lambda threads, batch: HashingEmbedder(model_id="hashing-test"))
    register_model("hashing-small", lambda threads, batch: HashingEmbedder(64, "hashing-small"))
    yield
    MODELS.pop("hashing-test")
    MODELS.pop("hashing-small")


def build(data_dir: Path, count: int) -> None:
    """A knowledge base of ``count`` one-chunk notes, embedded in the space of ``OLD``."""
    knowledge = data_dir / "knowledge"
    knowledge.mkdir(parents=True)
    for i in range(count):
        (knowledge / f"note-{i}.md").write_text(f"# Note {i}\n\nTopic {i} about subject{i % 7}.\n")
    app = make_app(data_dir, embedder=HashingEmbedder(model_id="hashing-test"))
    app.start(watch=False)
    try:
        assert app.embedding.wait_idle(30)
    finally:
        app.close()


def configure(data_dir: Path, model: str) -> None:
    (data_dir / "config.yaml").write_text(f"search:\n  embedding_model: {model}\n")


def space_counts(data_dir: Path) -> dict[str, int]:
    with sqlite3.connect(data_dir / ".vectors" / "vectors.db", timeout=30) as conn:
        rows = conn.execute("SELECT space_id, COUNT(*) FROM embeddings GROUP BY space_id")
        return dict(rows.fetchall())


def test_reembed_migrates_reports_counts_and_retires_the_old_space(
    data_dir: Path, models: None, capsys
) -> None:
    build(data_dir, 30)
    configure(data_dir, "hashing-small")
    assert main(["--data-dir", str(data_dir), "reembed"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report == {
        "space": space_of(NEW).id,
        "chunks": 30,
        "already_embedded": 0,
        "embedded": 30,
        "remaining": 0,
        "retired": [space_of(OLD).id],
    }
    # Not a terminal: sparse key=value lines, the last one complete.
    progress = [line for line in captured.err.splitlines() if line.startswith("progress ")]
    assert progress[-1].startswith("progress task=reembed done=30 total=30 ")
    assert space_counts(data_dir) == {space_of(OLD).id: 30, space_of(NEW).id: 30}

    assert main(["--data-dir", str(data_dir), "reembed"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["already_embedded"], again["embedded"], again["retired"]) == (30, 0, [])


def test_reembed_beside_a_running_server_refuses_and_changes_nothing(
    data_dir: Path, models: None, capsys
) -> None:
    build(data_dir, 3)
    configure(data_dir, "hashing-small")
    server = make_app(data_dir, embedder=HashingEmbedder(model_id="hashing-test"))
    try:
        assert main(["--data-dir", str(data_dir), "reembed"]) == 2
        assert "index_locked" in capsys.readouterr().err
    finally:
        server.close()
    assert space_counts(data_dir) == {space_of(OLD).id: 3}


@pytest.mark.model
def test_a_killed_reembed_is_completed_by_the_next_run_without_embedding_twice(
    data_dir: Path, models: None
) -> None:
    """Into the shipped model's space (slow enough to kill half-way), from the hashing one."""
    build(data_dir, 60)
    shipped = space_of(OnnxEmbedder()).id
    command = [sys.executable, "-m", "lithos.cli.main", "--data-dir", str(data_dir), "reembed"]
    env = {**os.environ, "FASTMCP_CHECK_FOR_UPDATES": "off"}
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while space_counts(data_dir).get(shipped, 0) < 8:
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "reembed stored nothing within 60 s"
            time.sleep(0.02)
        first.send_signal(signal.SIGKILL)
    finally:
        first.wait(30)
    done_before = space_counts(data_dir)[shipped]
    assert 8 <= done_before < 60

    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert report["already_embedded"] == done_before
    assert report["embedded"] == 60 - done_before
    assert (report["remaining"], report["retired"]) == (0, [space_of(OLD).id])
    assert space_counts(data_dir)[shipped] == 60
