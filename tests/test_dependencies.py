"""The runtime install (`pip install .`) holds exactly the distributions docs/dependencies.md
lists, each with the reason it is there: a new one fails here until someone says why."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.dependencies import (
    PROJECT,
    StaleEnvironment,
    canonical,
    documented,
    project_requirements,
    runtime_closure,
)


@pytest.fixture(scope="module")
def runtime():
    return runtime_closure(project_requirements())


def test_every_distribution_of_the_runtime_install_is_in_the_table(runtime):
    table = documented()
    undocumented = sorted(runtime[key].name for key in runtime.keys() - table.keys())
    gone = sorted(table[key].name for key in table.keys() - runtime.keys())
    assert not undocumented, f"installed but not in docs/dependencies.md: {undocumented}"
    assert not gone, f"in docs/dependencies.md but no longer installed: {gone}"


def test_the_table_names_what_really_requires_each_distribution(runtime):
    for key, row in documented().items():
        said = {canonical(name.strip().strip("`")) for name in row.required_by.split(",")}
        actual = {canonical(parent) for parent in runtime[key].required_by}
        assert said <= actual, f"{row.name}: required by {sorted(actual)}, not {sorted(said)}"
        assert (canonical(PROJECT) in said) == (canonical(PROJECT) in actual), row.name
        assert row.reason, f"{row.name}: no reason given"


def test_the_dev_extra_stays_out_of_the_runtime_install(runtime):
    # FastMCP's client extra brings OAuth and a keyring; the server Lithos runs needs neither.
    assert {"fastmcp", "authlib", "keyring", "cyclopts", "pytest"}.isdisjoint(runtime)


def test_the_closure_follows_requested_extras_only(runtime):
    assert "cachetools" in runtime  # py-key-value-aio[memory]
    assert "aiofile" not in runtime  # py-key-value-aio[filetree], asked for by the dev extra


def test_a_pin_the_environment_does_not_satisfy_is_reported():
    with pytest.raises(StaleEnvironment, match="is installed"):
        runtime_closure([Requirement("pydantic==0.0.1")])


def test_a_row_must_say_whether_lithos_imports_it(tmp_path: Path):
    doc = tmp_path / "dependencies.md"
    doc.write_text(
        "## Every distribution of the runtime install\n\n"
        "| distribution | imported | required by | why |\n|---|---|---|---|\n"
        "| `numpy` | maybe | Lithos | vectors |\n"
    )
    with pytest.raises(ValueError, match="yes or no"):
        documented(doc)
