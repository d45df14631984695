"""Planning note migrations: only notes below the current version, only the keys a migration
changes, every other line of the file as the person wrote it."""

from __future__ import annotations

import pytest

from lithos.domain.note_migrations import (
    CURRENT_SCHEMA_VERSION,
    NOTE_MIGRATIONS,
    FieldChange,
    plan_note,
)
from lithos.errors import InvalidInput

CLIPPED = """---
title: "Tea, brewed well"   # clipped from the web
source: https://example.org/tea
tags: [tea, howto]
created: 2024-03-01
---

# Tea

Body text stays.
"""


def test_the_registry_is_named_ordered_and_ends_at_the_current_version() -> None:
    versions = [m.to_version for m in NOTE_MIGRATIONS]
    assert versions == sorted(set(versions)) and versions[-1] == CURRENT_SCHEMA_VERSION == 2
    assert [m.name for m in NOTE_MIGRATIONS] == ["0002_source_url_from_source"]


def test_a_clipped_note_gains_source_url_and_its_version_and_nothing_else_changes() -> None:
    plan = plan_note(CLIPPED, "clips/tea.md")
    assert plan is not None
    assert (plan.from_version, plan.to_version) == (1, 2)
    assert plan.migrations == ("0002_source_url_from_source",)
    assert plan.fields == (
        FieldChange("source_url", None, "https://example.org/tea"),
        FieldChange("schema_version", None, 2),
    )
    removed = [line for line in CLIPPED.splitlines() if line not in plan.text.splitlines()]
    added = [line for line in plan.text.splitlines() if line not in CLIPPED.splitlines()]
    assert removed == []
    assert sorted(added) == ["schema_version: 2", "source_url: https://example.org/tea"]
    # The person's key order, comment, quoting and flow list are kept.
    assert plan.text.index("title:") < plan.text.index("source:") < plan.text.index("tags:")
    assert plan.text.endswith("# Tea\n\nBody text stays.\n")


def test_a_source_that_is_not_a_url_is_left_alone_and_only_the_version_is_stamped() -> None:
    plan = plan_note("---\ntitle: T\nsource: task-42\n---\nBody\n", "t.md")
    assert plan is not None
    assert plan.fields == (FieldChange("schema_version", None, 2),)


def test_an_existing_source_url_is_never_overwritten() -> None:
    text = "---\nsource: https://a.example\nsource_url: https://b.example\n---\nBody\n"
    plan = plan_note(text, "t.md")
    assert plan is not None and "source_url: https://b.example" in plan.text
    assert [f.key for f in plan.fields] == ["schema_version"]


@pytest.mark.parametrize(
    "text",
    [
        "---\ntitle: T\nschema_version: 2\nsource: https://x.example\n---\nBody\n",
        "---\nschema_version: 7\n---\nfrom a newer Lithos\n",
        "# Just Markdown\n\nNo frontmatter: no schema to migrate.\n",
    ],
)
def test_notes_at_or_above_the_current_version_or_without_frontmatter_are_not_planned(
    text: str,
) -> None:
    assert plan_note(text, "t.md") is None


def test_a_malformed_schema_version_is_refused_not_overwritten() -> None:
    with pytest.raises(InvalidInput, match="schema_version"):
        plan_note("---\nschema_version: two\n---\nBody\n", "t.md")


def test_the_diff_shows_the_added_lines() -> None:
    plan = plan_note(CLIPPED, "clips/tea.md")
    assert plan is not None
    diff = plan.diff(CLIPPED)
    assert diff.startswith("--- a/clips/tea.md\n+++ b/clips/tea.md\n")
    assert "+source_url: https://example.org/tea\n" in diff and "+schema_version: 2\n" in diff
    assert not [line for line in diff.splitlines() if line.startswith("-") and line[1:2] != "-"]
