"""lithos_write latency in-process, and where its time goes.

The first ``--size`` pages of the real corpora (bench/corpus.py) are dropped into a fresh
knowledge directory and indexed by a started app (no embedding worker: the model would share
the two cores with the writes and measure the load, not the write path). Then ``--calls``
creates (real corpus pages, titles made unique) and as many updates of one note are timed
through ``KnowledgeService.write``, the service call behind the ``lithos_write`` tool, two
ways:

- ``background``: as the server runs, full-text commits left to the background committer
  (searchable at once through the overlay);
- ``inline``: each write waits for its own Tantivy commit, as before the committer.

For each, p50/p95/p99 in ms and the median time per write of each step (the durable mark,
the file with its fsyncs, the index updates, the Tantivy commit where inline), plus whether
each written note was found by a full-text search right after its write returned.

    .venv/bin/python bench/write_latency.py                 # 10,000 notes, 60 writes each way
    .venv/bin/python bench/write_latency.py --size 1000 --calls 40
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import corpus, machine
from bench.machine import log
from bench.workload import percentiles
from lithos.app import LithosApp
from lithos.config import load_config
from lithos.services.knowledge import WriteRequest

STEPS = {
    "mark (SQLite)": ("indexer", "begin_write"),
    "file (write + fsyncs)": ("files", "create_many"),
    "file update (write + fsyncs)": ("files", "replace"),
    "indexes (catalog, vectors, stage)": ("indexer", "stage"),
    "full-text commit": ("fulltext", "commit_through"),
}


def timed(app: LithosApp, spent: dict[str, list[float]]) -> Callable[[], None]:
    """Wrap each step's method on the app's objects to add its time to ``spent``."""
    originals = []
    for label, (owner_name, method) in STEPS.items():
        owner = getattr(app, owner_name)
        original = getattr(owner, method)

        def wrapper(*args: Any, _o: Any = original, _l: str = label, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return _o(*args, **kwargs)
            finally:
                spent[_l][-1] += time.perf_counter() - started

        setattr(owner, method, wrapper)
        originals.append((owner, method))
    return lambda: [delattr(owner, method) for owner, method in originals]  # type: ignore[func-returns-value]


def run(app: LithosApp, pages: list[corpus.Page], calls: int, tag: str) -> dict[str, Any]:
    spent: dict[str, list[float]] = defaultdict(list)
    restore = timed(app, spent)
    samples: dict[str, list[float]] = {"create": [], "update": []}
    unfound = 0
    first: dict[str, Any] | None = None

    async def body() -> None:
        nonlocal unfound, first
        for kind in ("create", "update"):
            for i in range(calls):
                page = pages[i % len(pages)]
                title, text = corpus.title_and_body(page)
                word = f"w{tag}{kind}{i}"
                if kind == "create" or first is None:
                    request = WriteRequest(agent="bench", title=f"{title} {word}", content=text)
                else:
                    request = WriteRequest(agent="bench", id=first["id"], content=f"{text} {word}")
                for label in STEPS:
                    spent[label].append(0.0)
                started = time.perf_counter()
                result = await app.knowledge.write(request)
                samples[kind].append(1000 * (time.perf_counter() - started))
                first = first or result
                if [h.id for h in app.fulltext.search(word)] != [result["id"]]:
                    unfound += 1

    asyncio.run(body())
    restore()
    steps = {label: round(1000 * statistics.median(values), 2) for label, values in spent.items()}
    return {
        "create_ms": percentiles(samples["create"]),
        "update_ms": percentiles(samples["update"]),
        "median_step_ms": steps,
        "not_found_right_after": unfound,
        "load": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pages = corpus.unpack(root / "corpus")
        base, extra = pages[: args.size], pages[args.size :] or pages
        data_dir = root / "data"
        corpus.copy_into(base, data_dir / "knowledge")
        config = load_config(data_dir=data_dir, overrides={"server.watch_files": False})
        app = LithosApp(config).open()
        started = time.perf_counter()
        app.start(watch=False, embed=False)
        log(f"indexed {args.size} notes in {time.perf_counter() - started:.1f} s")
        result: dict[str, Any] = {"notes": args.size, "load_before": os.getloadavg()}
        try:
            result["background"] = run(app, extra, args.calls, "b")
            log(f"background: {result['background']}")
            app.committer.stop()  # each write now commits before it returns
            result["inline"] = run(app, extra[args.calls :], args.calls, "i")
            log(f"inline: {result['inline']}")
        finally:
            app.close()
    result["load_after"] = os.getloadavg()
    path = machine.write_result(args.out, "write_latency", result)
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
