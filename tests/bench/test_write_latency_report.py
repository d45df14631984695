"""bench/report.py's section for bench/write_latency.py: the p95 target, met or missed."""

from __future__ import annotations

from bench.report import SECTION_TITLES, write_latency_section
from tests.bench.test_explore_report import MACHINE


def figures(p95: float) -> dict:
    pcts = {"p50": p95 / 2, "p95": p95, "p99": p95 * 2, "n": 60}
    steps = {"mark (SQLite)": 0.2, "full-text commit": 0.0}
    return {
        "create_ms": pcts,
        "update_ms": pcts,
        "median_step_ms": steps,
        "not_found_right_after": 0,
        "load": 1.5,
    }


def result(notes: int, p95: float) -> dict:
    return {
        "machine": MACHINE,
        "notes": notes,
        "load_before": [1.0, 1.0, 1.0],
        "load_after": [2.0, 2.0, 2.0],
        "background": figures(p95),
        "inline": figures(100.0),
    }


def target_row(lines: list[str]) -> str:
    return next(line for line in lines if line.startswith("| lithos_write p95"))


def test_the_target_is_judged_on_the_background_path_and_names_the_size_used():
    lines = write_latency_section(result(10_000, 9.5))
    assert lines[0] == SECTION_TITLES["write_latency"]
    assert "Corpus size used: 10000 real notes" in "\n".join(lines)
    assert target_row(lines).endswith("| 9.5 ms | met |")


def test_a_p95_over_the_limit_is_missed_and_a_smaller_corpus_is_said():
    row = target_row(write_latency_section(result(1_000, 21.7)))
    assert "(measured at 1000 notes)" in row and row.endswith("| 21.7 ms | **missed** |")
