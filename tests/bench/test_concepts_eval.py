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
    assert app.retrieval.concepts is None  # concepts back off afterwards, as by default
    lines = report.concepts_section({"concepts": found})
    assert lines[0].startswith("Concepts (after the learning run): 0 formed by the shipped")
    assert "| train | off |" in "\n".join(lines)


def test_the_grid_forms_each_rule_from_the_same_feedback_and_chooses_on_train(app: LithosApp):
    from functools import partial

    from bench.harness import row_state

    ids = asyncio.run(setup(app))
    queries = {"q1": "retry backoff", "q2": "tomatoes"}
    qrels = {"train": {"q1": {"d1": 1, "d2": 1}}, "test": {"q2": {"d3": 1}}}
    db = app.stats_store.db
    db.call(partial(row_state, "save"))
    found = concepts_eval.grid(
        app, queries, qrels, ids, lambda: db.call(partial(row_state, "restore"))
    )
    rows = found["rows"]
    assert list(rows) == ["no concepts", *concepts_eval.RULES]
    permissive = "pairs cited together once, clusters of 2"
    assert [n for n, r in rows.items() if r["formed"]] == [permissive]
    # The permissive concept puts a non-document in train's top 10: the shipped rule wins.
    assert rows[permissive]["train"]["ndcg@10"] <= rows["shipped"]["train"]["ndcg@10"]
    assert found["chosen_on_train"] == "shipped"
    better = {**rows, permissive: {**rows[permissive], "train": {"ndcg@10": 2.0}}}
    assert concepts_eval.choose(better) == permissive
    assert rows[permissive]["members"] == 2
    assert rows["shipped"]["train"] == rows["no concepts"]["train"]
    # Every rule started from no concepts: only the last rule's concept is left.
    assert len(app.memory_store.concepts()) == 1
    assert app.concepts.rules.min_coactivation == 3  # the shipped rule is back
    lines = "\n".join(
        report.concepts_grid_section(
            {
                **found,
                "machine": {k: "m" for k in ("cpu_model", "cores", "memory_gb", "os", "python")}
                | {"date": "d", "commit": "c"},
                "corpus_docs": 3,
                "queries": {"train": 1, "test": 1},
                "cited_notes": 2,
            }
        )
    )
    assert f"| {permissive} |" in lines
    assert "Chosen rule against no concepts, nDCG@10: train " in lines
    assert "does not beat no concepts on both splits" in lines
