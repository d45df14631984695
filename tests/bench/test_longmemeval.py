"""The LongMemEval harness's own parts: notes per session, scoring, extra rows."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bench import longmemeval
from bench.longmemeval import Question, Session


def question(qid: str, kind: str, answers: tuple[str, ...], n: int = 4) -> Question:
    sessions = tuple(
        Session(f"{qid}-s{i}", "2023/05/20 (Sat) 02:21", f"user: hello {i}") for i in range(n)
    )
    return Question(qid, kind, "what did I say?", "2023/06/01 (Thu) 10:00", answers, sessions)


def test_each_session_is_one_note_in_its_questions_folder_without_its_id(tmp_path: Path):
    q = question("q1", "multi-session", ("q1-s1",))
    ids = longmemeval.write_notes([q], tmp_path)
    assert sorted(ids.values()) == [s.session_id for s in q.sessions]
    text = (tmp_path / "lme" / "q1" / "s01.md").read_text()
    meta = yaml.safe_load(text.split("---")[1])
    assert meta["title"] == "Chat on 2023/05/20 (Sat) 02:21"
    assert meta["updated_at"] == "2023-05-20T02:21:00Z"
    assert "q1-s1" not in text and "user: hello 1" in text


def test_scores_per_question_type_and_overall():
    one, two = question("q1", "a", ("q1-s0",)), question("q2", "b", ("q2-s0", "q2-s5"), n=6)
    sessions = {f"n-{s.session_id}": s.session_id for q in (one, two) for s in q.sessions}
    rankings = {
        "q1": ["n-q1-s0", "n-q1-s1"],
        "q2": ["n-q2-s0", "n-q2-s1", "n-q2-s2", "n-q2-s3", "n-q2-s4", "n-q2-s5"],
    }
    scores = longmemeval.score(rankings, [one, two], sessions)
    assert list(scores) == ["a", "b", "overall"]
    assert scores["a"]["recall_all@5"] == 1.0 and scores["b"]["recall_all@5"] == 0.0
    assert scores["b"]["recall_any@5"] == 1.0
    assert scores["overall"]["recall_all@5"] == 0.5
    assert 0 < scores["b"]["ndcg@10"] < 1


def test_an_extra_row_names_a_retriever_and_lcma_overrides():
    row = longmemeval.parse_row('nommr=retrieve:{"mmr_lambda": 1}')
    assert (row.name, row.retriever, dict(row.lcma)) == ("nommr", "retrieve", {"mmr_lambda": 1})
    assert longmemeval.parse_row("bm25=fulltext").lcma == {}
    with pytest.raises(ValueError):
        longmemeval.parse_row("x=nonsense")
