"""Catalog.lineage: provenance both ways in one round trip, as derived_from/derivatives."""

from __future__ import annotations

import pytest

from lithos.app import LithosApp
from lithos.domain.metadata import MetadataChange
from lithos.services.knowledge import WriteRequest


async def note(app: LithosApp, title: str, derived: list[str] | None = None) -> str:
    metadata = MetadataChange(derived_from_ids=derived)
    request = WriteRequest("agent-a", title=title, content="body", metadata=metadata)
    return str((await app.knowledge.write(request))["id"])


async def test_lineage_reads_sources_and_derivatives_together(
    app: LithosApp, monkeypatch: pytest.MonkeyPatch
):
    a = await note(app, "A")
    b = await note(app, "B")
    c = await note(app, "C", [a, b])
    d = await note(app, "D", [c])
    calls = []
    original = app.catalog.db.call

    def counted(fn, *args, **kwargs):
        calls.append(fn)
        return original(fn, *args, **kwargs)

    monkeypatch.setattr(app.catalog.db, "call", counted)
    found = app.catalog.lineage([c, a, d, c])
    assert len(calls) == 1
    assert {k: sorted(v) for k, v in found.sources.items()} == {c: sorted([a, b]), d: [c]}
    assert found.derivatives == {a: [c], c: [d]}
    monkeypatch.undo()
    assert found.sources == app.catalog.derived_from([c, a, d])
    assert found.derivatives == app.catalog.derivatives([c, a, d])
    empty = app.catalog.lineage([])
    assert empty.sources == {} and empty.derivatives == {}
