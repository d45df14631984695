"""Frames: the structure of a note that tells a story of solving something (LCMA-DESIGN 2.1 D).

A frame has up to five slots, ``problem``, ``constraints``, ``actions``, ``outcome`` and
``lessons``, read from the note's Markdown headings (``## Problem``, ``### What we did``,
``## Lessons learned``...) or labelled lines (``Problem: ...``, ``**Outcome:** ...``). Each
slot keeps the content words of its section. Two notes about different subjects can share a
frame (the same kind of problem met with the same kind of action): that is what the analogy
scout matches, rather than closeness of topic. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from lithos.domain.retrieval import words

Slot = Literal["problem", "constraints", "actions", "outcome", "lessons"]
SLOTS: tuple[Slot, ...] = ("problem", "constraints", "actions", "outcome", "lessons")

# Heading or label words that open each slot (lower case, matched as whole words).
_CUES: dict[Slot, tuple[str, ...]] = {
    "problem": (
        "problem",
        "problems",
        "issue",
        "issues",
        "symptom",
        "symptoms",
        "context",
        "background",
        "situation",
        "challenge",
        "bug",
        "incident",
        "motivation",
    ),
    "constraints": (
        "constraint",
        "constraints",
        "requirement",
        "requirements",
        "limit",
        "limits",
        "limitation",
        "limitations",
        "assumption",
        "assumptions",
        "non-goals",
        "trade-offs",
        "tradeoffs",
        "budget",
    ),
    "actions": (
        "action",
        "actions",
        "approach",
        "solution",
        "solutions",
        "fix",
        "fixes",
        "steps",
        "what we did",
        "method",
        "methods",
        "implementation",
        "resolution",
        "attempt",
        "attempts",
        "plan",
        "decision",
        "mitigation",
        "workaround",
        "remedy",
    ),
    "outcome": (
        "outcome",
        "outcomes",
        "result",
        "results",
        "impact",
        "effect",
        "effects",
        "conclusion",
        "conclusions",
        "verdict",
        "what happened",
        "consequences",
    ),
    "lessons": (
        "lesson",
        "lessons",
        "learned",
        "learnt",
        "learnings",
        "takeaway",
        "takeaways",
        "retrospective",
        "insight",
        "insights",
        "next time",
        "postmortem",
        "post-mortem",
    ),
}
# Cue words and cue phrases (several words) -> index of their slot in SLOTS (the first slot
# when a cue were listed under two).
_WORD_CUES: dict[str, int] = {}
_PHRASE_CUES: list[tuple[str, int]] = []
for _index, _slot in enumerate(SLOTS):
    for _cue in _CUES[_slot]:
        _spaced = _cue.replace("-", " ")
        if " " in _spaced:
            _PHRASE_CUES.append((f" {_spaced} ", _index))
        else:
            _WORD_CUES.setdefault(_spaced, _index)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_LABEL = re.compile(
    r"^\s*(?:[-*]\s+)?(?:\*\*|__)?([A-Za-z][A-Za-z \-]{1,30}?)(?:\*\*|__)?\s*:(?:\*\*|__)?\s*(.*)$"
)
_SLOT_WORDS = 12  # content words kept per slot
_STOP = frozenset(
    words(
        "a an and are as at be been but by can could did do does for from had has have how i if"
        " in into is it its me more most my no not of on or our out so some such than that the"
        " their them then there these they this those to too us was we were what when where"
        " which while who why will with would you your also very just only after before over"
        " under again all any each few other same own both between through during about"
    )
)


@dataclass(frozen=True)
class Frame:
    """The slots a note fills and the content words of each."""

    slots: Mapping[Slot, frozenset[str]] = field(default_factory=dict)

    @property
    def filled(self) -> frozenset[Slot]:
        return frozenset(self.slots)

    def __bool__(self) -> bool:
        return bool(self.slots)


def slot_of(label: str) -> Slot | None:
    """The slot a heading or label opens, if any (the first cue found, in slot order)."""
    tokens = words(label.replace("-", " "))
    best = min((_WORD_CUES[t] for t in tokens if t in _WORD_CUES), default=len(SLOTS))
    if len(tokens) > 1:
        padded = f" {' '.join(tokens)} "
        best = min((i for phrase, i in _PHRASE_CUES if i < best and phrase in padded), default=best)
    return SLOTS[best] if best < len(SLOTS) else None


def extract_frame(body: str) -> Frame:
    """The frame of a note's Markdown body: each heading or ``Label:`` line that names a slot
    opens it; the text up to the next heading (or the label's own line) is its content."""
    collected: dict[Slot, list[str]] = {}
    current: Slot | None = None
    in_fence = False
    for line in body.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        # Cheap tests first: a heading starts with '#', a label holds ':'.
        heading = _HEADING.match(line) if stripped.startswith("#") else None
        if heading:
            current = slot_of(heading.group(1))
            if current is not None:
                collected.setdefault(current, [])
            continue
        label = _LABEL.match(line) if ":" in line else None
        labelled = slot_of(label.group(1)) if label else None
        if label and labelled is not None:
            collected.setdefault(labelled, []).append(label.group(2))
            continue
        if current is not None:
            collected[current].append(line)
    return Frame({slot: _content_words(" ".join(lines)) for slot, lines in collected.items()})


def _content_words(text: str) -> frozenset[str]:
    kept: dict[str, None] = {}
    for word in words(text):
        if len(word) > 2 and word not in _STOP and not word.isdigit():
            word = word[:-1] if len(word) > 4 and word.endswith("s") else word  # crude plural
            kept.setdefault(word, None)
            if len(kept) == _SLOT_WORDS:
                break
    return frozenset(kept)
