"""LongMemEval-S (development set, 60 questions): session retrieval from chat memory.

The protocol of ``../shared/data/longmemeval/README.md``: one note per chat session (title:
the session's date; content: its turns as ``user: ...`` / ``assistant: ...`` lines), one folder
per question holding that question's haystack, and every search scoped to the question's
folder with ``path_prefix``. Scored at session level: recall_any@5 (some answer session in the
top 5), recall_all@5 (all of them) and nDCG@10 with binary relevance, per ``question_type``
and overall. The session id is kept out of the note (ids like ``answer_...`` would give the
answer away); notes get ids derived from (question, session).

Rows: every entry of :data:`ROWS` is one ranked list per question. A row may carry ``lcma``
overrides (``lcma.*`` settings) under which retrieve runs for that row only, so a feature can
be measured with and without itself::

    ROWS.append(Row("retrieve+analogy", "retrieve", {"scout_weights": {...}}))

or from the command line: ``bench/eval.py --lme-row 'retrieve-nommr=retrieve:{"mmr_lambda": 1}'``.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from bench.harness import LIMIT, overridden
from bench.machine import log
from bench.metrics import ndcg_at_k, recall_all_at_k, recall_any_at_k
from lithos.app import LithosApp
from lithos.domain.filters import SearchFilter
from lithos.domain.retrieval import RetrievalQuery

ROOT = Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval"
if not ROOT.exists():
    ROOT = Path("/work/shared/data/longmemeval")
FILE = "longmemeval_s_dev60.json.gz"
_NAMESPACE = uuid.UUID("0b7e3f4c-2a61-4d8e-93c5-6a0e1f5d9b27")
DEPTH = 50  # a haystack holds about 48 sessions: every ranking is (nearly) complete
METRICS = ("recall_any@5", "recall_all@5", "ndcg@10")


@dataclass(frozen=True)
class Session:
    session_id: str
    date: str  # as the data set writes it: "2023/05/20 (Sat) 02:21"
    text: str


@dataclass(frozen=True)
class Question:
    question_id: str
    question_type: str
    question: str
    question_date: str
    answer_session_ids: tuple[str, ...]
    sessions: tuple[Session, ...]

    @property
    def folder(self) -> str:
        return f"lme/{self.question_id}"


def load(root: Path = ROOT) -> list[Question]:
    with gzip.open(root / FILE, "rt", encoding="utf-8") as handle:
        items = json.load(handle)
    questions = []
    for item in items:
        sessions = tuple(
            Session(sid, date, "\n".join(f"{t['role']}: {t['content']}" for t in turns))
            for sid, date, turns in zip(
                item["haystack_session_ids"],
                item["haystack_dates"],
                item["haystack_sessions"],
                strict=True,
            )
        )
        questions.append(
            Question(
                question_id=item["question_id"],
                question_type=item["question_type"],
                question=item["question"],
                question_date=item["question_date"],
                answer_session_ids=tuple(item["answer_session_ids"]),
                sessions=sessions,
            )
        )
    return questions


def subset(
    questions: list[Question], per_type: int, distractors: int | None = None
) -> list[Question]:
    """The first ``per_type`` questions of each type, each with its answer sessions and the
    first ``distractors`` other sessions of its haystack (all of them when None)."""
    taken: dict[str, int] = defaultdict(int)
    out = []
    for q in questions:
        if taken[q.question_type] >= per_type:
            continue
        taken[q.question_type] += 1
        answers = set(q.answer_session_ids)
        others = [s for s in q.sessions if s.session_id not in answers][:distractors]
        if distractors is None:
            out.append(q)
            continue
        kept = tuple(s for s in q.sessions if s.session_id in answers or s in others)
        out.append(
            Question(
                q.question_id,
                q.question_type,
                q.question,
                q.question_date,
                q.answer_session_ids,
                kept,
            )
        )
    return out


def note_id(question: Question, session: Session) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{question.question_id}:{session.session_id}"))


def _timestamp(date: str) -> str:
    """``2023/05/20 (Sat) 02:21`` as ISO 8601 UTC."""
    parsed = datetime.strptime(date.split(" (")[0] + " " + date.split(") ")[-1], "%Y/%m/%d %H:%M")
    return parsed.strftime("%Y-%m-%dT%H:%M:%SZ")


def write_notes(questions: Sequence[Question], knowledge: Path) -> dict[str, str]:
    """One file per (question, session) under the question's folder; returns ``note id ->
    session id``. The note's dates are the session's, as a memory written then would have."""
    ids: dict[str, str] = {}
    for q in questions:
        folder = knowledge / q.folder
        folder.mkdir(parents=True, exist_ok=True)
        for i, s in enumerate(q.sessions):
            nid = note_id(q, s)
            ids[nid] = s.session_id
            stamp = _timestamp(s.date)
            meta = {
                "id": nid,
                "title": f"Chat on {s.date}",
                "author": "longmemeval",
                "created_at": stamp,
                "updated_at": stamp,
            }
            front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
            text = f"---\n{front}---\n\n{s.text}\n"
            (folder / f"s{i:02d}.md").write_text(text, encoding="utf-8")
    return ids


# -- retrievers: (app, query, folder, depth) -> (note id, score), best first ---------------------

Scored = list[tuple[str, float]]
Retriever = Callable[[LithosApp, str, str, int], Scored]


@dataclass
class Haystacks:
    """Questions as one knowledge base: one folder of session notes per question, each
    question asked inside its own folder (what the LCMA evaluations retrieve from)."""

    questions: list[Question]
    sessions: dict[str, str] = field(default_factory=dict)  # note id -> session id

    @classmethod
    def load(cls, quick: bool, per_type: int | None) -> Haystacks:
        """All 60 questions, the first ``per_type`` of each type (whole haystacks), or a
        quick run's one question a type with two distractor sessions."""
        questions = load()
        if quick:
            questions = subset(questions, per_type=1, distractors=2)
        elif per_type:
            questions = subset(questions, per_type=per_type)
        return cls(questions)

    def write(self, knowledge: Path) -> None:
        """The session notes, for bench/harness.py ``knowledge_base``."""
        self.sessions.update(write_notes(self.questions, knowledge))

    def requests(self, limit: int = LIMIT) -> dict[str, RetrievalQuery]:
        return {
            q.question_id: RetrievalQuery(q.question, limit=limit, path_prefix=q.folder + "/")
            for q in self.questions
        }

    def overall(self, rankings: Mapping[str, Sequence[str]]) -> dict[str, float]:
        """recall_any@5, recall_all@5 and nDCG@10 over every question."""
        return score(rankings, self.questions, self.sessions)["overall"]


