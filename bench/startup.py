"""Start-up to the first answered call, Lithos against the bare FastMCP floor, in a short run.

Builds (once, kept with ``--keep``) a data directory of the first N corpus pages with every
index present: the files, the catalog and full-text index from an in-process check, and
**synthetic vectors** (bench/perf.py's random unit vectors: start-up depends on how many
vectors there are, not on what they mean), with the matrix snapshot saved and one server start
to settle. Then it spawns ``lithos serve --transport http`` (with the watcher) and
bench/bare_server.py alternately, ``--rounds`` times each, and reports for each the time from
spawn to a healthy ``/health``, to the answer of the first ``lithos_search`` through a fresh
client, and the server's CPU seconds at that answer (the robust figure on a loaded machine),
with medians and the load average around each start.

    .venv/bin/python bench/startup.py --notes 10000 --keep /tmp/lithos-startup --rounds 5
    .venv/bin/python bench/startup.py --keep DIR --baseline /other/tree/.venv/bin/lithos

``--baseline`` alternates a second ``lithos`` executable (another tree's, e.g. main's) in the
same rounds, for an A/B of a change.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import cache, corpus, machine
from bench.machine import log
from bench.perf import SYNTHETIC, fill_synthetic
from bench.server import Server
from lithos.app import LithosApp
from lithos.config import load_config


def build(data_dir: Path, notes: int) -> None:
    """A data directory of the first ``notes`` pages with every index built and synthetic
    vectors for every chunk; left as it is when it exists already."""
    if (data_dir / ".index").exists():
        log(f"keeping {data_dir}")
        return
    with tempfile.TemporaryDirectory(prefix="lithos-startup-") as tmp:
        pages = corpus.unpack(Path(tmp))[:notes]
        corpus.copy_into(pages, data_dir / "knowledge")
    cache.seed(data_dir, SYNTHETIC)
    log(f"indexing {notes} notes in-process")
    app = LithosApp(load_config(data_dir=data_dir)).open()
    try:
        app.start(watch=False, embed=False)
        fill_synthetic(app)
        app.vectors.save_snapshot()
    finally:
        app.close()
    cache.save(data_dir, SYNTHETIC)
    log("one start to settle")
    with Server(data_dir) as server:
        server.first_call_s()


def one_start(data_dir: Path, kind: str, lithos: Path | None) -> dict[str, Any]:
    before = machine.load_average()[0]
    server = Server(data_dir, watch=True, bare=kind == "bare", lithos=lithos)
    with server:
        first = server.first_call_s()
        cpu = server.cpu_seconds()
        health = server.startup_s
    return {
        "kind": kind,
        "health_s": round(health, 3),
        "first_call_s": round(first, 3),
        "cpu_s": round(cpu, 3),
        "load": [before, machine.load_average()[0]],
    }


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    loads = [load for run in runs for load in run["load"]]
    return {
        key: round(statistics.median(run[key] for run in runs), 3)
        for key in ("health_s", "first_call_s", "cpu_s")
    } | {"runs": len(runs), "load_range": [min(loads), max(loads)]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="data directory to build once and reuse")
    parser.add_argument("--baseline", type=Path, help="another `lithos` executable to alternate")
    parser.add_argument("--no-bare", action="store_true", help="leave the bare floor out")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lithos-startup-data-") as tmp:
        data_dir = args.keep or Path(tmp) / "data"
        build(data_dir, args.notes)
        if args.build_only:
            return 0
        kinds: list[tuple[str, Path | None]] = [("lithos", None)]
        if args.baseline:
            kinds.append(("baseline", args.baseline))
        if not args.no_bare:
            kinds.append(("bare", None))
        runs = []
        for round_ in range(args.rounds):
            for kind, lithos in kinds:
                run = one_start(data_dir, kind, lithos)
                log(f"round {round_ + 1} {json.dumps(run)}")
                runs.append(run)
    result = {
        "notes": args.notes,
        "synthetic_vectors": True,
        "runs": runs,
        "median": {kind: summary([r for r in runs if r["kind"] == kind]) for kind, _ in kinds},
    }
    path = machine.write_result(args.out, "startup", result)
    log(f"wrote {path}")
    print(json.dumps(result["median"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
