"""The concept row of the SciFact evaluation: concepts formed by the shipped and the
permissive rule, and top-10 quality with the gateway on and off."""

from __future__ import annotations

import asyncio

from bench import concepts_eval, report
from lithos.app import LithosApp
from lithos.domain.retrieval import RetrievalQuery
from lithos.services.knowledge import WriteRequest

DOCS = {
    "d1": ("Exponential backoff", "retry with exponential backoff"),
    "d2": ("Retry jitter", "retry delays with jitter"),
    "d3": ("Tomato care", "tomatoes want sun"),
}


async def setup(app: LithosApp) -> dict[str, str]:
    ids = {}
    for doc, (title, text) in DOCS.items():
        written = await app.knowledge.write(WriteRequest(agent="w", title=title, content=text))
        ids[str(written["id"])] = doc
    # One task cites the two retry notes together: a pair the permissive rule accepts.
    task = (await app.coordination.create_task("t", "agent"))["task_id"]
    await app.retrieval.retrieve(RetrievalQuery("retry", task_id=task, agent_id="agent"))
    retry = [note for note, doc in ids.items() if doc in ("d1", "d2")]
    await app.feedback.complete(task, "agent", cited_nodes=retry)
    return ids


def test_the_permissive_rule_forms_a_concept_and_both_gateway_rows_are_scored(app: LithosApp):
    ids = asyncio.run(setup(app))
    queries = {"q1": "retry backoff", "q2": "tomatoes"}
    qrels = {"train": {"q1": {"d1": 1, "d2": 1}}, "test": {"q2": {"d3": 1}}}
    found = concepts_eval.effect(app, queries, qrels, ids)
    assert found["formed_shipped_rule"] == 0 and found["formed_permissive_rule"] == 1
    for key in ("with_gateway", "without_gateway"):
        assert found[key]["test"]["recall@10"] == 1.0
        assert found[key]["train"]["recall@10"] == 1.0
    assert app.retrieval.concepts is not None  # the gateway is back on afterwards
    lines = report.concepts_section({"concepts": found})
    assert lines[0].startswith("Concepts (after the learning run): 0 formed by the shipped")
    assert "| train | off |" in "\n".join(lines)
