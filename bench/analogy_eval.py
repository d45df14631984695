"""The analogy scout, with and without, on a small hand-made set of framed notes.

Neither SciFact's abstracts nor LongMemEval's chat sessions have problem / actions / outcome /
lessons sections, so the scout finds no frames there. ``tests/fixtures/analogy`` holds 30
postmortem notes written for this evaluation (hand-made, see its README): ten families of three
incidents from different subjects that share one pattern (synchronised load, unbounded growth,
check-then-act races...), plus ten reference notes on the same subjects without any story.
Each family has two queries, each describing the problem in the words of one member; all three
members are relevant, so the other two can only be found by how they are built, not by topic.
The notes sit among ``--background`` real tldr pages (bench/corpus.py; short command pages,
cheap to embed) so the topical scouts have competition.

Each row is ``lithos_retrieve`` at limit 10 with ``scout_weights.scout_analogy`` set to its
value; the weight is chosen on the ``tune`` queries (one per family) and reported on the
``test`` queries (the other one). ``analogues@10`` is the share of the two off-topic members
found in the top 10.

    .venv/bin/python bench/analogy_eval.py             # bench/out/analogy.json
    .venv/bin/python bench/analogy_eval.py --quick --out /tmp/x
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import corpus, harness
from bench.harness import LIMIT, overridden
from bench.machine import log
from bench.metrics import ndcg_at_k, recall_at_k
from lithos.app import LithosApp
from lithos.domain.retrieval import RetrievalQuery
from lithos.retrieval.analogy import ANALOGY

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "analogy"
FOLDER = "analogy"
WEIGHTS = (0.0, 0.05, 0.15, 0.3, 0.5)


@dataclass(frozen=True)
class Query:
    id: str
    split: str  # "tune" or "test"
    text: str
    on_topic: str  # the member whose subject the query describes
    relevant: tuple[str, ...]  # fixture note names


def load_queries(fixture: Path = FIXTURE) -> list[Query]:
    raw = json.loads((fixture / "queries.json").read_text())["queries"]
    return [
        Query(q["id"], q["split"], q["query"], q["on_topic"], tuple(q["relevant"])) for q in raw
    ]


def write_notes(
    knowledge: Path, background: Sequence[corpus.Page], fixture: Path = FIXTURE
) -> None:
    """The fixture notes under ``analogy/`` and the background pages beside them."""
    target = knowledge / FOLDER
    target.mkdir(parents=True, exist_ok=True)
    for note in sorted((fixture / "notes").glob("*.md")):
        (target / note.name).write_text(note.read_text())
    corpus.copy_into(list(background), knowledge)


def names(app: LithosApp) -> dict[str, str]:
    """note id -> fixture note name, for the notes under ``analogy/``."""
    prefix = f"{FOLDER}/"
    return {
        e.id: e.path.removeprefix(prefix).removesuffix(".md")
        for e in app.catalog.entries()
        if e.path.startswith(prefix)
    }


def score(
    rankings: Mapping[str, Sequence[str]], queries: Sequence[Query], split: str
) -> dict[str, float]:
    rows = []
    for q in queries:
        if q.split != split:
            continue
        ranked = list(rankings[q.id])
        relevant = dict.fromkeys(q.relevant, 1)
        analogues = dict.fromkeys((n for n in q.relevant if n != q.on_topic), 1)
        rows.append(
            {
                "ndcg@10": ndcg_at_k(ranked, relevant, LIMIT),
                "recall@10": recall_at_k(ranked, relevant, LIMIT),
                "analogues@10": recall_at_k(ranked, analogues, LIMIT),
            }
        )
    return {k: round(statistics.fmean(r[k] for r in rows), 4) for k in rows[0]}


def run_rows(app: LithosApp, queries: Sequence[Query], weights: Sequence[float]) -> dict[str, Any]:
    ids = names(app)
    table: dict[str, Any] = {}
    for weight in weights:
        with overridden(app, {"scout_weights": {ANALOGY: weight}}):
            rankings: dict[str, list[str]] = {}
            fired = 0
            for q in queries:
                got = asyncio.run(app.retrieval.retrieve(RetrievalQuery(q.text, limit=LIMIT)))
                rankings[q.id] = [ids.get(r.id, r.path) for r in got.results]
                fired += any(ANALOGY in r.scouts for r in got.results)
        table[str(weight)] = {
            "scout_analogy": weight,
            "tune": score(rankings, queries, "tune"),
            "test": score(rankings, queries, "test"),
            "queries_with_an_analogy_result": fired,
        }
        log(f"scout_analogy {weight}: {table[str(weight)]}")
    return table


def chosen(table: Mapping[str, Any]) -> float:
    """The weight best on the tune queries by nDCG@10 (then analogues@10; ties: smaller)."""
    best = max(
        table.values(),
        key=lambda r: (r["tune"]["ndcg@10"], r["tune"]["analogues@10"], -r["scout_analogy"]),
    )
    return float(best["scout_analogy"])


def main(argv: list[str] | None = None) -> int:
    parser = harness.arguments(__doc__, quick="no background pages")
    parser.add_argument("--background", type=int, default=1000, help="tldr pages around them")
    args = parser.parse_args(argv)
    queries = load_queries()
    with tempfile.TemporaryDirectory(prefix="lithos-analogy-") as tmp:
        pages = [p for p in corpus.unpack(Path(tmp) / "pages") if p.source == "tldr"]
        pages = [] if args.quick else pages[: args.background]
        write = partial(write_notes, background=pages)
        with harness.knowledge_base(write, not args.no_cache, "lithos-analogy-") as (app, build):
            table = run_rows(app, queries, WEIGHTS)
            framed = app.frames.size  # filled on the first analogy lookup
    result = {
        "quick": args.quick,
        "fixture_notes": len(list((FIXTURE / "notes").glob("*.md"))),
        "background_pages": len(pages),
        "framed_notes": framed,
        "queries": {s: sum(q.split == s for q in queries) for s in ("tune", "test")},
        "build": build,
        "rows": table,
        "chosen_on_tune": chosen(table),
    }
    return harness.finish(args, "analogy", result)


if __name__ == "__main__":
    sys.exit(main())
