"""BERT's WordPiece tokenizer, as all-MiniLM-L6-v2's ``tokenizer.json`` describes it.

The same ids and attention masks as Hugging Face ``tokenizers`` for this file (a test compares
them on thousands of real texts and on every code point), without its dependency tree. The steps
are those of the file:

1. special tokens (``[CLS]``, ``[SEP]``, ...) written literally in the text are cut out first and
   keep their ids (they are "not normalized" added tokens);
2. BertNormalizer: drop control characters, turn whitespace into spaces, put spaces around CJK
   ideographs, decompose (NFD) and drop non-spacing marks (accents), lowercase;
3. BertPreTokenizer: split on whitespace and make every punctuation character a word of its own;
4. WordPiece: the longest vocabulary entry from the start of each word, then ``##``-prefixed
   continuations; a word longer than ``max_input_chars_per_word`` characters, or one that
   cannot be covered, is ``[UNK]``;
5. ``[CLS] ... [SEP]``, truncated to ``max_length`` tokens, padded to the longest of a batch.

Which characters count as control, whitespace, CJK, mark or punctuation comes from the Unicode
tables compiled into ``tokenizers`` (older than Python's for marks and format characters), so
those classes are read from ``wordpiece_tables.py``, generated from the reference by
``scripts/gen_wordpiece_tables.py``; decomposition and lowercasing are Python's.
"""

from __future__ import annotations

import json
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Sequence
from pathlib import Path

from lithos.errors import ConfigError
from lithos.lazy_numpy import np
from lithos.store.wordpiece_tables import BITS, STARTS

# Class bits of wordpiece_tables.py (see scripts/gen_wordpiece_tables.py).
_REMOVE, _SPACE, _CJK, _MARK, _PUNCT = 1, 2, 4, 8, 16
# Words seen are cached with their ids; past this many the cache starts again.
_CACHE_LIMIT = 200_000


def _bits(char: str) -> int:
    return BITS[bisect_right(STARTS, ord(char)) - 1]


def _ranges(bit: int) -> str:
    """A regex character-class body for the code points whose class has ``bit``."""
    parts = []
    for index, start in enumerate(STARTS):
        if BITS[index] & bit:
            end = (STARTS[index + 1] if index + 1 < len(STARTS) else 0x110000) - 1
            parts.append(re.escape(chr(start)) + ("-" + re.escape(chr(end)) if end > start else ""))
    return "".join(parts)


class _CharTable(dict[int, str | None]):
    """A ``str.translate`` table filled on demand: ``replace(char)`` for each character met.

    Characters already met are looked up by ``str.translate`` in C; only the first meeting of
    a character runs Python. Past ``_CHAR_LIMIT`` entries (text using a large part of Unicode),
    new characters are answered without being kept.
    """

    def __init__(self, replace: Callable[[str], str | None]) -> None:
        super().__init__()
        self._replace = replace
        for code in range(128):
            self[code] = replace(chr(code))

    def __missing__(self, code: int) -> str | None:
        replacement = self._replace(chr(code))
        if len(self) < _CHAR_LIMIT:
            self[code] = replacement
        return replacement


def _clean(char: str) -> str | None:
    """BertNormalizer's clean_text and handle_chinese_chars for one character."""
    bits = _bits(char)
    if bits & _REMOVE:
        return None
    if bits & _SPACE:
        return " "
    if bits & _CJK:
        return f" {char} "
    return char


def _unmark(char: str) -> str | None:
    """Strip accents: drop a (decomposed) non-spacing mark."""
    return None if _bits(char) & _MARK else char


_CHAR_LIMIT = 50_000
_CLEAN = _CharTable(_clean)
_UNMARK = _CharTable(_unmark)
_PUNCTUATION = _ranges(_PUNCT)
# After normalisation the only whitespace left is " ".
_WORDS = re.compile(f"[{_PUNCTUATION}]|[^ {_PUNCTUATION}]+")


