"""Values of cognitive retrieval (LCMA): what scouts find, what a retrieval returns, what a
receipt records and what feedback teaches. Pure values and rules, no I/O.
"""

from __future__ import annotations

import itertools
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, get_args

QueryClass = Literal["debug", "howto", "design", "recall", "lookup"]
QUERY_CLASSES: tuple[QueryClass, ...] = get_args(QueryClass)
Outcome = Literal["cited", "ignored", "misleading"]

# The exploration scouts (LCMA-DESIGN 2.2, disagreement 1): two modes behind one interface,
# whose weights feedback learns apart, per query class.
NOVELTY = "scout_novelty"
RANDOM = "scout_random"
EXPLORATION_SCOUTS: tuple[str, ...] = (NOVELTY, RANDOM)

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """Lower-case word tokens of ``text``."""
    return [w.lower() for w in _WORD.findall(text)]


_CLASS_WORDS: tuple[tuple[QueryClass, frozenset[str]], ...] = (
    (
        "debug",
        frozenset(
            words(
                "error errors fail fails failed failing failure bug bugs crash crashes"
                " exception traceback broken timeout debug fix"
            )
        ),
    ),
    ("howto", frozenset(words("how steps install configure setup guide tutorial"))),
    (
        "design",
        frozenset(
            words(
                "why should design tradeoff tradeoffs architecture approach choose versus vs"
                " compare pros cons decide decision decisions recommend summarize summarise"
                " synthesize synthesise overview"
            )
        ),
    ),
    ("recall", frozenset(words("remember said mentioned told last previous earlier when did"))),
)


def classify_query(text: str) -> QueryClass:
    """A coarse class of the query, by its words, so feedback can penalise per kind of query
    first (a note useless for debugging may still be right for design questions)."""
    tokens = set(words(text))
    for name, cue in _CLASS_WORDS:
        if tokens & cue:
            return name
    return "lookup"


# Query classes whose results come with their conflicts unless the caller says otherwise:
# design and debugging questions are where a disagreement matters (LCMA-DESIGN 5.9).
CONFLICT_CLASSES: frozenset[QueryClass] = frozenset({"design", "debug"})


def new_receipt_id(now: datetime) -> str:
    return f"rcpt_{now.strftime('%Y%m%dT%H%M%S')}_{secrets.token_hex(4)}"


@dataclass(frozen=True)
class RetrievalQuery:
    """One ``lithos_retrieve`` call's arguments."""

    query: str
    limit: int = 10
    namespace_filter: tuple[str, ...] = ()
    agent_id: str | None = None
    task_id: str | None = None
    surface_conflicts: bool | None = None  # None: for the classes of CONFLICT_CLASSES
    max_context_nodes: int | None = None
    tags: tuple[str, ...] = ()
    path_prefix: str | None = None

    def surfaces_conflicts(self, query_class: QueryClass) -> bool:
        """Whether the answer carries its conflicts: as asked, else by the query's class."""
        if self.surface_conflicts is not None:
            return self.surface_conflicts
        return query_class in CONFLICT_CLASSES

    @property
    def seeds(self) -> int:
        """How many Phase A candidates seed Phase B."""
        return self.max_context_nodes if self.max_context_nodes is not None else self.limit

    def arguments(self) -> dict[str, object]:
        """The arguments as the receipt records them."""
        return {
            "limit": self.limit,
            "namespace_filter": list(self.namespace_filter),
            "surface_conflicts": self.surface_conflicts,
            "max_context_nodes": self.max_context_nodes,
            "tags": list(self.tags),
            "path_prefix": self.path_prefix,
        }


@dataclass(frozen=True)
class ScoutHit:
    """One note a scout found. ``score`` is already calibrated to [0, 1] by the scout on an
    absolute scale (a weak match stays weak however few others there are); ``reason`` is the
    sentence a person reads."""

    note_id: str
    score: float
    reason: str
    snippet: str | None = None


@dataclass
class Candidate:
    """A note in the pool: the evidence of every scout that found it and its running score."""

    note_id: str
    evidence: dict[str, float] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    snippet: str | None = None
    score: float = 0.0

    def add(self, scout: str, hit: ScoutHit) -> None:
        if hit.score > self.evidence.get(scout, -1.0):
            self.evidence[scout] = hit.score
        if hit.reason and hit.reason not in self.reasons:
            self.reasons.append(hit.reason)
        if self.snippet is None and hit.snippet:
            self.snippet = hit.snippet

    @property
    def scouts(self) -> list[str]:
        return list(self.evidence)


