"""How Lithos's tool handlers become FastMCP tools, and how their results reach the wire.

FastMCP's generic result conversion serialises a typed result four times on every call (to
text for a content block it then discards, through the return type, again through ``Any`` in
``ToolResult``'s constructor, and once more for the text content it keeps) and validates the
result models it just built. A Lithos handler returns a dict shaped by its return type (a
TypedDict in :mod:`lithos.mcp.tools.results`), so :class:`LithosTool` serialises it once
through that type to JSON-ready data, encodes those once for the text content, and hands
FastMCP a finished protocol result. Clients get the same structured content and the same
text; the published input and output schemas are FastMCP's own.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

import mcp.types as mt
import pydantic_core
from fastmcp.tools import FunctionTool
from fastmcp.tools.base import ToolResult
from fastmcp.utilities.tasks import TaskConfig
from fastmcp.utilities.types import get_cached_typeadapter
from pydantic import PrivateAttr

from lithos.mcp.tool_schemas import ToolSchemas

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from lithos.mcp.tool_schemas import StoredToolSchemas

Handler = TypeVar("Handler", bound=Callable[..., Any])


class LithosTool(FunctionTool):
    """A FunctionTool whose dict results go to the wire serialised once, and which may know
    its schemas as tools/list shows them."""

    _listed: ToolSchemas | None = PrivateAttr(default=None)

    def listed(self) -> LithosTool | None:
        """This tool with its schemas as tools/list shows them (``$ref`` inlined, as FastMCP's
        ``DereferenceRefsMiddleware`` would), when known: made when its schemas were."""
        schemas = self._listed
        if schemas is None or (schemas.parameters, schemas.output) != (
            self.parameters,
            self.output_schema,
        ):
            return None
        return self.model_copy(
            update={
                "parameters": schemas.listed_parameters,
                "output_schema": schemas.listed_output,
            }
        )

    def convert_result(self, raw_value: Any) -> ToolResult:
        schema = self.output_schema
        if not isinstance(raw_value, dict) or schema is None or schema.get("x-fastmcp-wrap-result"):
            return super().convert_result(raw_value)
        try:
            structured = get_cached_typeadapter(self.return_type).dump_python(
                raw_value, mode="json"
            )
        except pydantic_core.PydanticSerializationError:
            return super().convert_result(raw_value)  # FastMCP names the failure
        text = pydantic_core.to_json(structured, fallback=str).decode()
        content: list[mt.ContentBlock] = [mt.TextContent(type="text", text=text)]
        # Both built without re-validation: the content is one TextContent made here and the
        # structured content is JSON data fresh from the return type's serializer. The
        # protocol result is what FastMCP would build from this ToolResult.
        result = _TOOL_RESULT.model_copy(
            update={"content": content, "structured_content": structured}
        )
        result._raw_mcp_result = WireResult.of(content, structured)
        return result


class WireResult(mt.CallToolResult):
    """A successful tool result that knows its own wire form.

    The MCP SDK dumps a handler's result model to JSON data before it validates that data
    against the protocol version's result shape and encodes it: for a result whose parts are
    already JSON data, that first dump only copies them. This one answers the SDK's dump with
    the data it was built from (same keys, defaults included, as the generic dump). Any other
    dump goes through pydantic as usual.
    """

    _wire: dict[str, Any] = PrivateAttr(default_factory=dict)

    @classmethod
    def of(cls, content: list[mt.ContentBlock], structured: dict[str, Any]) -> WireResult:
        # A copy of an empty one with these two fields set: what model_construct makes, with
        # the defaults of the other fields computed once (half the time).
        result = _EMPTY_WIRE_RESULT.model_copy(
            update={"content": content, "structured_content": structured}
        )
        wire = dict(_WIRE_TEMPLATE)
        wire["content"] = [block.model_dump(**_WIRE_DUMP) for block in content]
        wire["structuredContent"] = structured
        result._wire = wire
        return result

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        if kwargs == _WIRE_DUMP and self._wire:
            return dict(self._wire)
        return super().model_dump(**kwargs)


# How the SDK dumps a handler's result, and what it makes of an empty successful one.
_WIRE_DUMP: dict[str, Any] = {"by_alias": True, "mode": "json", "exclude_none": True}
_WIRE_TEMPLATE = mt.CallToolResult(content=[], structured_content={}).model_dump(**_WIRE_DUMP)
# What LithosTool.convert_result and WireResult.of copy with their two fields set.
_TOOL_RESULT = ToolResult.model_construct(
    content=[], structured_content=None, meta=None, is_error=False
)
_EMPTY_WIRE_RESULT = WireResult.model_construct(content=[], structured_content={})


def described_tool(
    handler: Callable[..., Any],
    annotations: mt.ToolAnnotations,
    stored: StoredToolSchemas | None = None,
) -> LithosTool:
    """The tool of ``handler``, described by its whole docstring; its schemas from
    ``stored`` when it holds them (recorded there when built).

    FastMCP parses every tool's docstring with griffe (Google, NumPy and Sphinx parsers in
    turn, twice a function) for argument descriptions; Lithos gives each argument a Field
    description and writes no such sections, so the parse finds none and the description is
    the whole docstring. Built with the docstring hidden and given as the description, the
    tool is the same without the parse (~0.1-0.2 s of start-up, griffe's import included).

    The handlers' annotations are strings (``from __future__ import annotations``), which
    FastMCP evaluates again in each of the six places that reads them; they are evaluated
    once here, to the same types (~0.07 s of start-up over every tool).

    A tool whose schemas are stored is made as ``FunctionTool.from_function`` makes it from
    the same handler, without building them (arguments are validated by FastMCP's own
    adapter, made on the tool's first call either way).
    """
    description = inspect.getdoc(handler)
    hints = typing.get_type_hints(handler, include_extras=True)
    schemas = stored.get(handler.__name__) if stored is not None else None
    if schemas is not None:
        made = LithosTool(
            fn=handler,
            return_type=hints.get("return"),
            name=handler.__name__,
            description=description,
            parameters=schemas.parameters,
            output_schema=schemas.output,
            annotations=annotations,
            tags=set(),
            task_config=TaskConfig(mode="forbidden"),
        )
        made._listed = schemas
        return made
    doc, handler.__doc__ = handler.__doc__, None
    written, handler.__annotations__ = handler.__annotations__, hints
    try:
        tool = LithosTool.from_function(
            handler, description=description, annotations=annotations, task=False
        )
    finally:
        handler.__doc__ = doc
        handler.__annotations__ = written
    built = cast(LithosTool, tool)
    if stored is not None:
        built._listed = ToolSchemas.of(built.parameters, built.output_schema)
        stored.put(built.name, built._listed)
    return built


class ToolRegistry:
    """Registers the tool groups' handlers on a server as :class:`LithosTool`, their
    schemas from ``stored`` when it holds them."""

    def __init__(self, server: FastMCP, stored: StoredToolSchemas | None = None) -> None:
        self._server = server
        self._stored = stored

    def tool(self, *, annotations: mt.ToolAnnotations) -> Callable[[Handler], Handler]:
        """A decorator adding the handler as a tool named after the function, described by
        its docstring, its arguments and result by its signature (as ``FastMCP.tool``)."""

        def register(handler: Handler) -> Handler:
            self._server.add_tool(described_tool(handler, annotations, self._stored))
            return handler

        return register
