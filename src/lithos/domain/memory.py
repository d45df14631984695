"""Living memory between tasks: consolidation of working memory, decay of unused notes'
salience, and concept nodes formed from notes used together (LCMA-DESIGN 1.3, 5.7, 5.8).

Pure values and rules, no I/O.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from lithos.domain.edges import DecayCurve
from lithos.domain.metadata import NoteType

CONSOLIDATION_ACTOR = "lithos-consolidation"
CONCEPT_ACTOR = "lithos-concepts"


@dataclass(frozen=True)
class ConsolidationRules:
    """When working memory counts as recurring, and when it is stale."""

    min_activations: int = 2  # a note retrieved this often in one task recurs
    max_items: int = 12  # recurring notes considered per task (most activated first)
    stale_after_hours: float = 24.0  # a task's working memory idle this long is evicted
    promotion_salience_boost: float = 0.05
    ledger_days: float = 30.0  # how long "already reinforced for this task" is remembered


@dataclass(frozen=True)
class WorkingItem:
    """A note in a task's working memory and how often the task retrieved it."""

    node_id: str
    activations: int


@dataclass(frozen=True)
class ConsolidationReport:
    """What one consolidation of a task changed; all empty when it had been done before."""

    task_id: str
    recurring: tuple[str, ...] = ()
    reinforced: tuple[tuple[str, str], ...] = ()  # pairs whose related_to edge grew now
    promoted: tuple[str, ...] = ()  # hypotheses promoted now
    evicted: int = 0  # working-memory rows removed

    @property
    def changed(self) -> bool:
        return bool(self.reinforced or self.promoted or self.evicted)


def recurring_pairs(items: Sequence[WorkingItem]) -> list[tuple[str, str]]:
    """Every unordered pair of recurring notes, each written (smaller id, larger id), so the
    same two notes always name the same ``related_to`` edge."""
    ids = sorted({item.node_id for item in items})
    return list(itertools.combinations(ids, 2))


def reinforcement_key(task_id: str, pair: tuple[str, str]) -> str:
    """The ledger key that makes consolidating a task's pair happen once."""
    return f"consolidation:{task_id}:{pair[0]}:{pair[1]}"


# -- salience decay ------------------------------------------------------------------------

DEFAULT_SALIENCE_HALF_LIFE_DAYS: dict[NoteType, float] = {
    "observation": 90.0,
    "agent_finding": 90.0,
    "summary": 180.0,
    "concept": 180.0,
    "task_record": 30.0,
    "hypothesis": 45.0,
}
DEFAULT_SALIENCE_FLOOR: dict[NoteType, float] = {
    "observation": 0.4,
    "agent_finding": 0.4,
    "summary": 0.45,
    "concept": 0.45,
    "task_record": 0.25,
    "hypothesis": 0.3,
}


@dataclass(frozen=True)
class SalienceDecay:
    """How an unused note's salience falls back, per note type: exponentially toward the
    type's floor (:class:`DecayCurve`); a salience at or under its floor does not move.
    ``concept_cap`` is the most salience a concept note may hold (damping)."""

    curves: Mapping[str, DecayCurve] = field(default_factory=dict)
    concept_cap: float = 0.85

    def salience(self, note_type: str, stored: float, idle_days: float) -> float:
        curve = self.curves.get(note_type)
        value = stored if curve is None else curve.weight(stored, idle_days)
        if note_type == "concept":
            value = min(value, self.concept_cap)
        return value


# -- concepts ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConceptRules:
    min_size: int = 3  # notes in a cluster before it becomes a concept
    max_size: int = 12  # larger groups are too loose to name
    min_coactivation: int = 3  # receipts citing a pair together before the pair counts
    min_density: float = 0.6  # share of a cluster's pairs that must be co-cited that often
    overlap: float = 0.5  # Jaccard overlap at which a cluster is an existing concept again
    repeat_penalty: float = 0.05  # score lost per retrieval of the concept in the window
    max_repeat_penalty: float = 0.4
    repeat_window_hours: float = 24.0
    gateway: bool = True  # return a concept with its specifics (and the reverse)


@dataclass(frozen=True)
class CoactivationPair:
    a: str
    b: str
    count: int


@dataclass(frozen=True)
class Cluster:
    """Notes repeatedly used together; ``members`` sorted, ``strength`` the mean count of
    their co-cited pairs."""

    members: tuple[str, ...]
    namespace: str
    strength: float

    @property
    def key(self) -> str:
        return cluster_key(self.members)


