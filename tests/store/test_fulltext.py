"""The Tantivy full-text index, against real indexes in tmp_path."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lithos.errors import IndexCorrupt, IndexLocked, InvalidInput
from lithos.store.fulltext import TITLE_BOOST, FullTextDoc, FullTextIndex, id_key
from tests.damage import block_next_deletes, make_tantivy_panic_on_open


def note(
    id: str,
    title: str = "",
    content: str = "",
    *,
    path: str | None = None,
    author: str = "alice",
    tags: tuple[str, ...] = (),
    content_hash: str | None = None,
) -> FullTextDoc:
    return FullTextDoc(
        id=id,
        title=title,
        content=content,
        path=path if path is not None else f"notes/{id}.md",
        author=author,
        tags=tags,
        content_hash=content_hash if content_hash is not None else f"hash-{id}",
        updated_at="2025-01-01T00:00:00+00:00",
    )


def ids(hits: list) -> list[str]:
    return [hit.id for hit in hits]


@pytest.fixture
def index(tmp_path: Path) -> Iterator[FullTextIndex]:
    with FullTextIndex(tmp_path / "fulltext") as opened:
        yield opened


@pytest.fixture
def two_notes(index: FullTextIndex) -> FullTextIndex:
    index.upsert(
        [
            note("kube", "Kubernetes operators", "Operators reconcile the state of a cluster."),
            note("pasta", "Cooking pasta", "Boil water, add salt, then the pasta."),
        ]
    )
    return index


HOLDER = """
import sys
from pathlib import Path
from lithos.store.fulltext import FullTextIndex
index = FullTextIndex(Path(sys.argv[1]))
print("ready", flush=True)
sys.stdin.readline()
index.close()
"""


@pytest.fixture
def held_by_other_process(tmp_path: Path) -> Iterator[Path]:
    """An index directory whose writer is held by another Python process."""
    directory = tmp_path / "fulltext"
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(directory)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "ready"
        yield directory
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=30) == 0


# Writing and reading back


def test_upserted_note_is_searchable_as_soon_as_upsert_returns(index: FullTextIndex) -> None:
    index.upsert([note("a", "Deploy guide", "How we deploy the billing service.")])
    assert ids(index.search("billing")) == ["a"]


def test_upsert_replaces_the_previous_version(index: FullTextIndex) -> None:
    index.upsert([note("a", "Draft", "The old wording about zebras.")])
    index.upsert([note("a", "Draft", "The new wording about giraffes.")])
    assert index.search("zebras") == []
    assert ids(index.search("giraffes")) == ["a"]
    assert index.count() == 1


def test_repeated_id_in_one_batch_keeps_the_last_occurrence(index: FullTextIndex) -> None:
    index.upsert([note("a", content="first apples"), note("a", content="second oranges")])
    assert index.count() == 1
    assert index.search("apples") == []
    assert ids(index.search("oranges")) == ["a"]


def test_deleted_note_is_no_longer_found(index: FullTextIndex) -> None:
    index.upsert([note("a", content="shared word"), note("b", content="shared word")])
    index.delete(["a", "unknown-id"])
    assert ids(index.search("shared")) == ["b"]
    assert index.count() == 1


def test_the_same_query_repeated_sees_every_write_delete_and_reopen(
    index: FullTextIndex,
) -> None:
    # Parsed queries are kept per query text: what a search finds must not be.
    queries = ("heron", "title:heron OR wading", "heron wading: [")
    for query in queries:
        assert index.search(query) == []
    staged = index.stage_upsert([note("a", "Heron", "A heron is a wading bird.")])
    for query in queries:
        assert ids(index.search(query)) == ["a"]
    index.commit_through(staged)
    index.upsert([note("b", "Heron notes", "Another heron, wading.")])
    for query in queries:
        assert sorted(ids(index.search(query))) == ["a", "b"]
        assert "**" in index.search(query, limit=1)[0].snippet  # highlighted
    index.delete(["a"])
    for query in queries:
        assert ids(index.search(query)) == ["b"]
    index.close()
    index.reopen()
    index.clear()
    for query in queries:
        assert index.search(query) == []


def test_clear_removes_every_note(two_notes: FullTextIndex) -> None:
    two_notes.clear()
    assert two_notes.count() == 0
    assert two_notes.search("pasta") == []


def test_index_persists_across_close_and_reopen(tmp_path: Path) -> None:
    with FullTextIndex(tmp_path / "ft") as first:
        first.upsert([note("a", "Persisted", "Survives a restart.", tags=("keep",))])
    with FullTextIndex(tmp_path / "ft") as second:
        hits = second.search("restart", tags=["keep"])
        assert [(h.id, h.title, h.path) for h in hits] == [("a", "Persisted", "notes/a.md")]


def test_hashes_are_exact_for_thousands_of_notes_across_reopen(tmp_path: Path) -> None:
    expected = {f"n{i}": f"h{i}" for i in range(3000)}
    with FullTextIndex(tmp_path / "ft") as index:
        index.upsert(note(i, content=f"body {i}", content_hash=h) for i, h in expected.items())
        changed = {f"n{i}": f"changed{i}" for i in range(0, 3000, 30)}
        index.upsert(note(i, content="new body", content_hash=h) for i, h in changed.items())
        removed = [f"n{i}" for i in range(1, 3000, 15)]
        index.delete(removed)
        expected |= changed
        for doc_id in removed:
            del expected[doc_id]
        assert index.hashes() == expected
    with FullTextIndex(tmp_path / "ft") as reopened:
        assert reopened.hashes() == expected
        assert reopened.count() == len(expected) == 2800


# Query language


def test_stemming_lets_running_find_runs(index: FullTextIndex) -> None:
    index.upsert([note("a", content="The job runs nightly.")])
    assert ids(index.search("running")) == ["a"]


def test_phrase_query_requires_the_words_in_order(index: FullTextIndex) -> None:
    index.upsert(
        [
            note("adjacent", content="use the blue green deploy"),
            note("apart", content="green, not blue"),
        ]
    )
    assert ids(index.search('"blue green"')) == ["adjacent"]


def test_and_requires_both_terms(index: FullTextIndex) -> None:
    index.upsert([note("both", content="redis cache"), note("one", content="redis queue")])
    assert ids(index.search("redis AND cache")) == ["both"]


def test_or_accepts_either_term(index: FullTextIndex) -> None:
    index.upsert([note("a", content="redis cache"), note("b", content="kafka queue")])
    index.upsert([note("c", content="nothing relevant")])
    assert sorted(ids(index.search("redis OR kafka"))) == ["a", "b"]


def test_title_field_query_ignores_content(index: FullTextIndex) -> None:
    index.upsert([note("t", "Postgres tuning", "indexes"), note("c", "Misc", "postgres notes")])
    assert ids(index.search("title:postgres")) == ["t"]


def test_title_match_is_weighted_by_the_title_boost(index: FullTextIndex) -> None:
    # Same term frequency and field lengths in both fields: only the title boost separates them.
    index.upsert(
        [
            note("body", "alpha beta gamma", "grafana delta epsilon"),
            note("head", "grafana beta gamma", "alpha delta epsilon"),
        ]
    )
    scores = {hit.id: hit.score for hit in index.search("grafana")}
    assert scores["head"] / scores["body"] == pytest.approx(TITLE_BOOST, rel=1e-3)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("kubernetes AND (", {"kube"}),
        ('"kubernetes', {"kube"}),
        ("nofield:pasta", {"pasta"}),
        ("salt: how much?", {"pasta"}),
        ("salt OR", {"pasta"}),
        ("title:", set()),
        ("*", {"kube", "pasta"}),
        ("-", set()),
        (":", set()),
        ("(", set()),
        ("\\", set()),
        ("[", set()),
    ],
)
def test_unparseable_query_searches_its_plain_words(
    two_notes: FullTextIndex, query: str, expected: set[str]
) -> None:
    assert set(ids(two_notes.search(query))) == expected


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_empty_query_raises_invalid_input(index: FullTextIndex, query: str) -> None:
    with pytest.raises(InvalidInput):
        index.search(query)


def test_limit_below_one_raises_invalid_input(index: FullTextIndex) -> None:
    with pytest.raises(InvalidInput):
        index.search("anything", limit=0)


# Filters


@pytest.fixture
def crowded(index: FullTextIndex) -> FullTextIndex:
    """Thirty strong matches that fail every filter, then a few weak matches that pass some."""
    noise = [
        note(f"noise{i}", "Kubernetes", "kubernetes " * 20, path=f"noise/{i}.md", author="bob")
        for i in range(30)
    ]
    index.upsert(noise)
    index.upsert(
        [
            note("both", content="kubernetes once", path="team (ops)/a+b.md", tags=("ops", "k8s")),
            note("ops", content="kubernetes once", path="team (ops)/c.md", tags=("ops",)),
            note("elsewhere", content="kubernetes once", path="teamXops/d.md", tags=("k8s",)),
        ]
    )
    return index


def test_unfiltered_top_results_are_all_noise(crowded: FullTextIndex) -> None:
    assert all(doc_id.startswith("noise") for doc_id in ids(crowded.search("kubernetes", 5)))


def test_tag_filter_requires_every_tag_inside_the_query(crowded: FullTextIndex) -> None:
    assert ids(crowded.search("kubernetes", limit=5, tags=["ops", "k8s"])) == ["both"]


def test_author_filter_matches_exactly(crowded: FullTextIndex) -> None:
    hits = crowded.search("kubernetes", limit=5, author="alice")
    assert sorted(ids(hits)) == ["both", "elsewhere", "ops"]


def test_path_prefix_filter_treats_the_prefix_literally(crowded: FullTextIndex) -> None:
    assert sorted(ids(crowded.search("kubernetes", path_prefix="team (ops)/"))) == ["both", "ops"]
    assert ids(crowded.search("kubernetes", path_prefix="team (ops)/a+b")) == ["both"]


def test_filters_do_not_change_scores(crowded: FullTextIndex) -> None:
    plain = {h.id: h.score for h in crowded.search("kubernetes", limit=50)}
    filtered = crowded.search("kubernetes", tags=["ops"], author="alice", path_prefix="team")
    assert {h.id: h.score for h in filtered} == {"both": plain["both"], "ops": plain["ops"]}


# Snippets


def test_snippet_wraps_matching_terms_in_bold(index: FullTextIndex) -> None:
    index.upsert([note("a", content="Café notes: the deploy runs after the tests pass.")])
    (hit,) = index.search("running")
    assert hit.snippet == "Café notes: the deploy **runs** after the tests pass"


def test_snippet_of_a_long_note_is_a_window_around_the_match(index: FullTextIndex) -> None:
    content = "filler words here. " * 40 + "The needle is here. " + "more filler text. " * 40
    index.upsert([note("a", content=content)])
    (hit,) = index.search("needle")
    assert "**needle**" in hit.snippet
    assert len(hit.snippet) <= 220
    assert hit.snippet.startswith("…")


def test_snippet_shows_the_rare_word_of_a_long_note_not_the_first_common_ones(
    index: FullTextIndex,
) -> None:
    """A common word ("the") fills the start of the note; the rare one ("pangolin") comes
    thousands of characters later and is what the snippet shows, in its stemmed form too."""
    content = "The cat and the other dog. " * 200 + "Here the pangolins walk. "
    content += "Closing the door. " * 100
    others = [note(f"o{i}", content="the end " * (i + 1)) for i in range(5)]
    index.upsert([note("a", content=content), *others])
    index.commit_pending()
    hit = index.search("the pangolin")[0]
    assert hit.id == "a"
    assert "**pangolins**" in hit.snippet and "**the**" in hit.snippet
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…")
    assert len(hit.snippet.replace("**", "")) <= 202


def test_a_query_asked_again_places_its_snippet_by_its_words_current_frequencies(
    index: FullTextIndex,
) -> None:
    """A search keeps its terms' weights for the next search of the same query only while
    the documents holding each term are as many: once "alpha" is in every note, the rare
    "beta" at the other end of the note places the snippet."""
    content = "The alpha here. " + "filler words here. " * 60 + "The beta there."
    index.upsert([note("a", content=content), note("z", content="unrelated")])
    index.commit_pending()
    (first,) = index.search("alpha beta")
    assert "**alpha**" in first.snippet and "**beta**" not in first.snippet
    index.upsert([note(f"o{i}", content="alpha " * (i + 1)) for i in range(30)])
    index.commit_pending()
    again = index.search("alpha beta", limit=40)
    (hit,) = [h for h in again if h.id == "a"]
    assert "**beta**" in hit.snippet and "**alpha**" not in hit.snippet


def test_snippet_of_text_whose_lower_case_is_longer_still_highlights(
    index: FullTextIndex,
) -> None:
    # "İ" lower-cases to two characters: offsets into the lowered text would be wrong.
    content = "İstanbul notes. " + "filler words here. " * 60 + "The needle is here."
    index.upsert([note("a", content=content)])
    index.commit_pending()
    (hit,) = index.search("needle")
    assert "**needle**" in hit.snippet and hit.snippet.startswith("…")


def test_a_word_in_the_title_only_is_not_looked_for_in_a_snippet_window(
    index: FullTextIndex,
) -> None:
    index.upsert([note("a", "Quokka facts", "Plain text about animals. " * 80)])
    index.commit_pending()
    (hit,) = index.search("quokka")
    assert hit.snippet.startswith("Plain text about animals.") and hit.snippet.endswith("…")


def test_title_only_match_gets_the_start_of_the_content(index: FullTextIndex) -> None:
    index.upsert([note("a", "Zeppelin", "First line.\n\n" + "long body " * 50)])
    (hit,) = index.search("zeppelin")
    assert hit.snippet.startswith("First line. long body")
    assert hit.snippet.endswith("…")
    assert len(hit.snippet) <= 201


# Locking, corruption and threads


def test_second_object_in_the_same_process_gets_index_locked(index: FullTextIndex) -> None:
    with pytest.raises(IndexLocked):
        FullTextIndex(index.directory)


def test_index_held_by_another_process_raises_index_locked(held_by_other_process: Path) -> None:
    with pytest.raises(IndexLocked, match="running Lithos server"):
        FullTextIndex(held_by_other_process)


def test_corrupt_index_raises_index_corrupt(tmp_path: Path) -> None:
    FullTextIndex(tmp_path / "ft").close()
    (tmp_path / "ft" / "meta.json").write_text("garbage{")
    with pytest.raises(IndexCorrupt):
        FullTextIndex(tmp_path / "ft")


def test_a_commit_tantivy_refuses_raises_index_corrupt_and_reports_it(tmp_path: Path) -> None:
    with FullTextIndex(tmp_path / "ft") as index:
        index.upsert([note("a", content="kept")])
    block_next_deletes(tmp_path / "ft")  # what a kill -9 in the middle of a commit leaves
    reported: list[IndexCorrupt] = []
    with FullTextIndex(tmp_path / "ft", on_corrupt=reported.append) as index:
        with pytest.raises(IndexCorrupt, match="FileAlreadyExists") as raised:
            index.upsert([note("a", content="changed")])
        assert reported == [raised.value]
        assert raised.value.location == tmp_path / "ft"
        assert str(tmp_path) not in raised.value.message


def test_a_rust_panic_inside_tantivy_becomes_index_corrupt(tmp_path: Path) -> None:
    with FullTextIndex(tmp_path / "ft") as index:
        index.upsert([note(f"n{i}", content=f"alpha {i}") for i in range(20)])
    assert make_tantivy_panic_on_open(tmp_path / "ft")
    with pytest.raises(IndexCorrupt, match="failed to open"):
        FullTextIndex(tmp_path / "ft")


def test_reopen_discards_uncommitted_changes(index: FullTextIndex) -> None:
    ticket = index.stage_upsert([note("a", content="staged")])
    index.close()
    index.reopen()
    with pytest.raises(RuntimeError, match="discarded"):
        index.commit_through(ticket)
    index.upsert([note("b", content="after")])
    assert ids(index.search("after")) == ["b"]


def test_searches_from_threads_during_upserts_do_not_raise(index: FullTextIndex) -> None:
    errors: list[BaseException] = []
    searches = 0
    done = threading.Event()

    def search_until_done() -> None:
        nonlocal searches
        while not done.is_set():
            try:
                index.search("version", tags=["t"])
                searches += 1
            except BaseException as error:
                errors.append(error)

    readers = [threading.Thread(target=search_until_done) for _ in range(4)]
    for reader in readers:
        reader.start()
    for i in range(60):
        index.upsert([note(f"n{i % 10}", content=f"version {i}", tags=("t",))])
    done.set()
    for reader in readers:
        reader.join()
    assert errors == []
    assert searches > 0
    assert index.count() == 10


def test_upserts_from_several_threads_all_land(index: FullTextIndex) -> None:
    def write(worker: int) -> None:
        for i in range(20):
            index.upsert([note(f"w{worker}-{i}", content="concurrent write")])

    writers = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert index.count() == 80
    assert len(index.search("concurrent", limit=100)) == 80


def test_concurrent_writers_share_commits_and_each_reads_its_own_write(
    index: FullTextIndex,
) -> None:
    missing: list[str] = []
    barrier = threading.Barrier(12)

    def writer(i: int) -> None:
        barrier.wait()
        index.upsert([note(f"n{i}", f"Note {i}", f"uniqueword{i}")])
        if ids(index.search(f"uniqueword{i}")) != [f"n{i}"]:
            missing.append(f"n{i}")

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert missing == []
    assert index.count() == 12
    assert index.commits < 12  # at least two writers were covered by one commit


def test_staged_changes_are_searchable_before_their_commit(index: FullTextIndex) -> None:
    ticket = index.stage_upsert([note("later", "Later", "pending words")])
    assert index.commits == 0
    assert ids(index.search("pending")) == ["later"]
    index.commit_through(ticket)
    assert ids(index.search("pending")) == ["later"]


def test_natural_language_mode_ignores_query_syntax(index: FullTextIndex) -> None:
    index.upsert([note("a", "Beta cells", "insulin from beta cells"), note("b", "Other", "cells")])
    assert ids(index.search("-beta cells")) == ["b"]  # syntax: exclude "beta"
    assert ids(index.search("-beta cells", syntax=False)) == ["a", "b"]


def test_hits_past_the_highlighted_ones_start_with_the_lead_of_the_content(
    index: FullTextIndex,
) -> None:
    words = " ".join(f"word{i}" for i in range(2000))
    index.upsert([note("a", content="alpha " + words), note("b", content="alpha beta")])
    hits = index.search("alpha", highlight=0)
    lead = next(h.snippet for h in hits if h.id == "a")
    assert lead.startswith("alpha word0 word1") and lead.endswith("…")
    assert len(lead) <= 201
    assert next(h.snippet for h in hits if h.id == "b") == "alpha beta"


def test_a_ranking_names_documents_by_key_and_reads_only_those_asked_for(
    index: FullTextIndex,
) -> None:
    index.upsert([note(f"n{i}", content="alpha " * (i + 1)) for i in range(5)])
    index.stage_upsert([note("staged", content="alpha " * 9)])  # still in the overlay
    ranking = index.rank("alpha", limit=10)
    everything = index.search("alpha", limit=10)
    assert ranking.keys == [id_key(hit.id) for hit in everything]
    assert [score for _, score in ranking.scores()] == [hit.score for hit in everything]
    wanted = {id_key("n1"), id_key("staged")}
    in_order = [hit.id for hit in everything if hit.id in ("n1", "staged")]
    assert [hit.id for hit in index.hits(ranking, wanted)] == in_order
    assert all("**alpha**" in hit.snippet for hit in index.hits(ranking, wanted))