class WordPieceTokenizer:
    """Encodes texts into the model's token ids; thread-safe (its word cache is a plain dict)."""

    def __init__(
        self,
        vocabulary: dict[str, int],
        specials: dict[str, int],
        unknown: str,
        cls: str,
        sep: str,
        max_input_chars_per_word: int,
        prefix: str = "##",
    ) -> None:
        self._vocabulary = vocabulary
        self._specials = specials
        self._unknown = vocabulary[unknown]
        self._cls = vocabulary[cls]
        self._sep = vocabulary[sep]
        self._max_chars = max_input_chars_per_word
        self._prefix = prefix
        self._cache: dict[str, tuple[int, ...]] = {}
        # Longest first, so that the leftmost match is also the longest one.
        ordered = sorted(specials, key=len, reverse=True)
        self._special_split = re.compile("(" + "|".join(map(re.escape, ordered)) + ")")

    @classmethod
    def from_file(cls, path: Path) -> WordPieceTokenizer:
        """Load a BERT ``tokenizer.json``; ConfigError if it describes anything else."""
        try:
            spec = json.loads(path.read_text(encoding="utf-8"))
            model = spec["model"]
            normalizer = spec["normalizer"]
            template = spec["post_processor"]["single"]
            expected = (
                model.get("type") == "WordPiece"
                and normalizer.get("type") == "BertNormalizer"
                and normalizer.get("clean_text") is True
                and normalizer.get("handle_chinese_chars") is True
                and normalizer.get("lowercase") is True
                and normalizer.get("strip_accents") in (None, True)
                and spec["pre_tokenizer"].get("type") == "BertPreTokenizer"
                and [next(iter(part)) for part in template]
                == ["SpecialToken", "Sequence", "SpecialToken"]
                and not any(token.get("normalized") for token in spec["added_tokens"])
            )
            if not expected:
                raise ConfigError(f"{path} is not a BERT WordPiece tokenizer Lithos can read")
            return cls(
                vocabulary=dict(model["vocab"]),
                specials={token["content"]: token["id"] for token in spec["added_tokens"]},
                unknown=model["unk_token"],
                cls=template[0]["SpecialToken"]["id"],
                sep=template[2]["SpecialToken"]["id"],
                max_input_chars_per_word=int(model["max_input_chars_per_word"]),
                prefix=model["continuing_subword_prefix"],
            )
        except (OSError, ValueError, KeyError, TypeError, StopIteration) as exc:
            raise ConfigError(f"cannot read tokenizer {path}: {exc}") from exc

    def encode(self, text: str, max_length: int) -> list[int]:
        """The ids of ``text``: ``[CLS]``, at most ``max_length - 2`` tokens, ``[SEP]``."""
        ids: list[int] = []
        limit = max_length - 2
        for index, part in enumerate(self._special_split.split(text)):
            if len(ids) >= limit:
                break
            if index % 2:
                ids.append(self._specials[part])
            elif part:
                for match in _WORDS.finditer(_normalize(part)):
                    ids.extend(self._word(match.group()))
                    if len(ids) >= limit:
                        break
        return [self._cls, *ids[:limit], self._sep]

    def encode_batch(self, texts: Sequence[str], max_length: int) -> tuple[np.ndarray, np.ndarray]:
        """Token ids and attention mask of ``texts``, padded with 0 to the longest of them."""
        rows = [self.encode(text, max_length) for text in texts]
        width = max(len(row) for row in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for index, row in enumerate(rows):
            ids[index, : len(row)] = row
            mask[index, : len(row)] = 1
        return ids, mask

    def _word(self, word: str) -> tuple[int, ...]:
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        ids = self._wordpiece(word)
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[word] = ids
        return ids

    def _wordpiece(self, word: str) -> tuple[int, ...]:
        if len(word) > self._max_chars:
            return (self._unknown,)
        vocabulary, ids, start = self._vocabulary, [], 0
        while start < len(word):
            end, found = len(word), None
            while end > start:
                piece = word[start:end] if start == 0 else self._prefix + word[start:end]
                found = vocabulary.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return (self._unknown,)
            ids.append(found)
            start = end
        return tuple(ids)


def _normalize(text: str) -> str:
    """BertNormalizer: clean, space CJK, NFD without non-spacing marks, lowercase."""
    text = text.translate(_CLEAN)
    if not text.isascii():
        text = unicodedata.normalize("NFD", text).translate(_UNMARK)
    # str.lower() turns a capital sigma at the end of a word into the final form (U+03C2); the
    # reference lowercases character by character, which always gives U+03C3.
    if "\u03a3" in text:
        return "".join(char.lower() for char in text)
    return text.lower()
