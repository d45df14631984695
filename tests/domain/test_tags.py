"""Tags follow Obsidian's rules, and inline #tags are found where Obsidian finds them."""

from __future__ import annotations

import pytest

from lithos.domain.tags import clean_tags, display_spelling, inline_tags, note_tags, tag_key
from lithos.errors import InvalidInput


def test_a_leading_hash_is_dropped_and_duplicates_merge():
    assert clean_tags(["#python", "python", "area/sub-topic", "snake_case", "y1984"]) == (
        "python",
        "area/sub-topic",
        "snake_case",
        "y1984",
    )


@pytest.mark.parametrize(
    ("tag", "hint"),
    [
        ("machine learning", '"machine-learning"'),
        ("a,b", '"a-b"'),
        ("c#", '"c"'),
        ("1984", None),
        ("/nested", '"nested"'),
        ("a//b", '"a/b"'),
    ],
)
def test_tags_obsidian_cannot_use_are_refused_with_a_usable_form(tag: str, hint: str | None):
    with pytest.raises(InvalidInput) as refused:
        clean_tags(["fine", tag])
    message = refused.value.message
    assert repr(tag) in message and "cannot be used in Obsidian" in message
    assert (hint in message) if hint else ("write it as" not in message)


BODY = """# Heading is not a tag

Plain #python and #area/sub and #Ünïcode_tag, end of sentence #last.
A URL https://example.org/page#fragment and [[Note#Section]] and [x](#anchor) are not tags.
Numbers #1984 are not tags, escaped \\#nope is not, inline `#code` is not.
## Second heading

```
#fenced is not a tag
```
#python again, and#glued is not.
"""


def test_inline_tags_are_found_as_obsidian_finds_them():
    assert inline_tags(BODY) == ("python", "area/sub", "Ünïcode_tag", "last")


def test_tags_are_found_where_removing_code_or_escapes_leaves_a_space_before_them():
    # Code and "\\#" become spaces before tags are matched: a '#' right after them counts.
    assert inline_tags("see `code`#after") == ("after",)
    assert inline_tags("escaped \\##real") == ("real",)
    assert inline_tags("#first word") == ("first",)
    assert inline_tags("```\n#fenced\n```\n#outside") == ("outside",)


def test_a_body_whose_every_hash_sign_is_inside_a_word_has_no_tags():
    assert inline_tags("page#fragment and x#y, C# and a#1 and [[Note#Part]]") == ()
    assert inline_tags("```\n$x = 1 #comment\n```") == ()


def test_note_tags_are_the_frontmatter_tags_then_new_inline_ones():
    assert note_tags(["#area/sub", "ops"], BODY) == (
        "area/sub",
        "ops",
        "python",
        "Ünïcode_tag",
        "last",
    )


def test_spellings_of_one_tag_share_a_key_and_the_most_used_one_is_shown():
    assert tag_key("Python") == tag_key("PYTHON") == tag_key("python") == "python"
    assert tag_key("Über/Sub") == "über/sub"
    assert clean_tags(["Python", "#python", "ML", "ml", "PYTHON"]) == ("Python", "ML")
    assert display_spelling({"python": 3, "Python": 1}) == "python"
    assert display_spelling({"python": 2, "Python": 2}) == "Python"
