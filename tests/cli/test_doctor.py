"""`lithos doctor`: each problem is named with its fix, and the exit code reflects failures."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

import lithos.store.embedder as embedder_module
from lithos.cli.main import main
from tests.fakes import HashingEmbedder


@pytest.fixture(autouse=True)
def fake_embedder(monkeypatch):
    monkeypatch.setattr("lithos.app.create_embedder", lambda *a, **k: HashingEmbedder())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def doctor(data_dir: Path, capsys, *extra: str) -> tuple[int, dict[str, dict]]:
    code = main(["doctor", "--data-dir", str(data_dir), "--json", *extra])
    checks = {check["name"]: check for check in json.loads(capsys.readouterr().out)}
    return code, checks


def test_a_healthy_knowledge_base_passes_every_check(data_dir: Path, capsys):
    (data_dir / "knowledge").mkdir(parents=True)
    (data_dir / "knowledge" / "a.md").write_text("# A\n\nbody\n")
    assert main(["reindex", "--data-dir", str(data_dir)]) == 0
    capsys.readouterr()
    code, checks = doctor(data_dir, capsys, "--port", str(free_port()))
    assert code == 0
    assert {c["status"] for c in checks.values()} == {"ok"}
    assert checks["model"]["detail"].startswith("all-MiniLM-L6-v2 int8, sha256 verified")
    assert checks["full-text index"]["detail"] == "1 notes"
    assert "lithos 0.1.0" in checks["versions"]["detail"]


def test_a_missing_data_dir_fails_with_how_to_fix_it(tmp_path: Path, capsys):
    code, checks = doctor(tmp_path / "typo", capsys, "--port", str(free_port()))
    assert code == 1
    assert checks["data dir"]["status"] == "fail"
    assert "--data-dir" in checks["data dir"]["fix"]
    assert not (tmp_path / "typo").exists()


def test_a_corrupt_model_file_fails(data_dir: Path, capsys, monkeypatch, tmp_path: Path):
    data_dir.mkdir(parents=True)
    broken = tmp_path / "model"
    broken.mkdir()
    for name in ("model.onnx", "tokenizer.json"):
        (broken / name).write_bytes(b"garbage")
    monkeypatch.setattr(embedder_module, "MODEL_DIR", broken)
    code, checks = doctor(data_dir, capsys, "--port", str(free_port()))
    assert code == 1
    assert checks["model"]["status"] == "fail" and "corrupt" in checks["model"]["detail"]


def test_a_port_held_by_another_program_fails(data_dir: Path, capsys):
    data_dir.mkdir(parents=True)
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        code, checks = doctor(data_dir, capsys, "--port", str(port))
    assert code == 1
    assert checks["port"]["status"] == "fail" and "--port" in checks["port"]["fix"]


def test_human_output_names_problem_and_fix(tmp_path: Path, capsys):
    assert main(["doctor", "--data-dir", str(tmp_path / "nope"), "--port", str(free_port())]) == 1
    out = capsys.readouterr().out
    assert "fail  data dir:" in out and "fix: pass --data-dir" in out
