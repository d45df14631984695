"""The fields of a note write, shared by lithos_write (as arguments) and lithos_write_batch (as
the fields of each item), so both publish the same descriptions and limits."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from lithos.domain.metadata import AccessScope, MetadataChange, NoteStatus, NoteType
from lithos.mcp.tools.types import NoteId, SummariesArg, TagList
from lithos.services.knowledge import WriteRequest

Title = Annotated[
    str | None, Field(max_length=300, description="the note's title (required to create)")
]
Content = Annotated[
    str | None, Field(description="Markdown body (required to create); replaces the old one")
]
TargetId = Annotated[
    NoteId | None, Field(description="id of the note to update; omit to create a note")
]
Tags = Annotated[TagList | None, Field(description="tags; replace the old ones")]
Confidence = Annotated[float | None, Field(ge=0.0, le=1.0, description="how sure you are, 0 to 1")]
Folder = Annotated[
    str | None,
    Field(max_length=500, description="folder of the knowledge base to put the note in"),
]
SourceTask = Annotated[
    str | None, Field(max_length=500, description="id of the task this note came from")
]
Aliases = Annotated[
    TagList | None, Field(description="other names [[wiki-links]] may use for the note")
]
Supersedes = Annotated[NoteId | None, Field(description="id of a note this one replaces")]
ExpectedVersion = Annotated[
    str | None, Field(max_length=64, description="the `version` you read; a newer note fails")
]
Kind = Annotated[NoteType | None, Field(description="kind of note; default observation")]
Namespace = Annotated[
    str | None,
    Field(
        max_length=200,
        description="namespace like 'project/lithos'; default the note's folder "
        "('default' at the root); empty string: follow the folder again",
    ),
]
Scope = Annotated[
    AccessScope | None,
    Field(
        description="who finds the note in search/list/links: shared (default), "
        "project, task (needs task_id), agent_private (its author only)"
    ),
]
TaskId = Annotated[
    str | None, Field(max_length=200, description="the task a 'task'-scoped note belongs to")
]
Status = Annotated[
    NoteStatus | None,
    Field(
        description="active (default), archived (still found), quarantined (never "
        "found by search, still readable by id)"
    ),
]
SchemaVersion = Annotated[
    int | None, Field(ge=1, le=1000, description="frontmatter schema version")
]
Entities = Annotated[
    list[Annotated[str, Field(max_length=2000)]] | None,
    Field(max_length=200, description="named things the note is about"),
]
Summaries = Annotated[SummariesArg | None, Field(description="{short, long} summaries of the note")]
SourceUrl = Annotated[
    str | None, Field(max_length=2000, description="absolute URL the knowledge came from")
]
DerivedFrom = Annotated[
    list[NoteId] | None,
    Field(max_length=200, description="ids of the notes this one was derived from"),
]
ExpiresAt = Annotated[
    str | None,
    Field(
        max_length=64,
        description="ISO 8601 time after which the note is stale; empty string clears",
    ),
]


class NoteFields(BaseModel):
    """One note to create (no `id`; `title` and `content` required) or update (with `id`;
    only the fields given change), exactly as lithos_write takes them."""

    model_config = ConfigDict(extra="forbid")

    title: Title = None
    content: Content = None
    id: TargetId = None
    tags: Tags = None
    confidence: Confidence = None
    path: Folder = None
    source_task: SourceTask = None
    aliases: Aliases = None
    supersedes: Supersedes = None
    expected_version: ExpectedVersion = None
    note_type: Kind = None
    namespace: Namespace = None
    access_scope: Scope = None
    task_id: TaskId = None
    status: Status = None
    schema_version: SchemaVersion = None
    entities: Entities = None
    summaries: Summaries = None
    source_url: SourceUrl = None
    derived_from_ids: DerivedFrom = None
    expires_at: ExpiresAt = None

    def request(self, agent: str) -> WriteRequest:
        return WriteRequest(
            agent=agent,
            title=self.title,
            content=self.content,
            id=self.id,
            tags=self.tags,
            confidence=self.confidence,
            path=self.path,
            source=self.source_task,
            aliases=self.aliases,
            supersedes=self.supersedes,
            expected_version=self.expected_version,
            metadata=MetadataChange(
                note_type=self.note_type,
                namespace=self.namespace,
                access_scope=self.access_scope,
                task_id=self.task_id,
                status=self.status,
                schema_version=self.schema_version,
                entities=self.entities,
                summaries=None if self.summaries is None else self.summaries.model_dump(),
                source_url=self.source_url,
                derived_from_ids=self.derived_from_ids,
                expires_at=self.expires_at,
            ),
        )
