"""List every installed distribution of this environment with its size on disk.

Run it with the Python of a fresh environment that has only Lithos installed
(``python -m venv /tmp/v && /tmp/v/bin/pip install . && /tmp/v/bin/python
scripts/dependency_sizes.py``) to see the run-time tree that docs/dependencies.md describes.
Sizes are the sum of the files each distribution's RECORD lists.
"""

from __future__ import annotations

import re
from importlib.metadata import Distribution, distributions

SKIP = {"pip", "setuptools", "wheel"}


def size_of(dist: Distribution) -> int:
    total = 0
    for file in dist.files or []:
        path = dist.locate_file(file)
        if path.is_file():  # type: ignore[union-attr]
            total += path.stat().st_size  # type: ignore[union-attr]
    return total


def main() -> None:
    rows = []
    for dist in distributions():
        name = dist.metadata["Name"]
        if name.lower() in SKIP:
            continue
        requires = [
            re.split(r"[ ;<>=!~\[(]", req, maxsplit=1)[0]
            for req in dist.requires or []
            if "extra ==" not in req
        ]
        rows.append((size_of(dist), name, dist.version, requires))
    rows.sort(reverse=True)
    for size, name, release, requires in rows:
        print(f"{size / 1e6:8.1f} MB  {name}=={release}  <- requires: {', '.join(requires) or '-'}")
    print(f"{len(rows)} distributions, {sum(row[0] for row in rows) / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
