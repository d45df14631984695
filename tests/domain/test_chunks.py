from __future__ import annotations

import hashlib

import pytest

from lithos.domain.chunks import ChunkHit, best_per_note, chunk_hash, chunk_text


def paragraph(length: int, word: str = "word") -> str:
    text = " ".join([word] * (length // (len(word) + 1) + 1))
    return text[:length].strip()


def test_empty_and_whitespace_text_gives_no_chunks() -> None:
    assert chunk_text("") == []
    assert chunk_text("  \n\n\t \n ") == []


def test_short_text_is_one_stripped_chunk() -> None:
    assert chunk_text("\n  Hello world.  \n") == ["Hello world."]


def test_small_paragraphs_are_packed_up_to_the_target() -> None:
    paragraphs = [paragraph(100, f"p{i}") for i in range(10)]
    chunks = chunk_text("\n\n".join(paragraphs), target=500, maximum=1000)
    assert chunks[0] == "\n\n".join(paragraphs[:4])  # 4*100 + 3*2 = 406; a fifth would be 508
    assert all(len(chunk) <= 500 for chunk in chunks)
    assert "\n\n".join(chunks) == "\n\n".join(paragraphs)


def test_paragraph_boundaries_are_never_split_when_paragraphs_fit() -> None:
    paragraphs = [paragraph(300, f"p{i}") for i in range(6)]
    chunks = chunk_text("\n\n".join(paragraphs))
    assert all(chunk in paragraphs for chunk in chunks)


def test_paragraph_between_target_and_maximum_stays_whole() -> None:
    middle = paragraph(800, "mid")
    chunks = chunk_text(f"short one\n\n{middle}\n\nshort two")
    assert chunks == ["short one", middle, "short two"]


def test_blank_lines_with_spaces_and_crlf_separate_paragraphs() -> None:
    text = f"{paragraph(400, 'a')}\r\n  \r\n{paragraph(400, 'b')}"
    assert chunk_text(text) == [paragraph(400, "a"), paragraph(400, "b")]


def test_oversized_paragraph_splits_at_sentence_ends() -> None:
    sentences = [f"Sentence number {i} says something fairly plain." for i in range(60)]
    chunks = chunk_text(" ".join(sentences), target=500, maximum=1000)
    assert len(chunks) > 1
    assert all(len(chunk) <= 1000 for chunk in chunks)
    assert all(chunk.endswith(".") for chunk in chunks)
    assert " ".join(chunks) == " ".join(sentences)


def test_sentence_longer_than_maximum_is_hard_split_at_whitespace() -> None:
    text = " ".join(["token"] * 450)  # 2699 characters, no sentence end
    chunks = chunk_text(text, target=500, maximum=1000)
    assert all(len(chunk) <= 1000 for chunk in chunks)
    assert all(chunk.split() == ["token"] * len(chunk.split()) for chunk in chunks)
    assert " ".join(chunks).split() == text.split()


def test_text_without_whitespace_is_cut_at_the_maximum() -> None:
    chunks = chunk_text("x" * 2500, target=500, maximum=1000)
    assert [len(chunk) for chunk in chunks] == [1000, 1000, 500]


@pytest.mark.parametrize(("target", "maximum"), [(50, 120), (500, 1000), (1000, 1000)])
def test_no_chunk_ever_exceeds_the_maximum(target: int, maximum: int) -> None:
    text = "\n\n".join(
        [
            "# Heading",
            paragraph(3000, "lorem"),
            "Tiny.",
            "A sentence. " * 200,
            "y" * 5000,
            paragraph(90, "z"),
        ]
    )
    chunks = chunk_text(text, target=target, maximum=maximum)
    assert chunks
    assert all(0 < len(chunk) <= maximum for chunk in chunks)
    assert all(chunk == chunk.strip() for chunk in chunks)


def test_chunking_is_deterministic() -> None:
    text = "\n\n".join(paragraph(n * 37 % 900 + 10, f"w{n}") for n in range(40))
    assert chunk_text(text) == chunk_text(text)


@pytest.mark.parametrize(("target", "maximum"), [(0, 10), (20, 10), (-1, 5)])
def test_bad_bounds_are_rejected(target: int, maximum: int) -> None:
    with pytest.raises(ValueError, match="target"):
        chunk_text("text", target=target, maximum=maximum)


def test_chunk_hash_is_the_sha256_of_the_utf8_text() -> None:
    assert chunk_hash("héllo") == hashlib.sha256("héllo".encode()).hexdigest()
    assert chunk_hash("a") != chunk_hash("a ")


def test_best_per_note_keeps_the_best_chunk_of_each_note_in_score_order() -> None:
    hits = [
        ChunkHit("a", 0, "a0", 0.5),
        ChunkHit("b", 3, "b3", 0.9),
        ChunkHit("a", 2, "a2", 0.7),
        ChunkHit("c", 0, "c0", 0.6),
        ChunkHit("b", 1, "b1", 0.2),
    ]
    assert [(hit.note_id, hit.chunk_index) for hit in best_per_note(hits, 10)] == [
        ("b", 3),
        ("a", 2),
        ("c", 0),
    ]
    assert [hit.note_id for hit in best_per_note(hits, 2)] == ["b", "a"]
    assert best_per_note(hits, 0) == []
