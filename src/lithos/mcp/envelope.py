"""The one place a tool failure becomes the wire envelope ``{"status": "error", "code",
"message"}``.

:class:`ErrorEnvelope` checks every call's arguments before the tool runs (no NUL
characters, no lone surrogates, no NaN or infinity, no integer beyond 64 bits, bounded
nesting), turns a :class:`LithosError`, an argument
validation failure or an unknown tool name into the envelope, and, as the last line, turns any
other exception into an ``internal_error`` envelope. Every message leaves with absolute paths
scrubbed: a path inside the knowledge directory is shown relative to it, any other becomes
``<path>``.
"""

from __future__ import annotations

import json
import logging
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema_rs
import mcp.types as mt
from fastmcp.exceptions import NotFoundError, ToolError, ValidationError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult
from pydantic import ValidationError as PydanticValidationError

from lithos.errors import InvalidInput, InvalidPath, LithosError, UnknownTool

if TYPE_CHECKING:
    import jsonschema

log = logging.getLogger("lithos.mcp")

MAX_ARGUMENT_DEPTH = 32
# An absolute POSIX path: a "/" that does not continue a word, a URL or a relative path.
_ABSOLUTE_PATH = re.compile(r"(?<![\w:/.~\-\\])/[^\s'\"`,;)\]}]*")


class ErrorEnvelope(Middleware):
    """Guards every tool call and answers every failure with the envelope."""

    def __init__(self, knowledge_root: Path) -> None:
        self._root = str(knowledge_root)
        self._validators: dict[str, ArgumentSchema] = {}

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        try:
            arguments = context.message.arguments or {}
            check_arguments(arguments)
            await self._check_schema(context, arguments)
            return await call_next(context)
        except LithosError as exc:
            return self._envelope(exc)
        except NotFoundError:
            return self._envelope(UnknownTool(f"unknown tool {context.message.name!r}"))
        except ValidationError as exc:
            cause = exc.__cause__
            detail = _describe(cause) if isinstance(cause, PydanticValidationError) else str(exc)
            return self._envelope(InvalidInput(f"invalid arguments: {detail}"))
        except PydanticValidationError as exc:
            return self._envelope(InvalidInput(f"invalid arguments: {_describe(exc)}"))
        except ToolError as exc:
            # FastMCP wraps exceptions raised by a tool body in ToolError.
            cause = exc.__cause__
            if isinstance(cause, LithosError):
                return self._envelope(cause)
            # FastMCP has logged it with its traceback already.
            return self._internal(context.message.name, cause or exc)
        except Exception as exc:
            log.exception("%s failed unexpectedly", context.message.name)
            return self._internal(context.message.name, exc)

    async def _check_schema(
        self, context: MiddlewareContext[mt.CallToolRequestParams], arguments: dict[str, Any]
    ) -> None:
        """Hold the arguments to the tool's published input schema, exactly: FastMCP's
        validation is lax (``true`` passes as the integer 1, ``"5"`` as 5), the schema is what
        clients were promised."""
        name = context.message.name
        validators = self._validators.get(name)
        if validators is None:
            server = context.fastmcp_context.fastmcp if context.fastmcp_context else None
            tool = await server.get_tool(name) if server is not None else None
            if tool is None:
                return  # unknown tools are answered by call_next
            validators = ArgumentSchema(tool.parameters)
            self._validators[name] = validators
        validators.check(arguments)

    def _internal(self, tool: str, exc: BaseException) -> ToolResult:
        message = f"{tool} failed: {type(exc).__name__}: {exc}"
        return self._envelope(LithosError(message))

    def _envelope(self, exc: LithosError) -> ToolResult:
        body = _scrub(exc.envelope(), self._root)
        # The envelope goes as text only: structuredContent must match the tool's output
        # schema, and TypeScript SDK clients (the MCP Inspector among them) check it against
        # that schema even on isError results, rejecting the whole answer.
        return ToolResult(
            content=[mt.TextContent(type="text", text=json.dumps(body))], is_error=True
        )


class ArgumentSchema:
    """One input schema's validators: jsonschema-rs (compiled, microseconds a call) decides
    whether arguments are valid; only arguments it refuses meet the pure-Python jsonschema
    validator (~0.1 ms a call), whose errors word the message clients see. That one is made,
    and jsonschema imported (~0.1 s of start-up), on the first refusal."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self._schema = schema
        self._fast = jsonschema_rs.Draft202012Validator(schema)
        self._full: jsonschema.Draft202012Validator | None = None

    def check(self, arguments: dict[str, Any]) -> None:
        if self._fast.is_valid(arguments):
            return
        if self._full is None:
            import jsonschema

            self._full = jsonschema.Draft202012Validator(self._schema)
        errors = sorted(self._full.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        if errors:
            raise InvalidInput("invalid arguments: " + "; ".join(_schema_error(e) for e in errors))


def check_arguments(arguments: dict[str, Any]) -> None:
    """Refuse arguments no tool can store or compare: text with NUL characters or lone
    surrogates (not UTF-8), non-finite numbers, integers beyond SQLite's 64 bits, and values
    nested deeper than MAX_ARGUMENT_DEPTH. Such text in a
    path argument is ``invalid_path``, elsewhere ``invalid_input``.

    Walks iteratively, so a hostile nesting cannot exhaust the stack.
    """
    for name, value in arguments.items():
        error = InvalidPath if "path" in name else InvalidInput
        pending: list[tuple[str, Any, int]] = [(name, value, 1)]
        while pending:
            where, item, depth = pending.pop()
            if depth > MAX_ARGUMENT_DEPTH:
                raise error(f"{name}: nested deeper than {MAX_ARGUMENT_DEPTH} levels")
            if isinstance(item, str):
                _check_text(where, item, error)
            elif isinstance(item, float) and not math.isfinite(item):
                raise InvalidInput(f"{where[:100]}: must be a finite number")
            elif isinstance(item, int) and not -(2**63) <= item < 2**63:
                raise InvalidInput(f"{where[:100]}: integer out of range")
            elif isinstance(item, dict):
                for key, child in item.items():
                    _check_text(f"{where} key", str(key), error)
                    pending.append((f"{where}.{key}", child, depth + 1))
            elif isinstance(item, list | tuple):
                pending.extend((f"{where}[{i}]", child, depth + 1) for i, child in enumerate(item))


def _check_text(where: str, text: str, error: type[InvalidInput]) -> None:
    if "\x00" in text:
        raise error(f"{where[:100]}: NUL characters are not allowed")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise error(f"{where[:100]}: not valid Unicode (lone surrogate)") from None


def scrub_paths(text: str, knowledge_root: str) -> str:
    """``text`` with paths in the knowledge directory made relative and any other absolute
    path replaced by ``<path>``."""
    text = text.replace(knowledge_root + "/", "").replace(knowledge_root, ".")
    return _ABSOLUTE_PATH.sub("<path>", text)


def _scrub(value: Any, root: str) -> Any:
    if isinstance(value, str):
        return scrub_paths(value, root)
    if isinstance(value, dict):
        return {key: _scrub(item, root) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub(item, root) for item in value]
    return value


def _schema_error(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path) or "arguments"
    if error.validator in ("maxLength", "minLength", "maxItems", "minItems"):
        return f"{where}: violates {error.validator} {error.validator_value}"
    if error.validator == "type":
        return f"{where}: must be of type {error.validator_value}"
    return f"{where}: {error.message[:200]}"


def _describe(exc: PydanticValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)
