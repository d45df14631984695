"""Run a module as ``python -m`` would, seeing only the distributions ``pip install .`` installs.

    python tests/e2e/runtime_only.py lithos.cli.main --data-dir DIR serve --transport stdio

The development environment also holds the test tools and FastMCP's client (with the OAuth,
keyring and other packages it brings); a server started from it could quietly import one of
those, and a fresh ``pip install .`` would then fail where the tests pass. Before running the
module this launcher makes every top-level module of a distribution outside the runtime install
(:func:`tests.dependencies.runtime_closure`) fail to import with ModuleNotFoundError, as if it
were not installed, which is what a fresh install looks like without building one.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from importlib.metadata import packages_distributions
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent.parent


class NotInstalled(MetaPathFinder):
    """Makes importing any of ``modules`` (top-level names) fail as if it were not installed."""

    def __init__(self, modules: set[str]) -> None:
        self.modules = modules

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        top = fullname.partition(".")[0]
        if top in self.modules:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def outside_the_runtime_install() -> set[str]:
    """Top-level modules that only distributions outside the runtime install provide."""
    sys.path.insert(0, str(ROOT))
    from tests.dependencies import canonical, project_requirements, runtime_closure

    runtime = set(runtime_closure(project_requirements())) | {"lithos-kb", "pip", "setuptools"}
    sys.path.remove(str(ROOT))
    return {
        module
        for module, owners in packages_distributions().items()
        if module != "lithos" and not runtime & {canonical(owner) for owner in owners}
    }


def main() -> None:
    blocked = outside_the_runtime_install()
    for name in [name for name in sys.modules if name.partition(".")[0] in blocked]:
        del sys.modules[name]
    sys.meta_path.insert(0, NotInstalled(blocked))
    del sys.path[0]  # this script's folder, which `python -m` would not have put there
    module, *arguments = sys.argv[1:]
    sys.argv = [module, *arguments]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
