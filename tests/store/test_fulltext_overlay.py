"""Staged full-text changes: searched beside the on-disk index before their commit, with the
scores they will have once committed, and hidden or replaced copies masked."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import tantivy

from lithos.store.fulltext import FullTextIndex
from lithos.store.fulltext_overlay import compile_query, explained, stored_length
from tests.store.test_fulltext import ids, note


@pytest.fixture
def index(tmp_path: Path) -> Iterator[FullTextIndex]:
    with FullTextIndex(tmp_path / "fulltext") as opened:
        yield opened


WORDS = [
    "river",
    "stone",
    "maple",
    "cedar",
    "falcon",
    "harbor",
    "lantern",
    "meadow",
    "orbit",
    "quartz",
    "saddle",
    "tundra",
    "velvet",
    "willow",
    "zenith",
    "amber",
    "basalt",
    "cobalt",
    "delta",
    "ember",
    "fjord",
    "glacier",
]


def text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


@pytest.fixture
def corpus(tmp_path: Path) -> Iterator[FullTextIndex]:
    """A committed index of 200 notes of 3 to 400 words, titles of 1 to 4."""
    rng = random.Random(7)
    with FullTextIndex(tmp_path / "fulltext") as index:
        index.upsert([note(f"n{i}", text(rng, 1, 4), text(rng, 3, 400)) for i in range(200)])
        yield index


QUERIES = [
    "maple",
    "maple falcon",
    '"cedar falcon"',
    "+river -quartz",
    "title:orbit",
    "(amber basalt)^2 ember",
    "glacier AND (fjord OR delta)",
]


@pytest.mark.parametrize("query", QUERIES)
def test_a_staged_note_scores_what_it_scores_once_committed(
    corpus: FullTextIndex, query: str
) -> None:
    rng = random.Random(query)
    extra = " river glacier delta cedar falcon amber basalt ember"  # every query can match
    fresh = [
        note(f"new{i}", text(rng, 0, 3) + " orbit", text(rng, 0, 40 * i) + extra) for i in range(8)
    ]
    corpus.stage_upsert(fresh)
    staged = {hit.id: hit.score for hit in corpus.search(query, limit=300)}
    corpus.commit_pending()
    committed = {hit.id: hit.score for hit in corpus.search(query, limit=300)}
    assert set(staged) == set(committed)  # the same notes match
    new = [note_id for note_id in committed if note_id.startswith("new")]
    assert new, "the query should match some of the new notes"
    for note_id in new:
        assert staged[note_id] == pytest.approx(committed[note_id], rel=0.01)


def test_field_lengths_are_quantised_as_tantivy_stores_them(tmp_path: Path) -> None:
    lengths = [1, 23, 24, 39, 40, 41, 43, 57, 100, 333, 1000, 4321]
    with FullTextIndex(tmp_path / "lengths") as index:
        index.upsert([note(f"l{n}", "t", "w " * (n - 1) + "qq") for n in lengths])
        searcher = index._index.searcher()
        query = tantivy.Query.term_query(index._schema, "content", "qq", "position")
        for _, address in searcher.search(query, limit=len(lengths)).hits:
            n = int(str(searcher.doc(address).get_first("id"))[1:])
            explanation = query.explain(searcher, address).to_json()
            assert explained(explanation, "dl,") == stored_length(n), n


def test_a_staged_update_hides_the_committed_copy(corpus: FullTextIndex) -> None:
    corpus.upsert([note("mine", "Mine", "the old words")])
    corpus.stage_upsert([note("mine", "Mine", "the new phrasing")])
    assert ids(corpus.search("old")) == []
    assert ids(corpus.search("phrasing")) == ["mine"]
    assert ids(corpus.search("mine")).count("mine") == 1
    assert corpus.fingerprints()["mine"][0] == note("mine", "Mine", "the new phrasing").content_hash
    assert corpus.count() == 201


def test_a_staged_deletion_hides_the_document(corpus: FullTextIndex) -> None:
    before = corpus.search("maple", limit=300)
    corpus.stage_delete([before[0].id])
    after = ids(corpus.search("maple", limit=300))
    assert before[0].id not in after and len(after) == len(before) - 1
    assert before[0].id not in corpus.fingerprints()
    assert corpus.count() == 199
    corpus.commit_pending()
    assert ids(corpus.search("maple", limit=300)) == after


def test_filters_apply_to_staged_documents(index: FullTextIndex) -> None:
    index.stage_upsert(
        [
            note("a", "Kestrel", "kestrel hover", tags=("Birds",), author="ann", path="x/a.md"),
            note("b", "Kestrel", "kestrel nest", author="bob", path="y/b.md"),
        ]
    )
    assert ids(index.search("kestrel", tags=["birds"])) == ["a"]
    assert ids(index.search("kestrel", author="bob")) == ["b"]
    assert ids(index.search("kestrel", path_prefix="x/")) == ["a"]
    assert ids(index.search("kestrel", only_ids={"b"})) == ["b"]
    assert ids(index.search("kestrel", exclude_ids={"b"})) == ["a"]
    assert index.commits == 0


@pytest.mark.parametrize("query", ['"kestrel hover"~2', "title:[a TO z]", '"kestrel hov"*'])
def test_a_query_the_overlay_cannot_evaluate_commits_first(
    index: FullTextIndex, query: str
) -> None:
    assert compile_query(query, {}) is None
    index.stage_upsert([note("a", "Kestrel", "kestrel hover")])
    assert ids(index.search(query)) == ["a"]
    assert index.commits == 1 and index.uncommitted() == 0


def test_an_empty_overlay_costs_no_commit_and_changes_nothing(corpus: FullTextIndex) -> None:
    commits = corpus.commits
    assert len(corpus.search('"cedar falcon"~1')) > 0
    assert corpus.commits == commits


def test_a_staged_note_gets_a_highlighted_snippet_even_for_words_new_to_the_index(
    index: FullTextIndex,
) -> None:
    index.upsert([note("old", "Old", "nothing relevant here")])
    index.stage_upsert([note("new", "New", "Some words before. The pangolin is scaly. After.")])
    [hit] = index.search("pangolin")
    assert hit.snippet == "…**pangolin** is scaly. After."
    long = "start " + "filler " * 60 + "pangolin pangolins " + "tail " * 60
    index.stage_upsert([note("long", "Long", long)])
    snippet = next(h.snippet for h in index.search("pangolin") if h.id == "long")
    assert snippet.startswith("…**pangolin** **pangolins** tail") and snippet.endswith("…")
    assert len(snippet) <= 200 + 10


def test_search_without_snippets_ranks_alike_and_a_filter_to_the_hits_keeps_their_scores(
    corpus: FullTextIndex,
) -> None:
    """What lithos_retrieve's lexical scout relies on: it ranks without snippets, then asks
    again for the few notes it shows, by id, and finds them with the same BM25 as before,
    committed and staged notes alike."""
    rng = random.Random(11)
    corpus.stage_upsert([note(f"s{i}", text(rng, 1, 3), text(rng, 5, 60)) for i in range(20)])
    full = corpus.search("maple cedar", limit=60, syntax=False)
    bare = corpus.search("maple cedar", limit=60, syntax=False, snippets=False)
    assert [(h.id, h.score) for h in bare] == [(h.id, h.score) for h in full]
    assert {h.id for h in full} & {f"s{i}" for i in range(20)}  # staged notes among them
    assert all(h.snippet == "" for h in bare) and all(h.snippet for h in full)
    shown = [bare[0].id, bare[7].id, bare[33].id, *(h.id for h in bare if h.id.startswith("s"))]
    again = corpus.search("maple cedar", limit=len(shown), syntax=False, only_ids=shown)
    assert {h.id: h.score for h in again} == {h.id: h.score for h in bare if h.id in shown}
    # ... and with the very snippets an eager search highlights for them
    assert {h.id: h.snippet for h in again} == {h.id: h.snippet for h in full if h.id in shown}
    assert sum("**" in h.snippet for h in again) >= len(shown) // 2
