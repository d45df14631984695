# ruff: noqa: RUF001  (the look-alike characters are the point of the adversarial texts)
"""Lithos's own WordPiece tokenizer gives exactly the ids of Hugging Face ``tokenizers``.

``tokenizers`` is a dev-only dependency, kept as the reference for this comparison: same
``tokenizer.json``, truncated at the model's 256 tokens and padded to the longest of a batch, as
the embedder used it before. Identical ids and masks mean identical embeddings, so the vector
cache stays valid.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import tarfile
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from lithos.errors import ConfigError
from lithos.store.embedder import MAX_TOKENS, model_files
from lithos.store.wordpiece import WordPieceTokenizer

# The reference runs single-threaded: on a loaded machine its thread pool only adds contention.
os.environ["TOKENIZERS_PARALLELISM"] = "false"
DATA = Path(__file__).resolve().parents[4] / "shared" / "data"
if not DATA.exists():
    DATA = Path("/work/shared/data")
CHUNK = 500  # about the size of the chunks Lithos embeds

ADVERSARIAL = [
    "",
    " ",
    "\n\t\r",
    "[CLS]",
    "before[SEP]after [PAD][UNK][MASK] [cls] [SEP",
    "Crème brûlée, naïve café, Ångström, Øresund, Straße, İstanbul, ΟΔΟΣ, ΣΊΣΥΦΟΣ",
    "e\u0301 vs \u00e9, a\u0308\u0304, \u1e9b\u0323, Z\u0351\u0352\u0353a\u0354\u0355lgo",
    "日本語のテキスト、漢字とカタカナ。中文标点！한국어 텍스트 𠀋𡈽𪚲 丽",
    "emoji 😀🥰👍🏽 👨‍👩‍👧‍👦 🇳🇿 ❤️ ☃ keycap 1️⃣",
    "nul\x00bell\x07del\x7fesc\x1b c1\x85\x9f replacement\ufffd",
    "zero\u200bwidth\u200cnon\u200djoiner\u2060word\ufeffjoiner \u00adsoft\u00adhyphen",
    "bidi \u202eevil\u202c \u2066isolate\u2069 private \ue000\U000f0000",
    "spaces\u00a0nb\u2003em\u3000ideographic\u2028line\u2029para\u0085nel",
    "punct «quotes» „low“ ‹›  — – ‐ … ¡¿ § ¶ † ‡ • ‰ ′ ″ ※ ⁂ 〈〉【】 ・ ﹏ ＼",
    "symbols $+<=>^`|~ ± × ÷ € £ ¥ © ® ™ ° µ ∑ ∞ ≠ ≤ √ → ⇒ ♠ ♥",
    "x" * 100,
    "y" * 101,
    "supercalifragilisticexpialidocious" * 4,
    "ab" * 400,
    " ".join(f"word{i}" for i in range(400)),
    "mixed " + "\u0301" * 50 + " marks alone",
    "ＦＵＬＬＷＩＤＴＨ ｆｕｌｌ ﬁ ﬂ ligatures ① ½ ²",
    "Ⅻ ⅻ ℌ ℍ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝐛𝐨𝐥𝐝",
    "tab\there, CRLF\r\nline, vertical\x0bform\x0cfeed",
    "\U0010ffff\U000e0001\U000e0041 tags, unassigned \u0378\U0003ffff",
]


def reference() -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(model_files()[1]))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return tokenizer


@pytest.fixture(scope="module")
def own() -> WordPieceTokenizer:
    return WordPieceTokenizer.from_file(model_files()[1])


def assert_same(own: WordPieceTokenizer, texts: list[str], batch: int = 64) -> None:
    ref = reference()
    for start in range(0, len(texts), batch):
        part = texts[start : start + batch]
        expected = ref.encode_batch(part)
        ids, mask = own.encode_batch(part, MAX_TOKENS)
        expected_ids = np.array([e.ids for e in expected], dtype=np.int64)
        expected_mask = np.array([e.attention_mask for e in expected], dtype=np.int64)
        for row, text in enumerate(part):
            assert ids[row].tolist() == expected_ids[row].tolist(), text[:200]
        np.testing.assert_array_equal(mask, expected_mask)


def chunks(text: str) -> Iterator[str]:
    yield text
    for start in range(0, len(text), CHUNK):
        yield text[start : start + CHUNK]


def markdown_pages(archive: str, limit: int) -> list[str]:
    texts: list[str] = []
    with tarfile.open(DATA / archive) as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".md"):
                data = tar.extractfile(member)
                assert data is not None
                texts.extend(chunks(data.read().decode("utf-8")))
                if len(texts) >= limit:
                    break
    return texts[:limit]


def needs_data() -> None:
    if not (DATA / "scifact" / "corpus.jsonl").exists():
        pytest.skip(f"evaluation data not found at {DATA}")


def test_scifact_abstracts(own: WordPieceTokenizer) -> None:
    needs_data()
    texts: list[str] = []
    with (DATA / "scifact" / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            texts.extend(chunks(f"{row['title']}\n\n{row['text']}"))
            if len(texts) >= 1000:
                break
    assert_same(own, texts)


def test_tldr_pages(own: WordPieceTokenizer) -> None:
    needs_data()
    assert_same(own, markdown_pages("tldr-pages-en.tar.gz", 1500))


def test_powershell_docs(own: WordPieceTokenizer) -> None:
    needs_data()
    assert_same(own, markdown_pages("powershell-docs.tar.gz", 1000))


def test_longmemeval_chats(own: WordPieceTokenizer) -> None:
    needs_data()
    with gzip.open(DATA / "longmemeval" / "longmemeval_s_dev60.json.gz", "rt") as file:
        questions = json.load(file)
    texts = [
        turn["content"][:2000]
        for question in questions[:3]
        for session in question["haystack_sessions"]
        for turn in session
    ]
    assert len(texts) > 1000
    assert_same(own, texts[:1000])


def test_adversarial_unicode(own: WordPieceTokenizer) -> None:
    assert_same(own, ADVERSARIAL, batch=7)


def test_code_points_alone_and_inside_words(own: WordPieceTokenizer) -> None:
    """Every assigned code point outside the CJK ideographs and private use areas, and every
    37th of the rest, alone and between a letter and an uppercase accented one (``É``, to be
    lowercased and decomposed), 64 code points per text. (All 1.1 million code points agree
    too; that run takes about a minute, too long for the suite: ``python -c`` it with
    ``sampled_code_points(every=1)``.)"""
    texts = [
        " ".join(f"{chr(c)} a{chr(c)}É" for c in group) for group in sampled_code_points(every=37)
    ]
    ref = reference()
    ref.no_truncation()
    ref.no_padding()
    expected = [encoding.ids for encoding in ref.encode_batch(texts)]
    got = [own.encode(text, max_length=100_000) for text in texts]
    assert got == expected


def sampled_code_points(every: int, size: int = 64) -> Iterator[list[int]]:
    """Groups of code points: the assigned ones outside CJK and private use, and every
    ``every``-th of the others (surrogates excepted: UTF-8 text cannot hold them)."""
    group: list[int] = []
    for code in range(1, sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        common = unicodedata.category(char) not in ("Cn", "Co") and "CJK" not in unicodedata.name(
            char, ""
        )
        if common or code % every == 0:
            group.append(code)
            if len(group) == size:
                yield group
                group = []
    if group:
        yield group


def test_truncation_keeps_cls_and_sep_around_the_first_tokens(own: WordPieceTokenizer) -> None:
    ids = own.encode(" ".join(["tea"] * 600), MAX_TOKENS)
    assert len(ids) == MAX_TOKENS
    assert (ids[0], ids[-1]) == (101, 102)
    assert set(ids[1:-1]) == {own.encode("tea", MAX_TOKENS)[1]}
    # A special token written in the text past the limit is cut off too.
    assert_same(own, ["word " * 300 + "[SEP]", "word " * 253 + "[SEP] x", "[SEP]" * 300])


def test_a_tokenizer_file_of_another_kind_is_a_config_error(tmp_path: Path) -> None:
    spec = json.loads(model_files()[1].read_text(encoding="utf-8"))
    spec["model"]["type"] = "BPE"
    other = tmp_path / "tokenizer.json"
    other.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(ConfigError, match="not a BERT WordPiece tokenizer"):
        WordPieceTokenizer.from_file(other)
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot read tokenizer"):
        WordPieceTokenizer.from_file(tmp_path / "broken.json")