@dataclass(frozen=True)
class Concept:
    """A concept note Lithos formed, the cluster it stands for, and the file version Lithos
    last wrote (a person's later edit is never overwritten)."""

    concept_id: str
    cluster_key: str
    namespace: str
    members: tuple[str, ...]
    written_hash: str | None = None


def cluster_key(members: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(sorted(members)).encode()).hexdigest()[:16]


def detect_clusters(
    pairs: Iterable[CoactivationPair], namespaces: Mapping[str, str], rules: ConceptRules
) -> list[Cluster]:
    """Stable clusters of the coactivation graph: connected groups of notes in one namespace
    whose pairs were cited together at least ``min_coactivation`` times, with ``min_size`` to
    ``max_size`` members and at least ``min_density`` of their pairs that strong.
    Deterministic: the same pairs always give the same clusters, in the same order."""
    strong: dict[str, set[str]] = {}
    counts: dict[frozenset[str], int] = {}
    for pair in pairs:
        if pair.count < rules.min_coactivation or pair.a == pair.b:
            continue
        space = namespaces.get(pair.a)
        if space is None or space != namespaces.get(pair.b):
            continue
        strong.setdefault(pair.a, set()).add(pair.b)
        strong.setdefault(pair.b, set()).add(pair.a)
        counts[frozenset((pair.a, pair.b))] = pair.count
    found: list[Cluster] = []
    seen: set[str] = set()
    for start in sorted(strong):
        if start in seen:
            continue
        component = _component(start, strong)
        seen |= component
        members = tuple(sorted(component))
        if not rules.min_size <= len(members) <= rules.max_size:
            continue
        linked = [
            counts[p]
            for a, b in itertools.combinations(members, 2)
            if (p := frozenset((a, b))) in counts
        ]
        possible = len(members) * (len(members) - 1) / 2
        if len(linked) / possible < rules.min_density:
            continue
        found.append(Cluster(members, namespaces[members[0]], sum(linked) / len(linked)))
    return found


def _component(start: str, graph: Mapping[str, set[str]]) -> set[str]:
    component, frontier = {start}, [start]
    while frontier:
        for other in graph[frontier.pop()]:
            if other not in component:
                component.add(other)
                frontier.append(other)
    return component


def overlap(a: Iterable[str], b: Iterable[str]) -> float:
    left, right = set(a), set(b)
    return len(left & right) / len(left | right) if left | right else 0.0


def matching_concept(
    cluster: Cluster, concepts: Sequence[Concept], rules: ConceptRules
) -> Concept | None:
    """The existing concept this cluster is (same key, or the most overlapping one in its
    namespace above ``rules.overlap``), so a cluster that gains or loses a member updates its
    concept rather than forming a second one."""
    best, best_overlap = None, rules.overlap
    for concept in concepts:
        if concept.cluster_key == cluster.key:
            return concept
        if concept.namespace != cluster.namespace:
            continue
        value = overlap(concept.members, cluster.members)
        if value >= best_overlap and (best is None or value > best_overlap):
            best, best_overlap = concept, value
    return best


_TITLE_WORD = re.compile(r"[A-Za-z][A-Za-z0-9-]{2,}")
_DULL = frozenset(
    re.findall(
        r"\w+",
        "the and for with from into that this what when where which about over under notes"
        " note how why use using used are was were has have not but its",
    )
)


def concept_title(member_titles: Sequence[str], key: str) -> str:
    """A readable, deterministic title: the words the members' titles share most, and a short
    key so two clusters never share a file."""
    words = Counter(w.lower() for title in member_titles for w in set(_TITLE_WORD.findall(title)))
    ordered = sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))
    common = [w for w, _ in ordered if w not in _DULL]
    label = ", ".join(common[:3]) if common else "notes used together"
    return f"Concept - {label} ({key[:6]})"


def concept_body(members: Sequence[tuple[str, str]], uses: float) -> str:
    """The Markdown body of a concept note: what it is and a wiki-link to every member,
    given as ``(path, title)`` (linked by path, so a shared title cannot mislead)."""
    lines = [
        "Lithos formed this concept because agents used these notes together again and again"
        f" (each pair cited together about {uses:.0f} times). It is a gateway: retrieving it"
        " also brings the specifics below. Edit it freely; Lithos will not overwrite your"
        " changes.",
        "",
        "## Members",
        "",
        *(f"- [[{path.removesuffix('.md')}|{title}]]" for path, title in members),
        "",
    ]
    return "\n".join(lines)


def repeat_penalty(recent: int, rules: ConceptRules) -> float:
    """LCMA-DESIGN 5.8: a concept retrieved often lately loses score, up to a cap."""
    return min(rules.max_repeat_penalty, recent * rules.repeat_penalty)
