"""Typed-edge tools: lithos_edge_upsert, lithos_edge_list, lithos_related, lithos_conflicts,
lithos_conflict_resolve."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, Field

from lithos.domain.edges import (
    DEFAULT_NAMESPACE,
    Conflict,
    ConflictFilter,
    ConflictResolution,
    ConflictState,
    Edge,
    EdgeFilter,
    EdgeType,
    EdgeUpsert,
    Provenance,
    Resolution,
)
from lithos.domain.notes import require_valid_id
from lithos.domain.timestamps import format_timestamp
from lithos.mcp.registry import ToolRegistry
from lithos.mcp.tools.types import (
    READ_ONLY,
    AgentId,
    CallerAgent,
    CallerTask,
    NoteId,
    caller_scope,
    tool_hints,
)
from lithos.services.related import INCLUDE_ALL, Include, Related, RelatedNote

if TYPE_CHECKING:
    from lithos.app import LithosApp

Namespace = Annotated[str, Field(min_length=1, max_length=200, pattern=r"\S")]
Weight = Annotated[float, Field(ge=0.0, le=1.0)]
Evidence = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=2_000)]], Field(max_length=20)
]


class EdgeOut(BaseModel):
    """One typed edge on the wire; ``weight`` is as of now, decay applied."""

    edge_id: str
    from_id: str
    to_id: str
    type: EdgeType
    weight: float
    stored_weight: float = Field(description="weight as of last_used_at, before decay")
    namespace: str
    provenance: Provenance
    actor: str | None
    evidence: list[str]
    conflict_state: str | None
    created_at: str
    updated_at: str
    last_used_at: str

    @classmethod
    def of(cls, edge: Edge) -> EdgeOut:
        return cls(
            edge_id=edge.edge_id,
            from_id=edge.from_id,
            to_id=edge.to_id,
            type=edge.type,
            weight=edge.weight,
            stored_weight=edge.stored_weight,
            namespace=edge.namespace,
            provenance=edge.provenance,
            actor=edge.actor,
            evidence=list(edge.evidence),
            conflict_state=edge.conflict_state,
            created_at=format_timestamp(edge.created_at),
            updated_at=format_timestamp(edge.updated_at),
            last_used_at=format_timestamp(edge.last_used_at),
        )


class EdgeUpsertResult(BaseModel):
    status: str = "ok"
    edge: EdgeOut


class EdgeListResult(BaseModel):
    edges: list[EdgeOut]
    count: int


class RelatedNoteOut(BaseModel):
    id: str
    title: str
    path: str
    depth: int = Field(description="hops from the note (1 = directly connected)")

    @classmethod
    def of(cls, note: RelatedNote) -> RelatedNoteOut:
        return cls(id=note.id, title=note.title, path=note.path, depth=note.depth)


class EdgeStepOut(RelatedNoteOut):
    direction: Literal["outgoing", "incoming"] = Field(
        description="outgoing: the note it was reached from is the edge's from_id"
    )
    edge: EdgeOut


class LinksOut(BaseModel):
    outgoing: list[RelatedNoteOut]
    incoming: list[RelatedNoteOut]


class ProvenanceOut(BaseModel):
    derived_from: list[RelatedNoteOut] = Field(description="notes this one derives from")
    derivatives: list[RelatedNoteOut] = Field(description="notes derived from this one")


class RelatedResult(BaseModel):
    id: str
    title: str
    links: LinksOut | None = None
    provenance: ProvenanceOut | None = None
    edges: list[EdgeStepOut] | None = None

    @classmethod
    def of(cls, related: Related) -> RelatedResult:
        def notes(found: list[RelatedNote] | None) -> list[RelatedNoteOut]:
            return [RelatedNoteOut.of(n) for n in found or ()]

        result = cls(id=related.id, title=related.title)
        if related.links_outgoing is not None:
            result.links = LinksOut(
                outgoing=notes(related.links_outgoing), incoming=notes(related.links_incoming)
            )
        if related.derived_from is not None:
            result.provenance = ProvenanceOut(
                derived_from=notes(related.derived_from), derivatives=notes(related.derivatives)
            )
        if related.edges is not None:
            result.edges = [
                EdgeStepOut(
                    **RelatedNoteOut.of(step.note).model_dump(),
                    direction=step.direction,
                    edge=EdgeOut.of(step.edge),
                )
                for step in related.edges
            ]
        return result


class ConflictEventOut(BaseModel):
    state: ConflictState
    actor: str | None
    at: str
    winner_id: str | None = None
    note: str | None = None


class ConflictOut(BaseModel):
    edge_id: str
    state: ConflictState
    from_id: str
    to_id: str
    namespace: str
    edge: EdgeOut
    history: list[ConflictEventOut] = Field(description="every state it was in, oldest first")

    @classmethod
    def of(cls, conflict: Conflict) -> ConflictOut:
        edge = conflict.edge
        return cls(
            edge_id=edge.edge_id,
            state=conflict.state,
            from_id=edge.from_id,
            to_id=edge.to_id,
            namespace=edge.namespace,
            edge=EdgeOut.of(edge),
            history=[
                ConflictEventOut(
                    state=e.state,
                    actor=e.actor,
                    at=format_timestamp(e.at),
                    winner_id=e.winner_id,
                    note=e.note,
                )
                for e in conflict.history
            ],
        )


class ConflictListResult(BaseModel):
    conflicts: list[ConflictOut]
    count: int


class ConflictResolveResult(BaseModel):
    status: Literal["resolved"] = "resolved"
    conflict: ConflictOut


def register(server: ToolRegistry, app: LithosApp) -> None:
    @server.tool(annotations=tool_hints())
    async def lithos_edge_upsert(
        from_id: Annotated[NoteId, Field(description="id of the note the edge starts at")],
        to_id: Annotated[NoteId, Field(description="id of the note the edge points to")],
        type: Annotated[EdgeType, Field(description="the relation from from_id to to_id")],
        agent: Annotated[AgentId, Field(description="who asserts the edge (recorded as actor)")],
        namespace: Annotated[
            Namespace, Field(description="namespace the edge belongs to")
        ] = DEFAULT_NAMESPACE,
        weight: Annotated[
            Weight | None,
            Field(
                description="set exactly this weight; omit to create at the default or "
                "reinforce an existing edge by one step"
            ),
        ] = None,
        provenance: Annotated[
            Provenance, Field(description="how the edge was made: agent, rule or inferred")
        ] = "agent",
        evidence: Annotated[
            Evidence | None, Field(description="snippets or anchors supporting the edge")
        ] = None,
    ) -> EdgeUpsertResult:
        """Create or strengthen a typed edge between two notes. One edge exists per (from_id,
        to_id, type, namespace): calling again reuses it, adds `evidence`, and either sets
        `weight` or (without `weight`) reinforces it from its current, decayed weight. A new
        `contradicts` edge opens a conflict in state `unreviewed` (see lithos_conflicts).
        Errors: doc_not_found (either note unknown), invalid_input."""
        request = EdgeUpsert(
            from_id=from_id,
            to_id=to_id,
            type=type,
            namespace=namespace,
            provenance=provenance,
            actor=agent,
            weight=weight,
            evidence=tuple(evidence or ()),
        )
        return EdgeUpsertResult(edge=EdgeOut.of(await app.edges.upsert(request)))

    @server.tool(annotations=READ_ONLY)
    async def lithos_edge_list(
        from_id: Annotated[NoteId | None, Field(description="only edges from this note")] = None,
        to_id: Annotated[NoteId | None, Field(description="only edges to this note")] = None,
        type: Annotated[EdgeType | None, Field(description="only edges of this type")] = None,
        namespace: Annotated[
            Namespace | None, Field(description="only edges in this namespace")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="most edges to return")] = 100,
        agent_id: CallerAgent = None,
        task_id: CallerTask = None,
    ) -> EdgeListResult:
        """List typed edges matching every given filter, strongest first; weights are as of
        now (unused edges decay). Edges of notes you may not see are left out.
        Returns {edges: [...], count}."""
        query = EdgeFilter(
            from_id=from_id, to_id=to_id, type=type, namespace=namespace, limit=limit
        )
        edges = await app.edges.find(query, caller_scope(agent_id, task_id))
        return EdgeListResult(edges=[EdgeOut.of(e) for e in edges], count=len(edges))

    @server.tool(annotations=READ_ONLY)
    async def lithos_related(
        id: Annotated[NoteId, Field(description="the note to start from")],
        include: Annotated[
            list[Include] | None,
            Field(
                description="what to follow: links (wiki-links both ways), provenance "
                "(derived_from_ids up and down), edges (typed edges both ways); default all",
                max_length=3,
            ),
        ] = None,
        depth: Annotated[int, Field(ge=1, le=3, description="hops to follow, 1 to 3")] = 1,
        agent_id: CallerAgent = None,
        task_id: CallerTask = None,
    ) -> RelatedResult:
        """Everything connected to a note in one call: wiki-links (`links`: outgoing and
        incoming), provenance (`provenance`: derived_from and derivatives) and typed edges
        (`edges`: each neighbour with the edge that reached it, weight as of now), each walked
        up to `depth` hops. Only notes you may see are listed or walked through. Kinds not in
        `include` are omitted. Errors: doc_not_found."""
        note_id = require_valid_id(id)
        scope = caller_scope(agent_id, task_id)
        related = await app.related.related(note_id, tuple(include or INCLUDE_ALL), depth, scope)
        return RelatedResult.of(related)

    @server.tool(annotations=READ_ONLY)
    async def lithos_conflicts(
        state: Annotated[
            ConflictState | None, Field(description="only conflicts in this state")
        ] = None,
        namespace: Annotated[
            Namespace | None, Field(description="only conflicts in this namespace")
        ] = None,
        note_id: Annotated[
            NoteId | None, Field(description="only conflicts involving this note")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="most conflicts to return")] = 100,
        agent_id: CallerAgent = None,
        task_id: CallerTask = None,
    ) -> ConflictListResult:
        """List contradictions as conflicts (a `contradicts` edge each), most recently changed
        first, with their history. `unreviewed` ones await a decision through
        lithos_conflict_resolve. Conflicts of notes you may not see are left out.
        Returns {conflicts: [...], count}."""
        query = ConflictFilter(state, namespace, note_id, limit)
        found = await app.conflicts.find(query, caller_scope(agent_id, task_id))
        return ConflictListResult(conflicts=[ConflictOut.of(c) for c in found], count=len(found))

    @server.tool(annotations=tool_hints())
    async def lithos_conflict_resolve(
        edge_id: Annotated[
            str, Field(min_length=1, max_length=100, description="the contradicts edge's id")
        ],
        resolution: Annotated[
            Resolution,
            Field(
                description="accepted_dual (both stand), superseded (winner_id replaces the "
                "other), refuted (one is wrong), merged (combined into one note)"
            ),
        ],
        resolver: Annotated[AgentId, Field(description="who decides (agent or person)")],
        winner_id: Annotated[
            NoteId | None,
            Field(description="the note that stands; required for superseded"),
        ] = None,
        note: Annotated[
            str | None, Field(max_length=2_000, description="why, kept in the history")
        ] = None,
    ) -> ConflictResolveResult:
        """Decide a conflict. `superseded` writes `supersedes: <the other note>` into the
        winner's frontmatter (as `resolver`). The decision is appended to the conflict's
        history; deciding again is allowed and recorded too. Errors: edge_not_found,
        invalid_input (not a contradiction, missing or foreign winner_id), doc_not_found."""
        decision = ConflictResolution(edge_id, resolution, resolver, winner_id, note)
        return ConflictResolveResult(conflict=ConflictOut.of(await app.conflicts.resolve(decision)))