@dataclass(frozen=True)
class RetrievedNote:
    """One result of ``lithos_retrieve``."""

    id: str
    title: str
    snippet: str
    score: float
    path: str
    source_url: str
    updated_at: str
    is_stale: bool
    derived_from_ids: tuple[str, ...]
    reasons: tuple[str, ...]
    scouts: tuple[str, ...]
    salience: float


@dataclass(frozen=True)
class ConflictEdge:
    """A contradiction between two returned notes, from the typed-edge graph."""

    edge_id: str
    from_id: str
    to_id: str
    state: str


@dataclass(frozen=True)
class Retrieval:
    """What ``lithos_retrieve`` answers."""

    results: tuple[RetrievedNote, ...]
    temperature: float
    terrace_reached: int
    receipt_id: str
    degraded: bool
    failed_scouts: tuple[str, ...]
    conflicts: tuple[ConflictEdge, ...] | None = None


@dataclass(frozen=True)
class ReceiptNode:
    """A note a retrieval returned, with why; ``outcome`` is what the task's feedback said of
    it (``cited``, ``ignored``, ``misleading``), ``None`` before any feedback."""

    id: str
    rank: int
    score: float
    reasons: tuple[str, ...]
    scouts: tuple[str, ...]
    outcome: Outcome | None = None


@dataclass(frozen=True)
class Receipt:
    """The audit record of one retrieval call, written whether it succeeded or failed."""

    id: str
    created_at: str
    query: str
    query_class: QueryClass
    arguments: dict[str, object]
    agent_id: str | None
    task_id: str | None
    status: Literal["ok", "error"]
    error_code: str | None = None
    scouts_fired: tuple[str, ...] = ()
    scouts_failed: tuple[str, ...] = ()
    candidates_considered: int = 0
    final_nodes: tuple[ReceiptNode, ...] = ()
    temperature: float | None = None
    terrace_reached: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def node_ids(self) -> list[str]:
        return [node.id for node in self.final_nodes]


@dataclass(frozen=True)
class ReceiptQuery:
    """Filters of ``lithos_receipts``: every one given must match."""

    agent_id: str | None = None
    task_id: str | None = None
    note_id: str | None = None
    since: str | None = None
    limit: int = 20


@dataclass(frozen=True)
class CoactivationPartner:
    """A note returned alongside another: in how many of the same receipts
    (``co_retrieved``) and how often both were cited for the same task (``co_cited``)."""

    note_id: str
    title: str
    co_retrieved: int
    co_cited: int


@dataclass(frozen=True)
class NodeStats:
    """What retrieval has learned about one note. ``coactivation`` (filled by
    ``lithos_node_stats`` only) lists the notes most often returned or cited with it."""

    node_id: str
    salience: float
    retrieval_count: int = 0
    cited_count: int = 0
    ignored_count: int = 0
    misleading_count: int = 0
    last_retrieved_at: str | None = None
    last_used_at: str | None = None
    query_class_priors: dict[str, float] = field(default_factory=dict)
    coactivation: tuple[CoactivationPartner, ...] = ()


@dataclass(frozen=True)
class ScoutTally:
    """How the results of one receipt that an exploration scout found fared in a task's
    feedback."""

    scout: str
    cited: int
    ignored: int
    misleading: int


@dataclass(frozen=True)
class Feedback:
    """How one task used one receipt: the receipt's nodes split three ways. Ids outside the
    receipt do not count. ``explored`` tallies the outcomes of the results each exploration
    scout found (only scouts that found any)."""

    receipt_id: str
    task_id: str
    agent_id: str
    query_class: QueryClass
    cited: tuple[str, ...]
    ignored: tuple[str, ...]
    misleading: tuple[str, ...]
    explored: tuple[ScoutTally, ...] = ()


def split_feedback(
    receipt: Receipt,
    task_id: str,
    agent_id: str,
    cited: Iterable[str],
    misleading: Iterable[str],
) -> Feedback:
    """Cited and misleading ids that the receipt returned; its other nodes were ignored.
    A node named both cited and misleading counts as misleading."""
    returned = receipt.node_ids
    bad = set(misleading) & set(returned)
    good = (set(cited) & set(returned)) - bad
    explored = []
    for scout in EXPLORATION_SCOUTS:
        found = [n.id for n in receipt.final_nodes if scout in n.scouts]
        if found:
            hits, misled = sum(n in good for n in found), sum(n in bad for n in found)
            explored.append(ScoutTally(scout, hits, len(found) - hits - misled, misled))
    return Feedback(
        receipt_id=receipt.id,
        task_id=task_id,
        agent_id=agent_id,
        query_class=receipt.query_class,
        cited=tuple(n for n in returned if n in good),
        ignored=tuple(n for n in returned if n not in good and n not in bad),
        misleading=tuple(n for n in returned if n in bad),
        explored=tuple(explored),
    )


