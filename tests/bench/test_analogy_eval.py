"""bench/analogy_eval.py and its hand-made fixture: every postmortem has a frame and no
reference note does, the queries name real notes, and the rows score the scout's weights."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from bench import analogy_eval, report
from lithos.domain.frames import SLOTS, extract_frame
from lithos.domain.notes import parse_note
from tests.support import make_app

NOTES = analogy_eval.FIXTURE / "notes"


def test_postmortems_fill_every_slot_and_reference_notes_none():
    for path in sorted(NOTES.glob("*.md")):
        frame = extract_frame(parse_note(path.read_text(), path.name).content)
        if path.name.startswith("f"):
            assert frame.filled == frozenset(SLOTS), path.name
        else:
            assert len(frame.filled) < 2, path.name  # below the FrameIndex's two slots


def test_each_family_has_a_tune_and_a_test_query_over_real_notes():
    queries = analogy_eval.load_queries()
    names = {p.stem for p in NOTES.glob("*.md")}
    assert Counter(q.split for q in queries) == {"tune": 10, "test": 10}
    for q in queries:
        assert len(q.relevant) == 3 and set(q.relevant) <= names and q.on_topic in q.relevant


def test_rows_score_the_analogy_weights_and_the_scout_finds_analogues(tmp_path: Path):
    analogy_eval.write_notes(tmp_path / "data" / "knowledge", [])
    app = make_app(tmp_path / "data")
    app.start(watch=False)
    try:
        assert app.embedding.wait_idle(30)
        queries = [q for q in analogy_eval.load_queries() if q.id.startswith(("q1-", "q3-"))]
        table = analogy_eval.run_rows(app, queries, (0.0, 0.15))
        assert app.frames.size == 30
    finally:
        app.close()
    off, on = table["0.0"], table["0.15"]
    assert on["queries_with_an_analogy_result"] > 0
    for split in ("tune", "test"):
        assert 0.0 <= off[split]["analogues@10"] <= on[split]["analogues@10"] <= 1.0
    result = {
        "machine": {k: "m" for k in ("cpu_model", "cores", "memory_gb", "os", "python")}
        | {"date": "d", "commit": "c"},
        "fixture_notes": 40,
        "background_pages": 0,
        "framed_notes": 30,
        "queries": {"tune": 2, "test": 2},
        "rows": table,
        "chosen_on_tune": analogy_eval.chosen(table),
    }
    lines = "\n".join(report.analogy_section(result))
    assert "| 0.15 | test |" in lines and "Weight chosen on the tune queries" in lines
