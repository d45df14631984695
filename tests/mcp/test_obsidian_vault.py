"""A third-party Obsidian vault reader (obsidiantools) sees the links and tags Lithos reports.

The vault mixes notes written through the tools with files written by hand. obsidiantools
matches link names to file names exactly and reads inline tags with a loose pattern, so the
vault sticks to what both read the same way: links in the linked note's own case, and inline
tags followed by white space.
"""

from __future__ import annotations

from pathlib import Path

import obsidiantools.api as otools
from fastmcp import Client

from lithos.app import LithosApp
from tests.support import call

WRITTEN = [
    {
        "title": "Event Loop",
        "content": "The loop that runs #asyncio tasks\n\nSee [[Coroutines]] and [[Missing Note]]\n",
        "tags": ["python"],
    },
    {
        "title": "Coroutines",
        "content": "Functions that pause, run by the [[Event Loop|loop]] #python/async\n\n"
        "Unrelated: [[Shopping list]]\n",
    },
    {
        "title": "Garden",
        "path": "home",
        "content": "Planting #tomatoes today\n\n```\n#notatag [[Not A Link]]\n```\n",
        "tags": ["outdoors"],
    },
]
BY_HAND = {
    "Shopping list.md": "# Shopping\n\n- apples #groceries\n- #Python snacks\n"
    "- for the [[Garden]]\n",
    "journal/Diary.md": "---\ntags: [journal]\nmood: fine\n---\n"
    "Read about the [[Event Loop#Details]] and [[Coroutines]] and [[Nowhere]]\n",
}


async def build_vault(client: Client, app: LithosApp) -> None:
    for note in WRITTEN:
        made = await call(client, "lithos_write", agent="writer", **note)
        assert made["status"] == "created", made
    for relative, text in BY_HAND.items():
        target = app.files.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    app.reconcile()


def obsidian_view(root: Path) -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, set]]:
    """Per note path: the paths its links reach, its unresolved link names, its tags."""
    vault = otools.Vault(root).connect(show_nested_tags=True)
    files = {name: path.as_posix() for name, path in vault.md_file_index.items()}
    links: dict[str, set[str]] = {}
    broken: dict[str, set[str]] = {}
    tags: dict[str, set] = {}
    for name, path in files.items():
        names = set(vault.wikilinks_index[name])
        links[path] = {files[n] for n in names if n in files}
        broken[path] = {n for n in names if n not in files}
        front = vault.front_matter_index[name].get("tags") or []
        tags[path] = set(front) | set(vault.tags_index[name])
    return links, broken, tags


async def lithos_view(
    client: Client,
) -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, set]]:
    listed = await call(client, "lithos_list", limit=100)
    links: dict[str, set[str]] = {}
    broken: dict[str, set[str]] = {}
    tags: dict[str, set] = {}
    for item in listed["items"]:
        outgoing = await call(client, "lithos_links", id=item["id"], direction="outgoing")
        links[item["path"]] = {n["path"] for n in outgoing["outgoing"]}
        read = await call(client, "lithos_read", id=item["id"])
        broken[item["path"]] = {
            link["target"] for link in read["links"] if link["status"] == "broken"
        }
        tags[item["path"]] = set(item["tags"])
    return links, broken, tags


async def test_obsidiantools_sees_the_links_and_tags_lithos_reports(client: Client, app: LithosApp):
    await build_vault(client, app)
    obsidian_links, obsidian_broken, obsidian_tags = obsidian_view(app.files.root)
    lithos_links, lithos_broken, lithos_tags = await lithos_view(client)
    assert (
        set(lithos_links)
        == set(obsidian_links)
        == {
            "Event Loop.md",
            "Coroutines.md",
            "home/Garden.md",
            "Shopping list.md",
            "journal/Diary.md",
        }
    )
    assert lithos_links == obsidian_links
    assert lithos_links["journal/Diary.md"] == {"Event Loop.md", "Coroutines.md"}
    assert lithos_broken == obsidian_broken
    assert lithos_broken["Event Loop.md"] == {"Missing Note"}
    assert lithos_tags == obsidian_tags
    assert lithos_tags["home/Garden.md"] == {"outdoors", "tomatoes"}
    counts = (await call(client, "lithos_tags"))["tags"]
    assert counts == {
        "asyncio": 1,
        "groceries": 1,
        "journal": 1,
        "outdoors": 1,
        "Python": 2,  # python (Event Loop) and #Python (Shopping list): one tag, as in Obsidian
        "python/async": 1,
        "tomatoes": 1,
    }
    # obsidiantools keeps each spelling apart; Obsidian's tag pane, like lithos_tags, does not.
    obsidian_counts: dict[str, int] = {}
    for note_tags in obsidian_tags.values():
        for key in {tag.lower() for tag in note_tags}:
            obsidian_counts[key] = obsidian_counts.get(key, 0) + 1
    assert {tag.lower(): n for tag, n in counts.items()} == obsidian_counts
