"""Placing the stretch of a note Tantivy's snippet generator reads (pure functions)."""

from __future__ import annotations

from collections.abc import Mapping

from lithos.store.fulltext_snippets import WINDOW_CHARS, snippet_window, term_weights


def window(content: str, weights: Mapping[str, float]) -> tuple[int, int]:
    found = snippet_window(content, weights)
    assert found is not None
    return found


def test_term_weights_make_rare_terms_heavier_and_drop_absent_ones() -> None:
    weights = term_weights({"the", "pangolin", "zebra"}, 100, {"the": 90, "pangolin": 2})
    assert set(weights) == {"the", "pangolin"}
    assert weights["pangolin"] > 5 * weights["the"] > 0


def test_the_window_surrounds_the_heaviest_words_and_is_cut_at_spaces() -> None:
    content = "the cat sat. " * 300 + "a pangolin walked by. " + "the end. " * 300
    at = content.index("pangolin")
    start, end = window(content, {"the": 0.1, "pangolin": 4.0})
    assert start < at < end and end - start <= WINDOW_CHARS + 20
    assert content[start - 1] == " " and content[end] == " "


def test_stemmed_forms_count_and_other_words_with_the_same_start_do_not() -> None:
    content = "runway " * 200 + "she was running. " + "runway " * 200
    start, end = window(content, {"run": 1.0})
    assert start < content.index("running") < end


def test_no_window_when_no_word_can_match() -> None:
    assert snippet_window("nothing to see here", {"pangolin": 3.0}) is None


def test_common_terms_place_the_window_when_no_rare_one_occurs() -> None:
    content = "x " * 1000 + "the end"
    start, end = window(content, {"pangolin": 5.0, "the": 0.1})
    assert start < content.index("the end") < end


def test_text_whose_lower_case_changes_length_is_read_whole() -> None:
    content = "İstanbul " + "word " * 500
    assert snippet_window(content, {"word": 1.0}) == (0, len(content))