def _scoped(folder: str) -> SearchFilter:
    return SearchFilter(path_prefix=folder + "/")


def _retrieve(app: LithosApp, query: str, folder: str, depth: int) -> Scored:
    limit = min(depth, 100)
    request = RetrievalQuery(query, limit=limit, path_prefix=folder + "/")
    return [(r.id, r.score) for r in asyncio.run(app.retrieval.retrieve(request)).results]


RETRIEVERS: dict[str, Retriever] = {
    "fulltext": lambda app, q, folder, n: [
        (h["id"], h["score"]) for h in app.search.fulltext_hits(q, n, _scoped(folder), syntax=False)
    ],
    "semantic": lambda app, q, folder, n: [
        (h["id"], h["similarity"])
        for h in app.search.semantic_hits(q, n, threshold=0.0, search_filter=_scoped(folder))
    ],
    "hybrid": lambda app, q, folder, n: [
        (h["id"], h["score"]) for h in app.search.hybrid_hits(q, n, _scoped(folder))
    ],
    "retrieve": _retrieve,
}


@dataclass(frozen=True)
class Row:
    """One line of the table: ``retriever`` (a key of :data:`RETRIEVERS`) run with the
    ``lcma`` settings overridden by ``lcma`` (nested dicts such as ``scout_weights`` merge)."""

    name: str
    retriever: str
    lcma: Mapping[str, Any] = field(default_factory=dict)


ROWS: list[Row] = [Row(name, name) for name in RETRIEVERS]


def parse_row(text: str) -> Row:
    """``name=retriever:{json lcma overrides}`` (the JSON part optional)."""
    name, _, rest = text.partition("=")
    retriever, _, overrides = rest.partition(":")
    if not name or retriever not in RETRIEVERS:
        raise ValueError(
            f"--lme-row {text!r}: want name=retriever[:{{json}}], retriever in {sorted(RETRIEVERS)}"
        )
    return Row(name, retriever, json.loads(overrides) if overrides else {})


