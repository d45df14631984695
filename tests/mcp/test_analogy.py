"""The analogy scout through a real MCP client: notes built like the best matches (the same
frame slots, the same kind of actions and lessons) are found whatever their topic, with
reasons naming the matched slots; frames are parsed once per note version."""

from __future__ import annotations

from fastmcp import Client

from lithos.app import LithosApp
from lithos.domain.edges import EdgeUpsert
from lithos.domain.frames import extract_frame, slot_of
from lithos.domain.retrieval import ScoutHit
from lithos.retrieval.context import ScoutContext
from lithos.retrieval.expansion import Seed
from tests.support import call

DATABASE = """## Problem
The orders database stalled under load at noon every day.

## Actions
Added a connection pool limit, retried with exponential backoff and jitter.

## Outcome
Stalls stopped; p99 latency fell by half.

## Lessons learned
Bound every pool; retry with backoff and jitter rather than at once.
"""

KITCHEN = """## Problem
The dishwasher queue in the restaurant kitchen overflowed at lunch.

## Actions
Set a limit on racks in flight, retried failed racks later with backoff and jitter.

## Outcome
No more overflow during service.

## Lessons learned
Bound the queue; retry with backoff and jitter.
"""

UNSTRUCTURED = "Dishwashers in restaurant kitchens need racks, detergent and a lunch rush plan."


async def write(client: Client, title: str, content: str, **args: object) -> str:
    result = await call(client, "lithos_write", agent="a", title=title, content=content, **args)
    return str(result["id"])


def test_frames_come_from_headings_and_labels():
    frame = extract_frame(DATABASE)
    assert frame.filled == {"problem", "actions", "outcome", "lessons"}
    assert {"backoff", "jitter"} <= frame.slots["actions"]
    labelled = extract_frame("Problem: disk full\n**Fix:** rotate logs\nOther text")
    assert labelled.filled == {"problem", "actions"}
    assert slot_of("What we did") == "actions" and slot_of("Lessons Learned") == "lessons"
    assert slot_of("Installation") is None
    fenced = extract_frame("```\n## Problem\n```\n## Outcome\nfine")
    assert fenced.filled == {"outcome"}


def test_slots_are_found_by_word_and_by_phrase_and_the_first_slot_wins():
    assert slot_of("Post-mortem") == "lessons" and slot_of("next   time") == "lessons"
    assert slot_of("Trade-offs and results") == "constraints"  # constraints before outcome
    assert slot_of("Results, then the problem") == "problem"  # slot order, not word order
    assert slot_of("problematic") is None and slot_of("next") is None
    assert slot_of("") is None


def test_frames_read_the_same_whatever_the_line_breaks():
    lf = "Intro: words\n  ## Problem ##\nqueue overflowed\n    - **Fix:** bound it\nrest"
    frame = extract_frame(lf)
    assert frame.filled == {"problem", "actions"}
    assert {"queue", "overflowed", "rest"} <= frame.slots["problem"]
    for separator in ("\r\n", "\r", "\u2028"):
        assert extract_frame(lf.replace("\n", separator)) == frame
    assert not extract_frame("just prose: nothing framed\n# Notes\ntext")


async def test_a_note_built_like_the_best_match_is_found_with_matched_slots(
    client: Client, app: LithosApp
):
    database = await write(client, "Orders database stalls", DATABASE, tags=["incident"])
    kitchen = await write(client, "Kitchen rush", KITCHEN, tags=["incident"])
    basics = await write(client, "Dishwasher basics", UNSTRUCTURED)
    for note in (database, kitchen):  # the same graph motif: each supports another note
        await app.edges.upsert(EdgeUpsert(note, basics, "supports", weight=0.5))
    result = await call(client, "lithos_retrieve", query="orders database stalled", limit=5)
    found = {r["id"]: r for r in result["results"]}
    hit = found[kitchen]
    assert "scout_analogy" in hit["scouts"]
    [reason] = [r for r in hit["reasons"] if r.startswith("analogy:")]
    assert "frame slots problem, actions, outcome, lessons match" in reason
    assert "actions share" in reason and "backoff" in reason
    assert "tags incident" in reason and "edges supports>" in reason
    assert reason.endswith("built like 'Orders database stalls'")


async def test_frames_are_parsed_once_per_version(client: Client, app: LithosApp):
    note = await write(client, "Orders database stalls", DATABASE)
    await write(client, "Kitchen rush", KITCHEN)
    for _ in range(3):
        await call(client, "lithos_retrieve", query="orders database stalled")
    parses = app.frames.parses
    await call(client, "lithos_retrieve", query="kitchen rush")
    assert app.frames.parses == parses  # nothing re-parsed per call
    await call(
        client,
        "lithos_write",
        agent="a",
        id=note,
        title="Orders database stalls",
        content=DATABASE.replace("## Outcome", "## Result"),
    )
    assert app.frames.parses == parses + 1


async def test_frames_of_unchanged_notes_survive_a_restart(client: Client, app: LithosApp):
    await write(client, "Orders database stalls", DATABASE)
    await write(client, "Kitchen rush", KITCHEN)
    assert app.frames.size == 2
    app.frames.reset()  # as after a whole-base reconcile of a warm restart
    assert app.frames.frames([]) == {} and app.frames.size == 2
    assert app.frames.parses == 2  # same content hashes: nothing read again


async def test_notes_indexed_before_the_first_use_are_parsed_by_it_once(
    client: Client, app: LithosApp
):
    app.frames.reset()  # as after the start-up check: nothing read yet in this process
    before = app.frames.parses
    await write(client, "Orders database stalls", DATABASE)
    kitchen = await write(client, "Kitchen rush", KITCHEN)
    assert app.frames.parses == before  # an import or early writes parse nothing
    assert set(app.frames.frames([kitchen])) == {kitchen}  # the first use reads them
    assert app.frames.parses == before + 2
    await write(client, "Kitchen rush", KITCHEN.replace("## Outcome", "## Result"), id=kitchen)
    assert app.frames.parses == before + 3  # once complete, a change is parsed when told


class BrokenAnalogy:
    name = "scout_analogy"

    def expand(self, ctx: ScoutContext, seeds: list[Seed]) -> list[ScoutHit]:
        raise RuntimeError("frames unavailable")


async def test_a_failing_analogy_scout_is_reported_not_fatal(client: Client, app: LithosApp):
    note = await write(client, "Orders database stalls", DATABASE)
    app.retrieval.phase_b = [
        BrokenAnalogy() if s.name == "scout_analogy" else s for s in app.retrieval.phase_b
    ]
    result = await call(client, "lithos_retrieve", query="orders database stalled")
    assert [r["id"] for r in result["results"]] == [note]
    assert result["degraded"] is True and result["failed_scouts"] == ["scout_analogy"]
