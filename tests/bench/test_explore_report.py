"""bench/report.py's table of bench/explore_eval.py rows."""

from __future__ import annotations

import json

from bench.explore_eval import ROWS
from bench.report import SECTION_TITLES, explore_section

MACHINE = {
    "cpu_model": "cpu",
    "cores": 2,
    "memory_gb": 1,
    "os": "os",
    "python": "3.11",
    "date": "today",
    "commit": "abc",
}


def row(ndcg: float, lcma: dict) -> dict:
    scores = {"ndcg@10": ndcg, "recall@10": 0.5}
    return {
        "lcma": lcma,
        "scores": scores,
        "temperature_mean": 0.7,
        "hot_share": 0.9,
        "median_ms": 3,
    }


def test_every_row_becomes_a_line_with_its_overrides():
    rows = {name: row(0.5 + i / 100, lcma) for i, (name, lcma) in enumerate(ROWS.items())}
    result = {
        "machine": MACHINE,
        "limit": 10,
        "load_average": [1.0, 2.0, 3.0],
        "longmemeval": {"questions": 6, "rows": rows},
    }
    lines = explore_section(result)
    assert lines[0] == SECTION_TITLES["explore"]
    assert "LongMemEval-S (6 questions, overall):" in lines
    body = [line for line in lines if line.startswith("| ") and "ndcg@10" not in line]
    assert len(body) == len(ROWS)
    assert body[1].startswith("| exploration on | " + json.dumps(ROWS["exploration on"]))
    assert body[0] == "| defaults |  | 0.5 | 0.5 | 0.7 | 0.9 | 3 |"
    # A run that counted the queries each row changed shows them beside the scores.
    counted = {name: {**r, "changed": i} for i, (name, r) in enumerate(rows.items())}
    lines = explore_section({**result, "longmemeval": {"questions": 6, "rows": counted}})
    assert "| row | lcma overrides | ndcg@10 | recall@10 | changed | temperature |" in "\n".join(
        lines
    )
    assert "| defaults |  | 0.5 | 0.5 | 0 | 0.7 | 0.9 | 3 |" in lines


def test_a_merged_result_keeps_each_data_set_with_its_own_run():
    from bench.explore_eval import merged

    rows = {name: row(0.5, lcma) for name, lcma in ROWS.items()}
    earlier_machine = {**MACHINE, "date": "earlier", "commit": "old"}
    earlier = {
        "machine": earlier_machine,
        "limit": 10,
        "load_average": [4.0, 5.0, 6.0],
        "longmemeval": {"questions": 60, "rows": rows},
    }
    run = {"machine": MACHINE, "load_average": [1.0, 2.0, 3.0]}
    scifact = {
        "corpus_docs": 3,
        "test_queries": 2,
        "before_feedback": rows,
        "after_feedback": rows,
        "feedback": {"cited_notes": 1, "edges": 0},
        "run": run,
    }
    result = merged(earlier, {"machine": MACHINE, "limit": 10, "scifact": scifact})
    assert result["scifact"]["run"] == run
    assert result["longmemeval"]["run"] == {
        "machine": earlier_machine,
        "load_average": [4.0, 5.0, 6.0],
    }
    lines = explore_section(result)
    assert "Run today, commit `abc`, load average 1.0, 2.0, 3.0." in lines
    assert "Run earlier, commit `old`, load average 4.0, 5.0, 6.0." in lines
    # A data set run again replaces the earlier one.
    again = merged(earlier, {"machine": MACHINE, "longmemeval": {"questions": 6, "rows": rows}})
    assert again["longmemeval"]["questions"] == 6 and "scifact" not in again
