"""lithos_retrieve in the SciFact evaluation: its ranking, the tuning of its calibration on
train queries, and the learning experiment (feedback on train queries, scored on test).

The calibration grid re-scores the full-text and semantic candidate lists the evaluation
already holds with retrieve's own merge of those two scouts (``lithos.retrieval.scouts``:
absolute calibration blended with min-max by ``adaptive``), so it costs no searches. It is a
sensitivity report: retrieve itself runs with the shipped ``lcma.*`` defaults (which add the
whole-note similarity and focus that the grid's candidate lists cannot show).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from typing import Any

from bench.machine import log
from bench.metrics import evaluate
from lithos.app import LithosApp
from lithos.config import LcmaConfig
from lithos.domain.retrieval import RetrievalQuery
from lithos.retrieval.scouts import adaptive, calibrate_bm25, calibrate_cosine

Scored = list[tuple[str, float]]
DEPTH = LcmaConfig().scout_depth  # how many notes each scout returns


def ranking(app: LithosApp, query: str, depth: int, **args: Any) -> Scored:
    """retrieve's ranking (note id, final score), up to ``depth`` notes."""
    limit = min(depth, 100)
    result = asyncio.run(app.retrieval.retrieve(RetrievalQuery(query, limit=limit, **args)))
    return [(r.id, r.score) for r in result.results]


# vector_floor, vector_ceiling, lexical_saturation, vector share of the weight
GRID: list[tuple[float, float, float, float]] = list(
    itertools.product(
        (0.1, 0.2, 0.3), (0.6, 0.7, 0.8), (3.0, 5.0, 10.0, 20.0, 40.0), (0.4, 0.5, 0.55, 0.6, 0.7)
    )
)


def merge(
    text: Scored, semantic: Scored, floor: float, ceiling: float, saturation: float, w: float
) -> list[str]:
    """retrieve's Phase A merge of the lexical and vector scouts alone (best chunk only)."""
    share = LcmaConfig().adaptive_share
    score: dict[str, float] = {}
    text = text[:DEPTH]
    semantic = [(doc, cosine) for doc, cosine in semantic[:DEPTH] if cosine > floor]
    lexical = adaptive(
        [s for _, s in text], [calibrate_bm25(s, saturation) for _, s in text], share
    )
    for (doc, _), value in zip(text, lexical, strict=True):
        score[doc] = (1 - w) * value
    vector = adaptive(
        [c for _, c in semantic], [calibrate_cosine(c, floor, ceiling) for _, c in semantic], share
    )
    for (doc, _), value in zip(semantic, vector, strict=True):
        score[doc] = score.get(doc, 0.0) + w * value
    return [d for d, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))]


def tune(
    rankings: Mapping[str, Mapping[str, Mapping[str, Scored]]],
    qrels: Mapping[str, Mapping[str, Mapping[str, int]]],
) -> dict[str, Any]:
    """nDCG@10 of retrieve's merge over a grid of calibrations; best on train, with test."""
    rows = []
    for floor, ceiling, saturation, w in GRID:
        row: dict[str, Any] = {
            "vector_floor": floor,
            "vector_ceiling": ceiling,
            "lexical_saturation": saturation,
            "vector_share": w,
        }
        for split in ("train", "test"):
            text, semantic = rankings[split]["fulltext-words"], rankings[split]["semantic"]
            merged = {q: merge(text[q], semantic[q], floor, ceiling, saturation, w) for q in text}
            row[split] = round(evaluate(merged, qrels[split])["ndcg@10"], 4)
        rows.append(row)
    rows.sort(key=lambda r: -r["train"])
    return {"best_on_train": rows[0], "top": rows[:8]}


def learning(
    app: LithosApp,
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, Mapping[str, int]]],
    ids: Mapping[str, str],
    depth: int,
    before: Mapping[str, Mapping[str, float]],
) -> dict[str, Any]:
    """Test and train metrics of retrieve before (``before``, as the main run measured them)
    and after agents' feedback on train queries: each train query is retrieved in its own
    task, which is completed citing the retrieved notes ``qrels/train.tsv`` marks relevant."""
    notes = {doc: note for note, doc in ids.items()}

    def score(split: str) -> dict[str, float]:
        plain = {
            q: [ids[n] for n, _ in ranking(app, queries[q], depth) if n in ids]
            for q in qrels[split]
        }
        return {k: round(v, 4) for k, v in evaluate(plain, qrels[split]).items()}

    async def teach() -> int:
        count = 0
        for q, relevant in qrels["train"].items():
            task = (await app.coordination.create_task(f"answer {q}", "eval-agent"))["task_id"]
            got = await app.retrieval.retrieve(
                RetrievalQuery(queries[q], limit=10, agent_id="eval-agent", task_id=task)
            )
            wanted = {notes[d] for d in relevant if d in notes}
            cited = [r.id for r in got.results if r.id in wanted]
            count += len(cited)
            await app.feedback.complete(task, "eval-agent", cited_nodes=cited)
        return count

    log(f"feedback on {len(qrels['train'])} train queries")
    cited_total = asyncio.run(teach())
    after = {"test": score("test"), "train": score("train")}
    return {"before": dict(before), "after": after, "cited_notes": cited_total}