def score(
    rankings: Mapping[str, Sequence[str]],
    questions: Sequence[Question],
    sessions: Mapping[str, str],
) -> dict[str, dict[str, float]]:
    """Mean of each metric per question type and ``overall`` (rankings hold note ids)."""
    per_type: dict[str, list[dict[str, float]]] = defaultdict(list)
    for q in questions:
        ranked = [sessions[n] for n in rankings.get(q.question_id, ()) if n in sessions]
        relevant = dict.fromkeys(q.answer_session_ids, 1)
        values = {
            "recall_any@5": recall_any_at_k(ranked, relevant, 5),
            "recall_all@5": recall_all_at_k(ranked, relevant, 5),
            "ndcg@10": ndcg_at_k(ranked, relevant, 10),
        }
        per_type[q.question_type].append(values)
        per_type["overall"].append(values)
    return {
        kind: {m: round(sum(v[m] for v in rows) / len(rows), 4) for m in METRICS}
        for kind, rows in sorted(per_type.items(), key=lambda kv: (kv[0] == "overall", kv[0]))
    }


def run(
    app: LithosApp,
    questions: Sequence[Question],
    sessions: Mapping[str, str],
    rows: Sequence[Row],
    ranked: dict[str, dict[str, Scored]] | None = None,
) -> dict[str, Any]:
    """Every row's scores, mean latency and median result count; each row's scored rankings
    go into ``ranked`` (row name -> question id -> ranking) when it is given."""
    results: dict[str, Any] = {}
    for row in rows:
        with overridden(app, row.lcma):
            retriever = RETRIEVERS[row.retriever]
            scored: dict[str, Scored] = {}
            started = time.perf_counter()
            for q in questions:
                scored[q.question_id] = retriever(app, q.question, q.folder, DEPTH)
            elapsed = time.perf_counter() - started
        if ranked is not None:
            ranked[row.name] = scored
        rankings = {q: [note for note, _ in hits] for q, hits in scored.items()}
        results[row.name] = {
            "retriever": row.retriever,
            "lcma": dict(row.lcma),
            "scores": score(rankings, questions, sessions),
            "mean_ms": round(1000 * elapsed / max(1, len(questions)), 2),
            "returned_median": sorted(len(r) for r in rankings.values())[len(rankings) // 2],
        }
        log(f"longmemeval {row.name}: {results[row.name]['scores']['overall']}")
    return results


def folds(questions: Sequence[Question]) -> tuple[list[Question], list[Question]]:
    """Two halves with every question type split evenly (alternating within each type)."""
    seen: dict[str, int] = defaultdict(int)
    halves: tuple[list[Question], list[Question]] = ([], [])
    for q in questions:
        halves[seen[q.question_type] % 2].append(q)
        seen[q.question_type] += 1
    return halves


def tune(
    ranked: Mapping[str, Mapping[str, Scored]],
    questions: Sequence[Question],
    sessions: Mapping[str, str],
) -> dict[str, Any]:
    """retrieve's calibration grid (bench/retrieve_eval.py) re-scored on these questions'
    full-text and semantic candidates, honestly: chosen on one half of the questions and
    scored on the other, both ways (2-fold), plus the best on all 60 (in-sample, optimistic).
    """
    from bench.retrieve_eval import GRID, merge

    def ndcg(config: tuple[float, float, float, float], subset: Sequence[Question]) -> float:
        merged = {
            q.question_id: merge(
                ranked["fulltext"][q.question_id], ranked["semantic"][q.question_id], *config
            )
            for q in subset
        }
        return score(merged, subset, sessions)["overall"]["ndcg@10"]

    def best(subset: Sequence[Question]) -> tuple[float, float, float, float]:
        return max(GRID, key=lambda config: (ndcg(config, subset), -GRID.index(config)))

    keys = ("vector_floor", "vector_ceiling", "lexical_saturation", "vector_share")
    a, b = folds(questions)
    cross = []
    for chosen_on, held_out in ((a, b), (b, a)) if a and b else ():
        config = best(chosen_on)
        cross.append(
            {
                **dict(zip(keys, config, strict=True)),
                "chosen_on": round(ndcg(config, chosen_on), 4),
                "held_out": round(ndcg(config, held_out), 4),
            }
        )
    everywhere = best(questions)
    return {
        "two_fold": cross,
        "held_out_mean": round(sum(c["held_out"] for c in cross) / 2, 4) if cross else None,
        "best_on_all": {
            **dict(zip(keys, everywhere, strict=True)),
            "ndcg@10": round(ndcg(everywhere, questions), 4),
        },
    }
