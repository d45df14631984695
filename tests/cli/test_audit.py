"""`lithos audit` through the command's entry point, over receipts a real app wrote."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from lithos.cli.main import main
from lithos.domain.retrieval import RetrievalQuery
from lithos.errors import InvalidInput
from lithos.services.knowledge import WriteRequest
from tests.support import make_app


def run(data_dir: Path, *args: str) -> int:
    return main(["--data-dir", str(data_dir), "audit", *args])


@pytest.fixture
def receipts(data_dir: Path) -> dict[str, str]:
    """Three calls by two agents; the first one's task cited the backoff note."""
    app = make_app(data_dir)
    app.start(watch=False)
    try:

        async def scenario() -> dict[str, str]:
            backoff = (await app.knowledge.write(WriteRequest("a", "Backoff", "retry backoff")))[
                "id"
            ]
            jitter = (await app.knowledge.write(WriteRequest("a", "Jitter", "retry jitter")))["id"]
            task = (await app.coordination.create_task("t", "agent-1"))["task_id"]
            first = await app.retrieval.retrieve(
                RetrievalQuery("retry backoff", agent_id="agent-1", task_id=task)
            )
            await app.feedback.complete(task, "agent-1", cited_nodes=[backoff])
            second = await app.retrieval.retrieve(RetrievalQuery("jitter", agent_id="agent-2"))
            with pytest.raises(InvalidInput):
                await app.retrieval.retrieve(RetrievalQuery("   ", agent_id="agent-2"))
            return {
                "backoff": backoff,
                "jitter": jitter,
                "task": task,
                "first": first.receipt_id,
                "second": second.receipt_id,
            }

        return asyncio.run(scenario())
    finally:
        app.close()


def test_one_receipt_in_full(data_dir: Path, receipts: dict[str, str], capsys):
    assert run(data_dir, receipts["first"]) == 0
    out = capsys.readouterr().out
    assert f"receipt     {receipts['first']}" in out and "'retry backoff'" in out
    assert "agent       agent-1" in out and f"task        {receipts['task']}" in out
    assert f"Backoff ({receipts['backoff']})" in out and "cited" in out
    assert "why: lexical: matched" in out


def test_which_receipts_returned_a_note_and_why(data_dir: Path, receipts: dict[str, str], capsys):
    assert run(data_dir, "--note", receipts["jitter"]) == 0
    out = capsys.readouterr().out
    assert receipts["second"] in out and "why: " in out
    assert run(data_dir, "--note", receipts["backoff"], "--json") == 0
    found = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in found] == [receipts["first"]]
    [node] = [n for n in found[0]["final_nodes"] if n["id"] == receipts["backoff"]]
    assert node["outcome"] == "cited" and node["reasons"]


def test_list_filters_by_agent_task_and_since(data_dir: Path, receipts: dict[str, str], capsys):
    assert run(data_dir, "--json") == 0
    everything = json.loads(capsys.readouterr().out)
    assert len(everything) == 3 and everything[0]["status"] == "error"  # newest first
    assert everything[0]["error_code"] == "invalid_input"
    assert run(data_dir, "--agent", "agent-1", "--json") == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == [receipts["first"]]
    assert run(data_dir, "--task", receipts["task"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:3] == ["time", "receipt", "agent"] and len(table) == 2
    assert receipts["first"] in table[1]
    assert run(data_dir, "--since", "2999-01-01T00:00:00Z") == 0
    assert capsys.readouterr().out.strip() == "no receipts"


def test_bad_requests_are_errors(data_dir: Path, receipts: dict[str, str], capsys):
    assert run(data_dir, "rcpt_nope") == 2
    assert "receipt_not_found" in capsys.readouterr().err
    assert run(data_dir, receipts["first"], "--agent", "x") == 2
    assert "invalid_input" in capsys.readouterr().err
    assert run(data_dir, "--since", "yesterday") == 2
    assert "invalid_input" in capsys.readouterr().err


def test_a_knowledge_base_without_receipts(data_dir: Path, capsys):
    (data_dir / "knowledge").mkdir(parents=True)
    assert run(data_dir) == 0
    assert capsys.readouterr().out.strip() == "no receipts"
    assert not (data_dir / ".lithos" / "stats.db").exists()
