"""What ``pip install .`` installs, read from package metadata, and the reviewed list of it.

:func:`runtime_closure` resolves ``[project] dependencies`` of pyproject.toml through the
``Requires-Dist`` metadata of the distributions installed in this environment (markers and
extras evaluated as pip does), so it needs no network and no fresh venv. :func:`documented` reads
the table in docs/dependencies.md that says, for each distribution of that install, whether a
running Lithos imports it and why it is there.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "dependencies.md"
TABLE_HEADING = "## Every distribution of the runtime install"


def canonical(name: str) -> str:
    """The PEP 503 name: ``Typing_Extensions`` -> ``typing-extensions``."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Documented:
    """One row of the table: a distribution, whether Lithos imports it, and why it is there."""

    name: str
    imported: bool
    required_by: str
    reason: str


def documented(doc: Path = DOC) -> dict[str, Documented]:
    """The rows of the runtime table in ``doc``, by canonical name."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    start = lines.index(TABLE_HEADING)
    rows: dict[str, Documented] = {}
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        name, imported, required_by, reason = cells
        if imported not in ("yes", "no"):
            raise ValueError(f"{doc.name}: imported must be yes or no: {line}")
        rows[canonical(name.strip("`"))] = Documented(
            name.strip("`"), imported == "yes", required_by, reason
        )
    return rows


def project_requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[Requirement]:
    """``[project] dependencies``: what ``pip install .`` asks for."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    return [Requirement(line) for line in project["dependencies"]]


class StaleEnvironment(Exception):
    """An installed distribution does not match what pyproject.toml pins (or is missing)."""


PROJECT = "Lithos"


@dataclass(frozen=True)
class Installed:
    """A distribution of the runtime install and the distributions (or ``Lithos``, for
    pyproject.toml itself) whose requirements bring it."""

    name: str
    version: str
    required_by: frozenset[str]


def runtime_closure(requirements: list[Requirement]) -> dict[str, Installed]:
    """Every distribution that installing ``requirements`` (Lithos's own) brings, by canonical
    name, walked through the installed metadata.

    Raises :class:`StaleEnvironment` when a required distribution is not installed or its
    installed version does not satisfy the requirement (the environment is out of date)."""
    found: dict[str, Installed] = {}
    extras: dict[str, set[str]] = {}
    parents: dict[str, set[str]] = {}
    pending = [(PROJECT, requirement) for requirement in requirements]
    while pending:
        parent, requirement = pending.pop()
        key = canonical(requirement.name)
        parents.setdefault(key, set()).add(parent)
        try:
            dist = distribution(requirement.name)
        except PackageNotFoundError as missing:
            raise StaleEnvironment(f"{requirement} is not installed") from missing
        if not requirement.specifier.contains(dist.version, prereleases=True):
            raise StaleEnvironment(f"{requirement} but {dist.version} is installed")
        wanted = set(requirement.extras)
        if key in found and wanted <= extras[key]:
            continue
        found[key] = Installed(dist.metadata["Name"], dist.version, frozenset())
        extras[key] = extras.get(key, set()) | wanted
        for line in dist.requires or []:
            child = Requirement(line)
            if child.marker is None or any(
                child.marker.evaluate({"extra": extra}) for extra in extras[key] | {""}
            ):
                pending.append((key, child))
    return {
        key: Installed(entry.name, entry.version, frozenset(parents[key]))
        for key, entry in found.items()
    }
