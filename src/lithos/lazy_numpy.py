"""numpy, imported on its first use instead of at start-up.

Lithos's vector and retrieval modules use numpy, but a server's first answers (full-text
searches, reads, lists) need none of it: importing it is ~0.1 s of CPU on the critical path
of `lithos serve` (bench/NOTES.md). Those modules write ``from lithos.lazy_numpy import np``
and use ``np`` as usual; the first attribute looked up imports numpy (thread-safe, once),
runs the :func:`after_import` hooks, and each attribute looked up is then kept on ``np``
itself, so later look-ups cost what a module's do. Type checkers see numpy itself.
"""

from __future__ import annotations

import importlib
import threading
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

__all__ = ["after_import", "np"]

_lock = threading.Lock()
_numpy: types.ModuleType | None = None
_hooks: list[Callable[[], object]] = []


def after_import(hook: Callable[[], object]) -> None:
    """Run ``hook`` once numpy is imported through ``np`` (now, if it is already). A hook
    must not use ``np``; it may ``import numpy``."""
    with _lock:
        if _numpy is None:
            _hooks.append(hook)
            return
    hook()


def _imported() -> types.ModuleType:
    global _numpy
    with _lock:
        if _numpy is None:
            module = importlib.import_module("numpy")
            for hook in _hooks:
                hook()
            _hooks.clear()
            _numpy = module
        return _numpy


class _Deferred(types.ModuleType):
    """Stands for numpy until its first attribute is looked up."""

    def __getattr__(self, name: str) -> Any:
        value = getattr(_numpy or _imported(), name)
        setattr(self, name, value)
        return value


if TYPE_CHECKING:
    import numpy as np
else:
    np = _Deferred("numpy")