@dataclass(frozen=True)
class ScoutLearning:
    """How feedback moves the exploration scouts' weights (LCMA-DESIGN 2.2 disagreement 1,
    5.6), each scout apart and per query class: every result a scout found that the task
    cited adds ``cited_step``, every one ignored takes ``ignored_step`` and every misleading
    one ``misleading_step``. A weight starts from ``start`` (the configured
    ``lcma.scout_weights``) and stays within [floor, ceiling], so exploration can neither
    vanish nor take over."""

    start: dict[str, float] = field(default_factory=dict)
    enabled: bool = True
    floor: float = 0.01
    ceiling: float = 0.3
    cited_step: float = 0.01
    ignored_step: float = 0.002
    misleading_step: float = 0.02

    def delta(self, tally: ScoutTally) -> float:
        return (
            self.cited_step * tally.cited
            - self.ignored_step * tally.ignored
            - self.misleading_step * tally.misleading
        )

    def bounded(self, weight: float) -> float:
        return max(self.floor, min(self.ceiling, weight))

    def initial(self, scout: str) -> float:
        """A weight no feedback has moved yet (the configured one while learning is off)."""
        configured = self.start.get(scout, 0.0)
        return self.bounded(configured) if self.enabled else configured


@dataclass(frozen=True)
class ScoutWeight:
    """An exploration scout's weight for one query class: ``learned`` is false while no
    feedback has moved it (``weight`` is then the configured one); the counts are the
    outcomes of its results that moved it."""

    scout: str
    query_class: QueryClass
    weight: float
    learned: bool
    cited: int = 0
    ignored: int = 0
    misleading: int = 0
    updated_at: str | None = None


@dataclass(frozen=True)
class WorkingMemoryItem:
    """A note a task has been shown, how often, and when last."""

    node_id: str
    activations: int
    last_at: str


@dataclass(frozen=True)
class LearningRules:
    """How feedback moves what retrieval has learned (LCMA-DESIGN 5.6). Salience stays within
    [salience_floor, salience_ceiling] and per-query-class priors within
    [-prior_bound, prior_bound], so neither can collapse nor run away."""

    default_salience: float = 0.5
    salience_floor: float = 0.1
    salience_ceiling: float = 0.9
    cited_salience_boost: float = 0.02
    cited_class_boost: float = 0.03
    ignored_class_penalty: float = 0.03
    chronic_ignored_after: int = 5
    chronic_ignored_salience_penalty: float = 0.02
    misleading_class_penalty: float = 0.08
    misleading_salience_penalty: float = 0.05
    quarantine_after_misleading: int = 3
    prior_bound: float = 0.5


@dataclass(frozen=True)
class GraphLearning:
    """How feedback moves the typed-edge graph (LCMA-DESIGN 5.6). Cited notes are joined by
    ``related_to`` edges (provenance ``rule``): a new edge starts at ``start_weight``, an
    existing one gains ``step`` from its current weight. Only pairs among the first
    ``max_cited_notes`` cited notes (in the receipt's rank order) count, so one completion
    writes at most ``max_cited_notes * (max_cited_notes - 1) / 2`` edges. Edges between a
    misleading note and the receipt's other notes lose ``misleading_step`` (edges people
    wrote and contradiction edges are left alone)."""

    max_cited_notes: int = 5
    start_weight: float = 0.3
    step: float = 0.03
    misleading_step: float = 0.05


def cited_pairs(feedback: Feedback, max_notes: int) -> list[tuple[str, str]]:
    """Pairs of the first ``max_notes`` cited notes, each pair's ids in sorted order (one
    ``related_to`` edge per pair, whichever note was cited first)."""
    top = feedback.cited[:max_notes]
    return [(a, b) if a < b else (b, a) for a, b in itertools.combinations(top, 2)]


def misleading_context(feedback: Feedback) -> list[tuple[str, tuple[str, ...]]]:
    """Each misleading note with the receipt's other notes: the edges between them may have
    pulled it in."""
    returned = (*feedback.cited, *feedback.ignored, *feedback.misleading)
    return [(bad, tuple(n for n in returned if n != bad)) for bad in feedback.misleading]
