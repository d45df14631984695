"""Signs that two notes may contradict each other: a cheap, explainable heuristic.

Two texts are candidates when they talk about the same things (their content words overlap)
and yet one negates what the other does not, or they give different numbers for the same
quantity. The result is evidence for a person or agent to review, never a verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NEGATIONS = frozenset(
    {
        "not",
        "no",
        "never",
        "none",
        "cannot",
        "can't",
        "isn't",
        "aren't",
        "doesn't",
        "don't",
        "didn't",
        "won't",
        "wasn't",
        "weren't",
        "shouldn't",
        "mustn't",
        "nor",
        "without",
        "neither",
        "false",
        "avoid",
    }
)
_STOP = frozenset(
    {
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "with",
        "by",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "we",
        "you",
        "they",
        "he",
        "she",
        "i",
        "our",
        "your",
        "their",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "will",
        "would",
        "should",
        "can",
        "could",
        "may",
        "might",
        "must",
        "so",
        "if",
        "then",
        "than",
        "when",
        "which",
        "what",
        "who",
        "all",
        "any",
        "each",
        "more",
        "most",
        "also",
        "only",
        "very",
    }
)
_TOKEN = re.compile(r"\d+(?:\.\d+)?%?|[a-z][a-z'-]*")


@dataclass(frozen=True)
class ContradictionSignal:
    """Why two texts may disagree: their word overlap and the disagreements found."""

    overlap: float
    reasons: tuple[str, ...]


def contradiction_signal(a: str, b: str, min_overlap: float = 0.3) -> ContradictionSignal | None:
    """Evidence that ``a`` and ``b`` disagree, or None when they share too little or nothing
    in them disagrees."""
    tokens_a, tokens_b = _tokens(a), _tokens(b)
    words_a, words_b = _content(tokens_a), _content(tokens_b)
    if not words_a or not words_b:
        return None
    overlap = len(words_a & words_b) / len(words_a | words_b)
    if overlap < min_overlap:
        return None
    reasons: list[str] = []
    negated_a, negated_b = NEGATIONS.intersection(tokens_a), NEGATIONS.intersection(tokens_b)
    if bool(negated_a) != bool(negated_b):
        said = sorted(negated_a or negated_b)
        reasons.append(f"negation in only one note ({', '.join(said)})")
    numbers_a, numbers_b = _quantities(tokens_a), _quantities(tokens_b)
    for key in sorted(numbers_a.keys() & numbers_b.keys()):
        if numbers_a[key].isdisjoint(numbers_b[key]):
            left, right = sorted(numbers_a[key]), sorted(numbers_b[key])
            reasons.append(
                f"different numbers for '{key}': {', '.join(left)} vs {', '.join(right)}"
            )
    return ContradictionSignal(round(overlap, 3), tuple(reasons)) if reasons else None


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _content(tokens: list[str]) -> set[str]:
    return {t for t in tokens if t not in _STOP and t not in NEGATIONS and not t[0].isdigit()}


def _quantities(tokens: list[str]) -> dict[str, set[str]]:
    """Numbers keyed by the word that names what they count: the word after the number
    (``30 seconds``), else the content word before it (``retries 3``)."""
    found: dict[str, set[str]] = {}
    for i, token in enumerate(tokens):
        if not token[0].isdigit():
            continue
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        before = next(
            (
                t
                for t in reversed(tokens[max(0, i - 3) : i])
                if t not in _STOP and not t[0].isdigit()
            ),
            "",
        )
        key = after if after and not after[0].isdigit() and after not in _STOP else before
        if key:
            found.setdefault(key, set()).add(token)
    return found
