"""Concept notes in a retrieval (LCMA-DESIGN 2.1 J, 5.8): damped, and returned as gateways
together with their specifics.

Damping: a concept's salience counts only up to ``salience_cap``, and a concept retrieved
often lately loses score (``repeat_penalty`` per retrieval in the window, up to a cap), so a
broad concept cannot crowd out the notes it summarises. Gateway: at most one concept joins
the results, right after its best specific and only when that specific is shown anyway; it
takes the last place, never more (measured on SciFact, bench/NOTES.md). Reasons say which.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from lithos.domain.memory import ConceptRules, repeat_penalty
from lithos.domain.retrieval import Candidate, NodeStats
from lithos.domain.timestamps import format_timestamp
from lithos.retrieval import rank
from lithos.store.memory import MemoryStore

Titles = Callable[[Iterable[str]], dict[str, str]]


class ConceptGateway:
    def __init__(
        self,
        memory: MemoryStore,
        rules: ConceptRules,
        salience_cap: float,
        salience_weight: float,
    ) -> None:
        self.memory = memory
        self.rules = rules
        self.salience_cap = salience_cap
        self.salience_weight = salience_weight

    def damp(
        self,
        ordered: Sequence[Candidate],
        note_types: Mapping[str, str],
        stats: Mapping[str, NodeStats],
        now: datetime,
    ) -> list[Candidate]:
        """Lower every concept's score by its damping; the candidates, best first."""
        concepts = [c for c in ordered if note_types.get(c.note_id) == "concept"]
        if not concepts:
            return list(ordered)
        hours = self.rules.repeat_window_hours
        since = format_timestamp(now - timedelta(hours=hours))
        recent = self.memory.recent_retrievals([c.note_id for c in concepts], since)
        for c in concepts:
            times = recent.get(c.note_id, 0)
            learned = stats.get(c.note_id)
            excess = max(0.0, learned.salience - self.salience_cap) if learned else 0.0
            penalty = repeat_penalty(times, self.rules) + self.salience_weight * excess
            if penalty > 0:
                c.score -= penalty
                c.reasons.append(
                    f"concept: damped {-penalty:+.2f} (retrieved {times} times in {hours:g} h)"
                )
        return rank.ranked({c.note_id: c for c in ordered})

    def join(self, ordered: Sequence[Candidate], limit: int, titles: Titles) -> list[Candidate]:
        """The ``limit`` results with at most one concept among them, placed as a gateway
        right after its best specific. Concepts Lithos formed never take a place on their own
        score: one is shown only when a scout found it, one of its members is among the
        first ``limit - 1`` other results, and its damped score is at least that of the
        result it displaces (the last one), so a concept costs the results at most their
        last, weakest place and damping decides when it stops coming back."""
        if not self.rules.gateway:
            return list(ordered[:limit])
        groups: dict[str, set[str]] = {}
        for concept, member in self.memory.concept_links([c.note_id for c in ordered]):
            groups.setdefault(concept, set()).add(member)
        specifics = [c for c in ordered if c.note_id not in groups]
        final = specifics[:limit]
        if limit < 2:
            return final
        shown = [c.note_id for c in final[: limit - 1]]
        floor = final[-1].score if len(final) == limit else float("-inf")
        options = [  # (its best member's place, -score, concept) for each concept that may join
            (min(i for i, n in enumerate(shown) if n in groups[c.note_id]), -c.score, c.note_id)
            for c in ordered
            if c.note_id in groups and c.score >= floor and groups[c.note_id] & set(shown)
        ]
        if not options:
            return final
        place, _, concept_id = min(options)
        found = {c.note_id: c for c in ordered}
        picked = [*final[: place + 1], found[concept_id], *final[place + 1 :]][:limit]
        here = [n for n in shown if n in groups[concept_id]]
        self._explain(picked, concept_id, here, titles)
        return picked

    def _explain(
        self, picked: list[Candidate], concept: str, specifics: list[str], titles: Titles
    ) -> None:
        shown = {c.note_id: c for c in picked}
        names = titles({concept, *specifics})
        listed = ", ".join(f"'{names.get(m, m)}'" for m in specifics[:3])
        _reason(shown[concept], f"concept: gateway to {len(specifics)} results ({listed})")
        for member in specifics:
            _reason(shown[member], f"concept: a specific of '{names.get(concept, concept)}'")


def _reason(candidate: Candidate, reason: str) -> None:
    if reason not in candidate.reasons:
        candidate.reasons.append(reason)
