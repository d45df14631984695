"""Round-trip frontmatter edits: only the changed keys are written again."""

from __future__ import annotations

from lithos.domain.frontmatter_edit import REMOVE, edit_frontmatter
from lithos.domain.notes import KNOWN_KEYS, split_frontmatter


def test_a_changed_key_is_rewritten_in_place_and_the_rest_is_kept_verbatim():
    text = "---\nzeta: 1\ntags:\n- a\n- b\n# note to self\nalpha: 'quoted'\n---\nbody\n"
    edited = edit_frontmatter(text, {"tags": ["c"]}, KNOWN_KEYS)
    assert edited == "---\nzeta: 1\ntags:\n- c\n# note to self\nalpha: 'quoted'\n---\nbody\n"


def test_a_new_key_goes_after_the_keys_that_precede_it_in_lithos_order():
    text = "---\ntitle: T\nmood: ok\ntags: [x]\n---\nbody\n"
    edited = edit_frontmatter(text, {"id": "i", "updated_at": "u"}, KNOWN_KEYS)
    assert edited == "---\nid: i\ntitle: T\nupdated_at: u\nmood: ok\ntags: [x]\n---\nbody\n"


def test_a_removed_key_disappears_with_its_lines():
    text = "---\naliases:\n  - A\n  - B\nkeep: yes\n---\n"
    assert edit_frontmatter(text, {"aliases": REMOVE}) == "---\nkeep: yes\n---\n"


def test_a_file_without_frontmatter_gets_a_block_above_its_untouched_text():
    assert edit_frontmatter("# Hi\n", {"id": "x"}) == "---\nid: x\n---\n# Hi\n"


def test_windows_line_endings_are_kept():
    text = "---\r\ntitle: T\r\nmood: ok\r\n---\r\nbody\r\n"
    assert (
        edit_frontmatter(text, {"mood": "fine"})
        == "---\r\ntitle: T\r\nmood: fine\r\n---\r\nbody\r\n"
    )


def test_yaml_too_unusual_to_edit_by_line_is_rendered_again_in_the_same_key_order():
    text = "---\nbase: &b {x: 1}\nother: *b\nlast: 2\n---\nbody\n"
    edited = edit_frontmatter(text, {"last": 3})
    meta, body = split_frontmatter(edited)
    assert list(meta) == ["base", "other", "last"] and meta["last"] == 3 and body == "body\n"
