"""The ``lithos`` command's entry point: the garbage collector is kept off while the command
imports its modules (:func:`lithos.runtime.pause_collection`); ``lithos.cli.main`` turns it
back on once they are imported (``serve``: once the MCP stack is too)."""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from lithos.runtime import pause_collection

    pause_collection()
    from lithos.cli.main import main as run

    return run(argv)
