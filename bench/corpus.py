"""The two real Markdown corpora of ../shared/data, unpacked read-only into a temporary place.

- ``powershell-docs.tar.gz``: 3,112 PowerShell reference pages, YAML frontmatter without ``id``;
- ``tldr-pages-en.tar.gz``: 7,425 tldr pages, no frontmatter.

:func:`pages` returns them in one deterministic, well-mixed order (sorted by a hash of the
path), so the first ``n`` pages are a stable sample in which both corpora keep their share, and
a smaller benchmark size is always a prefix of a larger one (which keeps the vector cache warm).
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if not DATA.exists():
    DATA = Path("/work/shared/data")
ARCHIVES = {
    "powershell": ("powershell-docs.tar.gz", "reference"),
    "tldr": ("tldr-pages-en.tar.gz", "pages"),
}


@dataclass(frozen=True)
class Page:
    source: str  # "powershell" or "tldr"
    path: str  # relative path inside knowledge/, e.g. "tldr/linux/tar.md"
    file: Path  # the unpacked file

    @property
    def text(self) -> str:
        return self.file.read_text(encoding="utf-8")


def unpack(into: Path) -> list[Page]:
    """Unpack both archives under ``into`` and return every page in the mixed order."""
    pages = []
    for source, (archive, top) in ARCHIVES.items():
        target = into / source
        with tarfile.open(DATA / archive) as tar:
            tar.extractall(target, filter="data")
        for file in (target / top).rglob("*.md"):
            relative = file.relative_to(target / top).as_posix()
            pages.append(Page(source, f"{source}/{relative}", file))
    return sorted(pages, key=lambda page: hashlib.sha1(page.path.encode()).hexdigest())


def copy_into(pages: list[Page], knowledge: Path) -> None:
    """Drop ``pages`` into a knowledge directory as existing files, as a user would."""
    for page in pages:
        target = knowledge / page.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(page.file, target)


def title_and_body(page: Page) -> tuple[str, str]:
    """The title and Markdown body an agent would pass to lithos_write for this page."""
    text = page.text
    title = Path(page.path).stem
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end > 0:
            for line in text[4:end].splitlines():
                if line.startswith("title:"):
                    title = line.split(":", 1)[1].strip().strip("'\"") or title
            text = text[end + 4 :].lstrip("\n")
    elif text.startswith("# "):
        title = text.splitlines()[0][2:].strip() or title
    return title, text
