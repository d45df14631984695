"""The memo of stored full-text documents: reused within a generation, never across a change."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lithos.store.fulltext import FullTextIndex, id_key
from lithos.store.fulltext_stored import StoredDocs, StoredFields
from tests.store.test_fulltext import note


@pytest.fixture
def index(tmp_path: Path) -> Iterator[FullTextIndex]:
    with FullTextIndex(tmp_path / "fulltext") as opened:
        opened.upsert(
            [
                note("kube", "Kubernetes operators", "Operators reconcile the cluster state."),
                note("pasta", "Cooking pasta", "Boil water, add salt, then the pasta."),
            ]
        )
        yield opened


def fields(text: str) -> StoredFields:
    return StoredFields("id", "title", "path", text)


def test_a_search_keeps_what_it_read_and_the_next_one_shows_the_same(
    index: FullTextIndex,
) -> None:
    first = index.search("operators cluster")
    stored = index._stored
    assert stored is not None
    kept = stored.get(id_key("kube"))
    assert kept is not None
    assert (kept.title, kept.content) == (
        "Kubernetes operators",
        "Operators reconcile the cluster state.",
    )
    assert index.search("operators cluster") == first
    assert index._stored is stored  # nothing changed: the same memo served the second search


def test_a_committed_change_is_shown_instead_of_what_was_kept(index: FullTextIndex) -> None:
    before = index.search("operators")
    assert [(hit.title, hit.snippet) for hit in before] == [
        ("Kubernetes operators", "**Operators** reconcile the cluster state")
    ]
    index.upsert([note("kube", "Operators, renamed", "Operators now watch every namespace.")])
    after = index.search("operators")
    assert [(hit.title, hit.snippet) for hit in after] == [
        ("Operators, renamed", "**Operators** now watch every namespace")
    ]


def test_a_staged_change_is_shown_before_its_commit(index: FullTextIndex) -> None:
    index.search("operators")
    index.stage_upsert([note("kube", "Staged title", "Operators staged, not committed.")])
    assert [hit.title for hit in index.search("operators")] == ["Staged title"]
    index.commit_pending()
    assert [hit.title for hit in index.search("operators")] == ["Staged title"]


def test_a_ranking_from_before_a_commit_gets_no_memo_after_it(index: FullTextIndex) -> None:
    old_index, old_generation = index._index, index._generation
    index.search("pasta")
    index.upsert([note("other", "Other", "Nothing in common.")])
    index.search("pasta")
    current = index._stored
    assert current is not None
    assert current.generation == index._generation != old_generation
    assert index._stored_docs(old_index, old_generation) is None
    assert index._stored is current  # a late ranking does not replace the current memo


def test_a_reopened_index_starts_a_new_memo(index: FullTextIndex) -> None:
    index.search("pasta")
    index.close()
    index.reopen()
    index.search("pasta")
    assert index._stored is not None
    assert index._stored.owner is index._index
    assert len(index._stored) == 1


def test_reads_without_content_are_not_kept(index: FullTextIndex) -> None:
    hits = index.search("pasta", snippets=False)
    assert [(hit.title, hit.snippet) for hit in hits] == [("Cooking pasta", "")]
    assert index._stored is not None
    assert len(index._stored) == 0
    index.search("pasta")
    assert len(index._stored) == 1
    again = index.search("pasta", snippets=False)
    assert [(hit.title, hit.snippet) for hit in again] == [("Cooking pasta", "")]


def test_a_read_only_index_keeps_nothing(index: FullTextIndex, tmp_path: Path) -> None:
    reader = FullTextIndex(tmp_path / "fulltext", read_only=True)
    assert [hit.id for hit in reader.search("pasta")] == ["pasta"]
    assert reader._stored is None


EMPTY = sys.getsizeof("")


def test_the_least_recently_used_documents_go_first_past_the_budget() -> None:
    stored = StoredDocs(object(), 0, budget=3 * EMPTY + 10)
    stored.put(1, fields("aaaa"))
    stored.put(2, fields("bbbb"))
    assert stored.get(1) is not None  # 1 is now the most recent
    stored.put(3, fields("cccc"))
    assert stored.get(2) is None
    assert stored.get(1) is not None
    assert stored.get(3) is not None
    stored.put(3, fields("cc"))  # a replacement frees what the old copy held
    stored.put(4, fields("dddd"))
    assert [stored.get(key) is not None for key in (1, 3, 4)] == [True, True, True]


def test_a_document_larger_than_the_budget_is_not_kept() -> None:
    stored = StoredDocs(object(), 0, budget=EMPTY + 10)
    stored.put(1, fields("aaaa"))
    stored.put(2, fields("x" * 11))
    assert stored.get(2) is None
    assert stored.get(1) is not None


def test_a_highlighted_document_keeps_its_lowered_content(index: FullTextIndex) -> None:
    first = index.search("Operators")
    stored = index._stored
    assert stored is not None
    key = id_key("kube")
    kept = stored._lowered.get(key)
    assert kept == "operators reconcile the cluster state."
    assert index.search("Operators") == first
    assert stored._lowered.get(key) is kept  # the second search used the kept text


def test_lowered_content_is_counted_and_dropped_with_its_document() -> None:
    stored = StoredDocs(object(), 0, budget=3 * EMPTY + 11)
    text = "AAAA"
    stored.put(1, fields(text))
    assert stored.lowered(1, text) == "aaaa"
    assert stored.lowered(1, text) is stored.lowered(1, text)
    assert stored._bytes == 2 * sys.getsizeof(text)
    stored.put(2, fields("bbbb"))  # past the budget: document 1 and its lowered text go
    assert stored.get(1) is None
    assert 1 not in stored._lowered
    assert stored._bytes == sys.getsizeof("bbbb")


def test_lowered_content_of_another_text_is_not_kept() -> None:
    stored = StoredDocs(object(), 0)
    stored.put(1, fields("Kept"))
    assert stored.lowered(1, "Other") == "other"  # not the content kept under 1
    assert stored.lowered(2, "Unkept") == "unkept"  # nothing kept under 2
    assert stored._lowered == {}
    stored.put(1, fields("New"))
    assert stored.lowered(1, stored.get(1).content) == "new"  # type: ignore[union-attr]
    stored.put(1, fields("Newer"))  # a replacement drops the old lowered text
    assert stored._lowered == {}
