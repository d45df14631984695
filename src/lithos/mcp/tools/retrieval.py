"""Cognitive retrieval tools: lithos_retrieve, lithos_receipt_get, lithos_receipts,
lithos_node_stats, lithos_scout_weights."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, NotRequired

from pydantic import Field
from typing_extensions import TypedDict

from lithos.domain.notes import require_valid_id
from lithos.domain.retrieval import (
    ConflictEdge,
    NodeStats,
    QueryClass,
    Receipt,
    ReceiptQuery,
    RetrievalQuery,
    RetrievedNote,
    ScoutWeight,
)
from lithos.mcp.registry import ToolRegistry
from lithos.mcp.tools.types import (
    READ_ONLY,
    AgentId,
    CallerAgent,
    CallerTask,
    IsoTime,
    NoteId,
    TagList,
    caller_scope,
    tool_hints,
)

if TYPE_CHECKING:
    from lithos.app import LithosApp

# lithos_retrieve writes a receipt and usage counts, so it is neither read-only nor idempotent.
RETRIEVE = tool_hints()

TaskId = Annotated[str, Field(min_length=1, max_length=100, description="Active task id")]


class RetrieveResult(TypedDict):
    results: list[RetrievedNote]
    temperature: float
    terrace_reached: int
    receipt_id: str
    degraded: bool
    failed_scouts: list[str]
    conflicts: NotRequired[list[ConflictEdge]]


class ReceiptList(TypedDict):
    receipts: list[Receipt]


class ScoutWeightList(TypedDict):
    weights: list[ScoutWeight]


def register(server: ToolRegistry, app: LithosApp) -> None:
    @server.tool(annotations=RETRIEVE)
    async def lithos_retrieve(
        query: Annotated[
            str, Field(min_length=1, max_length=2000, description="Natural-language query")
        ],
        limit: Annotated[int, Field(ge=1, le=100, description="Maximum results")] = 10,
        namespace_filter: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=500)]] | None,
            Field(max_length=50, description="Only notes in any of these namespaces"),
        ] = None,
        agent_id: Annotated[
            AgentId | None, Field(description="Caller, for access scopes and the receipt")
        ] = None,
        task_id: Annotated[
            TaskId | None,
            Field(description="Active task: reads and adds to the task's working memory"),
        ] = None,
        surface_conflicts: Annotated[
            bool | None,
            Field(
                description="Also return the contradictions among the results, after flagging "
                "likely ones (same subject, negation or different numbers) for review; "
                "default: only for design and debugging questions"
            ),
        ] = None,
        max_context_nodes: Annotated[
            int | None,
            Field(ge=1, le=100, description="Phase A candidates seeding Phase B (default limit)"),
        ] = None,
        tags: Annotated[TagList | None, Field(description="Only notes with all these tags")] = None,
        path_prefix: Annotated[
            str | None, Field(max_length=500, description="Only notes under this path")
        ] = None,
    ) -> RetrieveResult:
        """Find notes by many signals at once (meaning, words, exact titles, tags, recency,
        your task's context, links, provenance, past co-citation), reranked with what agents'
        feedback taught. Each result says why (`reasons`) and which `scouts` found it; the
        `receipt_id` identifies this call for lithos_receipt_get and for feedback in
        lithos_task_complete. `temperature` (0 coherent .. 1 scattered) says how well the
        best notes hang together; above 0.6 retrieval explores further when exploration is
        turned on (`lcma.exploration.enabled`, off by default). `terrace_reached` is 2
        when a configured language model reordered the results. `conflicts` (for design and
        debugging questions, or as `surface_conflicts` asks) lists the contradictions among
        the results, likely ones flagged for review first. `degraded`/`failed_scouts` name
        scouts (or `terrace_2`) that failed.
        Errors: lcma_disabled, invalid_input."""
        retrieval = await app.retrieval.retrieve(
            RetrievalQuery(
                query=query,
                limit=limit,
                namespace_filter=tuple(namespace_filter or ()),
                agent_id=agent_id,
                task_id=task_id,
                surface_conflicts=surface_conflicts,
                max_context_nodes=max_context_nodes,
                tags=tuple(tags or ()),
                path_prefix=path_prefix,
            )
        )
        result = RetrieveResult(
            results=list(retrieval.results),
            temperature=retrieval.temperature,
            terrace_reached=retrieval.terrace_reached,
            receipt_id=retrieval.receipt_id,
            degraded=retrieval.degraded,
            failed_scouts=list(retrieval.failed_scouts),
        )
        if retrieval.conflicts is not None:
            result["conflicts"] = list(retrieval.conflicts)
        return result

    @server.tool(annotations=READ_ONLY)
    async def lithos_receipt_get(
        receipt_id: Annotated[
            str, Field(min_length=1, max_length=200, description="Id from lithos_retrieve")
        ],
    ) -> Receipt:
        """The audit receipt of one lithos_retrieve call: query, arguments, scouts fired and
        failed, candidates considered, final nodes with scores and reasons, temperature,
        timings. Errors: receipt_not_found."""
        return await app.retrieval.receipt(receipt_id)

    @server.tool(annotations=READ_ONLY)
    async def lithos_receipts(
        agent_id: Annotated[AgentId | None, Field(description="Only this agent's calls")] = None,
        task_id: Annotated[TaskId | None, Field(description="Only calls for this task")] = None,
        note_id: Annotated[
            NoteId | None, Field(description="Only calls that returned this note")
        ] = None,
        since: Annotated[
            IsoTime | None, Field(description="Only calls at or after this ISO 8601 time")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=500, description="Maximum receipts")] = 20,
    ) -> ReceiptList:
        """Receipts of past lithos_retrieve calls, newest first, filtered by every argument
        given. With `note_id`: which calls returned that note, and each one's reasons."""
        note = None if note_id is None else require_valid_id(note_id)
        found = await app.retrieval.receipts(
            ReceiptQuery(agent_id=agent_id, task_id=task_id, note_id=note, since=since, limit=limit)
        )
        return ReceiptList(receipts=found)

    @server.tool(annotations=READ_ONLY)
    async def lithos_node_stats(
        node_id: Annotated[NoteId, Field(description="Note id")],
        agent_id: CallerAgent = None,
        task_id: CallerTask = None,
    ) -> NodeStats:
        """What retrieval has learned about a note: salience (0-1), how often it was
        retrieved, cited, ignored and marked misleading, when it was last retrieved and
        used, its prior per query class, and `coactivation`: the notes most often cited
        (`co_cited`) and returned (`co_retrieved`) together with it over its latest 1,000
        retrievals. Errors: doc_not_found (also for a note the caller may not see)."""
        scope = caller_scope(agent_id, task_id)
        return await app.retrieval.node_stats(require_valid_id(node_id), scope)

    @server.tool(annotations=READ_ONLY)
    async def lithos_scout_weights(
        query_class: Annotated[
            QueryClass | None,
            Field(description="Only this query class (default: every class)"),
        ] = None,
    ) -> ScoutWeightList:
        """The weights of the exploration scouts (scout_novelty: diverse but relevant;
        scout_random: serendipity) that hot queries use, per query class. Each is learned
        apart from task feedback: results a scout found that a task cited raise its weight
        for that query class, ignored and misleading ones lower it, within fixed bounds.
        `learned` is false while no feedback has moved it; the counts are the outcomes
        that did."""
        return ScoutWeightList(weights=await app.retrieval.scout_weights(query_class))
