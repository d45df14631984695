"""Typed, weighted edges between notes: the values and rules of LCMA's learned graph.

Pure: no I/O. An edge joins two notes with one of a fixed set of types, a weight in [0, 1], a
namespace, who made it (provenance) and the evidence for it. At most one edge exists per
``(from_id, to_id, type, namespace)``. Weights decay while an edge goes unused
(:class:`DecayPolicy`); the stored weight is the weight as of ``last_used_at``, and every read
reports the weight as of now.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args

from lithos.domain.links import parse_links
from lithos.domain.metadata import ROOT_NAMESPACE

EdgeType = Literal[
    "related_to", "supports", "contradicts", "is_example_of", "depends_on", "analogy_to", "refines"
]
EDGE_TYPES: tuple[str, ...] = get_args(EdgeType)

Provenance = Literal["human", "agent", "rule", "inferred"]
PROVENANCES: tuple[str, ...] = get_args(Provenance)

Resolution = Literal["accepted_dual", "superseded", "refuted", "merged"]
RESOLUTIONS: tuple[str, ...] = get_args(Resolution)

ConflictState = Literal["unreviewed", "accepted_dual", "superseded", "refuted", "merged"]
CONFLICT_STATES: tuple[str, ...] = get_args(ConflictState)

DEFAULT_NAMESPACE = ROOT_NAMESPACE  # as for notes: an edge outside any namespace
MAX_EVIDENCE = 20  # snippets kept per edge; older ones give way to newer


@dataclass(frozen=True)
class Edge:
    """One typed edge. ``weight`` is as of the time it was read (decay applied);
    ``stored_weight`` is the weight as of ``last_used_at``."""

    edge_id: str
    from_id: str
    to_id: str
    type: EdgeType
    weight: float
    stored_weight: float
    namespace: str
    provenance: Provenance
    actor: str | None
    evidence: tuple[str, ...]
    conflict_state: ConflictState | None
    created_at: datetime
    updated_at: datetime
    last_used_at: datetime

    def other(self, note_id: str) -> str:
        """The endpoint that is not ``note_id``."""
        return self.to_id if self.from_id == note_id else self.from_id


@dataclass(frozen=True)
class EdgeUpsert:
    """Create the edge ``(from_id, to_id, type, namespace)`` or use it again.

    With ``weight`` the edge is set to that weight; without it a new edge starts at
    ``start_weight`` (default: the rules' initial weight) and an existing one is reinforced
    from its current (decayed) weight by ``step`` (default: the rules' reinforce step).
    ``evidence`` is added to what the edge already holds.
    """

    from_id: str
    to_id: str
    type: EdgeType
    namespace: str = DEFAULT_NAMESPACE
    provenance: Provenance = "agent"
    actor: str | None = None
    weight: float | None = None
    evidence: tuple[str, ...] = ()
    start_weight: float | None = None
    step: float | None = None

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.from_id, self.to_id, self.type, self.namespace)


@dataclass(frozen=True)
class EdgeFilter:
    """Which edges to list; ``None`` matches anything."""

    from_id: str | None = None
    to_id: str | None = None
    type: EdgeType | None = None
    namespace: str | None = None
    limit: int = 100
    hidden: frozenset[str] = frozenset()  # notes the caller may not see: their edges are left out


@dataclass(frozen=True)
class ConflictEvent:
    """One step in a conflict's history: opened (``unreviewed``) or resolved."""

    state: ConflictState
    actor: str | None
    at: datetime
    winner_id: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Conflict:
    """A ``contradicts`` edge seen as a conflict to review, with its whole history."""

    edge: Edge
    history: tuple[ConflictEvent, ...] = ()

    @property
    def state(self) -> ConflictState:
        return self.edge.conflict_state or "unreviewed"


@dataclass(frozen=True)
class ConflictResolution:
    """An explicit decision on a conflict: ``superseded`` needs the ``winner_id`` whose note
    supersedes the other."""

    edge_id: str
    resolution: Resolution
    resolver: str
    winner_id: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class ConflictFilter:
    state: ConflictState | None = None
    namespace: str | None = None
    note_id: str | None = None
    limit: int = 100
    hidden: frozenset[str] = frozenset()  # notes the caller may not see: their conflicts too


@dataclass(frozen=True)
class Declaration:
    """A typed edge a person wrote in a note's frontmatter: ``supports: ["[[Other]]"]``."""

    type: EdgeType
    target: str


@dataclass(frozen=True)
class DeclaredEdges:
    """Every typed edge one note's frontmatter declares, as of the file version
    ``content_hash``; the edges take the note's ``namespace`` and its author as ``actor``."""

    source_id: str
    content_hash: str
    namespace: str
    actor: str | None
    items: tuple[Declaration, ...] = ()


def declared_in(frontmatter: Mapping[str, Any]) -> tuple[Declaration, ...]:
    """The typed edges written in frontmatter under an edge type's name.

    A value may be one target or a list; a target is a wiki-link (``"[[Other note]]"``) or a
    bare name, path or id. Unquoted YAML ``supports: [[Other note]]`` parses as a nested list
    and is accepted too. Anything else (numbers, mappings) is ignored.
    """
    found: dict[tuple[str, str], None] = {}
    for edge_type in EDGE_TYPES:
        for text in _texts(frontmatter.get(edge_type)):
            for target in parse_links(text) or (text.strip(),):
                if target:
                    found.setdefault((edge_type, target), None)
    return tuple(Declaration(t, target) for t, target in found)  # type: ignore[arg-type]


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    return []


@dataclass(frozen=True)
class DecayCurve:
    """Exponential decay toward ``floor`` with the given half-life in days.

    An edge at or below the floor does not decay; decay never lifts a weight."""

    half_life_days: float
    floor: float

    def weight(self, stored: float, idle_days: float) -> float:
        if stored <= self.floor or idle_days <= 0 or self.half_life_days <= 0:
            return stored
        remaining = math.pow(0.5, idle_days / self.half_life_days)
        return self.floor + (stored - self.floor) * remaining


@dataclass(frozen=True)
class DecayPolicy:
    """A decay curve per edge type. Edges whose provenance is in ``exempt`` never decay: a
    relation a person wrote down holds until the person removes it."""

    curves: Mapping[str, DecayCurve] = field(default_factory=dict)
    exempt: frozenset[str] = frozenset({"human"})

    def weight(self, type: str, provenance: str, stored: float, idle_days: float) -> float:
        curve = self.curves.get(type)
        if curve is None or provenance in self.exempt:
            return stored
        return curve.weight(stored, idle_days)


@dataclass(frozen=True)
class EdgeRules:
    """How weights move: where a new edge starts, how much one use adds, how unused edges
    decay."""

    initial_weight: float = 0.5
    reinforce_step: float = 0.1
    decay: DecayPolicy = field(default_factory=DecayPolicy)


def idle_days(since: datetime, now: datetime) -> float:
    return max(0.0, (now - since).total_seconds() / 86_400)


def reinforced(current: float, step: float) -> float:
    """The weight after one more use: ``step`` more, capped at 1."""
    return min(1.0, current + step)


# How much an edge of each type says two notes belong together (LCMA-DESIGN 5.3): a
# ``supports`` edge binds more than a loose ``related_to`` or an ``analogy_to`` across topics.
# ``contradicts`` counts against: two notes that disagree make a set less coherent.
DEFAULT_COHERENCE_STRENGTH: dict[EdgeType, float] = {
    "supports": 1.0,
    "depends_on": 0.9,
    "refines": 0.9,
    "is_example_of": 0.9,
    "related_to": 0.6,
    "analogy_to": 0.4,
    "contradicts": 1.0,
}


def pair_coherence(
    note_ids: Sequence[str],
    edges: Iterable[Edge],
    linked: Mapping[str, Collection[str]],
    type_strength: Mapping[EdgeType, float],
    link_strength: float,
    importance: Mapping[str, float] | None = None,
) -> float:
    """Mean strength over every pair of ``note_ids``, in [-1, 1]; 0 for fewer than two.

    A pair's strength is its strongest relating edge (weight x the type's strength) or
    ``link_strength`` when a wiki-link joins them, whichever is greater, minus its strongest
    ``contradicts`` edge (weight x that strength). Unrelated pairs count 0, so a scattered set
    sits near 0 and a set whose notes disagree below it. With ``importance`` (a note's score)
    the mean is weighted by the product of the two notes' importance, so a weak tail of
    candidates counts for little.
    """
    ids = list(dict.fromkeys(note_ids))
    if len(ids) < 2:
        return 0.0
    binding: dict[frozenset[str], float] = {}
    opposing: dict[frozenset[str], float] = {}
    for edge in edges:
        pair = frozenset((edge.from_id, edge.to_id))
        value = edge.weight * type_strength.get(edge.type, 0.0)
        table = opposing if edge.type == "contradicts" else binding
        table[pair] = max(table.get(pair, 0.0), value)
    for note_id, others in linked.items():
        for other in others:
            pair = frozenset((note_id, other))
            binding[pair] = max(binding.get(pair, 0.0), link_strength)
    return weighted_pair_mean(ids, lambda p: binding.get(p, 0.0) - opposing.get(p, 0.0), importance)


def weighted_pair_mean(
    ids: Sequence[str],
    value: Callable[[frozenset[str]], float],
    importance: Mapping[str, float] | None = None,
) -> float:
    """Mean of ``value`` over every pair of ``ids``, weighted by the product of the notes'
    ``importance`` (equal weights without it, or when every importance is 0), in [-1, 1]."""
    total = weights = 0.0
    for a, b in itertools.combinations(ids, 2):
        w = 1.0 if importance is None else max(0.0, importance.get(a, 0.0) * importance.get(b, 0.0))
        total += w * value(frozenset((a, b)))
        weights += w
    if weights <= 0:
        return weighted_pair_mean(ids, value) if importance is not None and len(ids) > 1 else 0.0
    return max(-1.0, min(1.0, total / weights))
