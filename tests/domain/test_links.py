"""Wiki-link resolution: the spec's precedence, then titles, all ignoring case."""

from __future__ import annotations

from lithos.domain.links import LinkResolver, closest_name, parse_links
from lithos.domain.notes import title_file_stem

A = "00000000-0000-4000-8000-00000000000a"
B = "00000000-0000-4000-8000-00000000000b"


def resolver() -> LinkResolver:
    return LinkResolver.build(
        [
            (A, "notes/event-loop.md", ("The Loop",), "Event Loop"),
            (B, "Event Queue.md", (), "Event queue"),
        ]
    )


def test_a_title_resolves_ignoring_case():
    links = resolver()
    assert links.resolve("Event Loop").note_id == A
    assert links.resolve("event LOOP").note_id == A


def test_file_names_and_aliases_resolve_ignoring_case():
    links = resolver()
    assert links.resolve("EVENT-LOOP").note_id == A
    assert links.resolve("event queue").note_id == B
    assert links.resolve("the loop").note_id == A


def test_a_file_name_wins_over_another_notes_title():
    links = LinkResolver.build([(A, "Alpha.md", (), "Beta"), (B, "Beta.md", (), "Gamma")])
    assert links.resolve("Beta").note_id == B


def test_a_title_two_notes_share_is_ambiguous():
    links = LinkResolver.build([(A, "a.md", (), "Same"), (B, "b.md", (), "same")])
    outcome = links.resolve("Same")
    assert outcome.status == "ambiguous" and outcome.candidates == tuple(sorted((A, B)))


def test_a_removed_note_no_longer_resolves_by_title():
    links = resolver()
    links.remove(A)
    assert links.resolve("Event Loop").status == "broken"


def test_the_closest_name_is_suggested_only_when_near_enough():
    names = ["Event Loop", "Event Queue", "Garbage collection"]
    assert closest_name("Evnt Lop", names) == "Event Loop"
    assert closest_name("garbage colection", names) == "Garbage collection"
    assert closest_name("Kubernetes", names) is None


def test_title_file_names_keep_the_title_and_drop_what_no_file_name_may_hold():
    assert title_file_stem("Event Loop") == "Event Loop"
    assert title_file_stem("TCP/IP: a primer?") == "TCP IP a primer"
    assert title_file_stem("C# [draft] #1 | notes") == "C draft 1 notes"
    assert title_file_stem("...hidden") == "hidden"
    assert title_file_stem("CON") == "CON_"
    assert title_file_stem("???") == "Untitled"
    long = title_file_stem("word " * 100)
    assert len(long.encode()) <= 200 and long.endswith("word")


def test_keys_shared_by_several_notes_resolve_again_once_one_of_them_is_gone():
    """Names held by one note are kept as a lone id, by several as a set: both ways round."""
    links = LinkResolver.build(
        [(A, "x/Same.md", ("Both",), "Twin"), (B, "y/same.md", ("both",), "twin")]
    )
    for target in ("same", "Both", "Twin"):
        assert links.resolve(target).status == "ambiguous"
    links.remove(B)
    for target in ("same", "Both", "Twin"):
        assert links.resolve(target).note_id == A
    links.add(B, "y/same.md", ("both",), "twin")
    assert links.resolve("both").candidates == tuple(sorted((A, B)))
    links.remove(A)
    links.remove(B)
    assert links.resolve("same").status == "broken"
    assert links.resolve(A).status == "broken"  # ids are forgotten too


def test_links_in_code_are_ignored_and_cutting_code_out_can_join_brackets():
    assert parse_links("see [[A]] and `[[B]]`\n```\n[[C]]\n```\n[[a|x]] [[D#h]]") == ("A", "a", "D")
    assert parse_links("[`code`[Joined]]") == ("Joined",)  # the span is cut out first
    assert parse_links("no links [here] or [`there`]") == ()
