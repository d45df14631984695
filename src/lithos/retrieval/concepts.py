"""Concept notes in a retrieval (LCMA-DESIGN 2.1 J, 5.8): damped, and returned as gateways
together with their specifics.

Damping: a concept's salience counts only up to ``salience_cap``, and a concept retrieved
often lately loses score (``repeat_penalty`` per retrieval in the window, up to a cap), so a
broad concept cannot crowd out the notes it summarises. Gateway: a concept in the results
brings its best specific along when none is there, and a concept whose members fill two or
more places of the results joins them when a scout found it. Reasons say which.
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
        """The ``limit`` results, concepts kept together with their specifics: a concept in
        the results brings its best specific, and a concept two or more of whose members are
        in the results joins them (when a scout found it). Lower-ranked results make room."""
        final = list(ordered[:limit])
        if not self.rules.gateway or limit < 2:
            return final
        window = list(ordered[: max(3 * limit, 30)])
        groups: dict[str, set[str]] = {}
        for concept, member in self.memory.concept_links([c.note_id for c in window]):
            groups.setdefault(concept, set()).add(member)
        position = {c.note_id: i for i, c in enumerate(ordered)}
        chosen = {c.note_id for c in final}
        pairs: list[tuple[str, list[str]]] = []  # (concept, its specifics in the results)
        for concept in sorted((g for g in groups if g in position), key=position.__getitem__):
            members = [c.note_id for c in window if c.note_id in groups[concept]]
            here = [m for m in members if m in chosen]
            if concept in chosen and not here:
                here = members[:1]
            elif concept not in chosen and len(here) < 2:
                continue
            if here:
                chosen |= {concept, *here}
                pairs.append((concept, here))
        kept = {n for concept, here in pairs for n in (concept, *here)}
        picked = [c for c in ordered if c.note_id in chosen]
        while len(picked) > limit:
            spare = [i for i, c in enumerate(picked) if c.note_id not in kept]
            if not spare:
                break
            picked.pop(spare[-1])
        picked = picked[:limit]
        self._explain(picked, pairs, titles)
        return picked

    def _explain(
        self, picked: list[Candidate], pairs: list[tuple[str, list[str]]], titles: Titles
    ) -> None:
        shown = {c.note_id: c for c in picked}
        names = titles({n for concept, here in pairs for n in (concept, *here)})
        for concept, here in pairs:
            specifics = [m for m in here if m in shown]
            if concept not in shown or not specifics:
                continue
            listed = ", ".join(f"'{names.get(m, m)}'" for m in specifics[:3])
            _reason(shown[concept], f"concept: gateway to {len(specifics)} results ({listed})")
            for member in specifics:
                _reason(shown[member], f"concept: a specific of '{names.get(concept, concept)}'")


def _reason(candidate: Candidate, reason: str) -> None:
    if reason not in candidate.reasons:
        candidate.reasons.append(reason)
