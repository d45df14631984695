"""The tools' published input and output schemas, kept between starts of the server.

Building a tool's schemas is pydantic's work (a core schema for its arguments and its result
type, then two JSON schemas: ~0.1 s of CPU over Lithos's tools, on the path to the first
answered call). They depend only on the code that defines the tools and on the versions of
the libraries that turn it into schemas, so :class:`StoredToolSchemas` keeps what the last
start built in one JSON file, under a key made of those versions and a digest of Lithos's
source. A file that is missing, unreadable, malformed or made under another key is ignored
and written again after the schemas are built as usual; a tool it does not hold is built as
usual too. The file is derived data: deleting it costs the next start that build.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastmcp.utilities.json_schema import dereference_refs

import lithos

log = logging.getLogger("lithos.mcp")

# What turns a handler's signature into schemas (pydantic and its core, FastMCP's own passes
# over them, the types the MCP SDK and typing_extensions define).
SCHEMA_LIBRARIES = ("fastmcp", "mcp", "mcp-types", "pydantic", "pydantic-core", "typing-extensions")

Schema = dict[str, Any]


@dataclass(frozen=True)
class ToolSchemas:
    """A tool's input and output schemas as built, and as tools/list shows them (``$ref``
    inlined by FastMCP's ``dereference_refs``, which some clients need: ~2 ms a tool)."""

    parameters: Schema
    output: Schema | None
    listed_parameters: Schema
    listed_output: Schema | None

    @classmethod
    def of(cls, parameters: Schema, output: Schema | None) -> ToolSchemas:
        listed_output = dereference_refs(output) if output is not None else None
        return cls(parameters, output, dereference_refs(parameters), listed_output)

    def stored(self) -> dict[str, Any]:
        return {
            "parameters": self.parameters,
            "output_schema": self.output,
            "listed": {"parameters": self.listed_parameters, "output_schema": self.listed_output},
        }

    @classmethod
    def parse(cls, stored: Any) -> ToolSchemas | None:
        """The schemas an entry of the file holds, or ``None`` when it is malformed."""
        if not isinstance(stored, dict) or not isinstance(stored.get("listed"), dict):
            return None
        listed = stored["listed"]
        if "output_schema" not in stored or "output_schema" not in listed:
            return None
        parameters, output = stored.get("parameters"), stored["output_schema"]
        listed_parameters, listed_output = listed.get("parameters"), listed["output_schema"]
        if not isinstance(parameters, dict) or not isinstance(listed_parameters, dict):
            return None
        if isinstance(output, dict) and isinstance(listed_output, dict):
            return cls(parameters, output, listed_parameters, listed_output)
        if output is None and listed_output is None:
            return cls(parameters, None, listed_parameters, None)
        return None


@functools.cache
def schema_key() -> dict[str, str]:
    """What the stored schemas were built from: Lithos's version and source, Python's and
    the schema libraries' versions."""
    key = {"lithos": lithos.__version__, "python": sys.version, "source": source_digest()}
    for name in SCHEMA_LIBRARIES:
        try:
            key[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            key[name] = ""
    return key


def source_digest(root: Path | None = None) -> str:
    """A digest of every Python source file of the ``lithos`` package (names and bytes):
    the tools' signatures and every type they name are defined there (~4 ms of reading)."""
    root = root or Path(lithos.__file__).parent
    digest = hashlib.blake2b(digest_size=16)
    for folder, subfolders, files in os.walk(root):
        subfolders.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = Path(folder, name)
                digest.update(path.relative_to(root).as_posix().encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


class StoredToolSchemas:
    """The schemas of the tools one server builds, read from ``path`` when made under
    ``key`` (default :func:`schema_key`) and written back by :meth:`save` when a tool had
    to be built. Used on one thread, while the server is built."""

    def __init__(self, path: Path, key: dict[str, str] | None = None) -> None:
        self.path = path
        self.key = key if key is not None else dict(schema_key())
        self._stored = self._read()
        self._built: dict[str, ToolSchemas] = {}
        self._missed = False

    def get(self, name: str) -> ToolSchemas | None:
        """The stored schemas of tool ``name``, or ``None``: the caller builds them and gives
        them to :meth:`put`."""
        schemas = self._stored.get(name)
        if schemas is None:
            self._missed = True
        else:
            self._built[name] = schemas
        return schemas

    def put(self, name: str, schemas: ToolSchemas) -> None:
        """Record the schemas built for tool ``name``."""
        self._built[name] = schemas

    def save(self) -> None:
        """Write the schemas of every tool looked up or built when one was built, so the next
        start finds them all; a failure to write is logged (the next start builds again)."""
        if not self._missed:
            return
        tools = {name: schemas.stored() for name, schemas in self._built.items()}
        text = json.dumps({"key": self.key, "tools": tools}, sort_keys=False)
        partial = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial.write_text(text, encoding="utf-8")
            os.replace(partial, self.path)
        except OSError as exc:
            log.warning("could not keep the tool schemas in %s: %s", self.path, exc)
            partial.unlink(missing_ok=True)
        else:
            self._missed = False

    def _read(self) -> dict[str, ToolSchemas]:
        try:
            stored = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.info("ignoring the stored tool schemas in %s: %s", self.path, exc)
            return {}
        if not isinstance(stored, dict) or stored.get("key") != self.key:
            return {}
        tools = stored.get("tools")
        if not isinstance(tools, dict):
            return {}
        found: dict[str, ToolSchemas] = {}
        for name, stored_schemas in tools.items():
            schemas = ToolSchemas.parse(stored_schemas)
            if schemas is not None:
                found[name] = schemas
        return found
