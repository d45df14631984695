"""What the LCMA evaluations share (bench/explore_eval.py, concepts_eval.py, analogy_eval.py,
terrace_eval.py; bench/longmemeval.py's rows use :func:`overridden` too): their common options
and result file, a knowledge base open for the length of a run, ``lcma`` settings overridden for
one row, the learned state every row starts from, and the timed retrieval loop. LongMemEval's
questions as one knowledge base are bench/longmemeval.py's :class:`Haystacks`."""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from bench import machine, scifact
from lithos.app import LithosApp
from lithos.domain.retrieval import Retrieval, RetrievalQuery

LIMIT = 10  # what an agent asks for: every LCMA evaluation scores the results shown
WARM_QUERIES = 5


def arguments(doc: str, quick: str) -> argparse.ArgumentParser:
    """A parser with the options every LCMA evaluation takes; ``quick`` says what ``--quick``
    leaves out."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    parser.add_argument("--no-cache", action="store_true", help="embed everything afresh")
    return parser


def finish(args: argparse.Namespace, name: str, result: dict[str, Any]) -> int:
    """Write ``result`` with the machine and its load as ``out/name.json`` (``name-quick``
    for a quick run) and say where."""
    result["load_average"] = machine.load_average()
    path = machine.write_result(args.out, f"{name}-quick" if args.quick else name, result)
    print(f"wrote {path}")
    return 0


@contextmanager
def knowledge_base(
    write: Callable[[Path], object], use_cache: bool, prefix: str = "lithos-lcma-"
) -> Iterator[tuple[LithosApp, dict[str, Any]]]:
    """Lithos over what ``write`` puts into a fresh knowledge directory, indexed and embedded
    (bench/eval.py ``open_indexed``), with its build timings; closed and removed afterwards."""
    from bench.eval import open_indexed  # bench.eval imports concepts_eval, which imports this

    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        app, build = open_indexed(write, Path(tmp), use_cache)
        try:
            yield app, build
        finally:
            app.close()


@contextmanager
def overridden(app: LithosApp, overrides: Mapping[str, Any]) -> Iterator[None]:
    """Retrieval rebuilt under ``overrides`` of ``app.config.lcma`` (a dict merges into a dict
    or a nested settings section), restored afterwards; no overrides change nothing."""
    if not overrides:
        yield
        return
    lcma = app.config.lcma
    saved = {key: getattr(lcma, key) for key in overrides}
    for key, value in overrides.items():
        current = saved[key]
        if isinstance(current, BaseModel):
            value = current.model_copy(update=value)
        elif isinstance(current, dict):
            value = {**current, **value}
        setattr(lcma, key, value)
    app.retrieval = app.build_retrieval()
    try:
        yield
    finally:
        for key, value in saved.items():
            setattr(lcma, key, value)
        app.retrieval = app.build_retrieval()


# What a retrieval changes in stats.db: its receipt and the returned notes' retrieval counts,
# which scout_novelty reads (its rarity term). Restored before each row, so a row does not
# carry what the rows before it retrieved.
ROW_STATE = ("node_stats", "receipts", "receipt_nodes")


def row_state(action: str, conn: sqlite3.Connection) -> None:
    """``save`` the tables of :data:`ROW_STATE` into temporary copies, or ``restore`` them."""
    if action == "save":
        for name in ROW_STATE:
            conn.execute(f"DROP TABLE IF EXISTS temp.saved_{name}")
            conn.execute(f"CREATE TEMP TABLE saved_{name} AS SELECT * FROM main.{name}")
        return
    for name in reversed(ROW_STATE):  # receipt_nodes before the receipts they point to
        conn.execute(f"DELETE FROM main.{name}")
    for name in ROW_STATE:
        conn.execute(f"INSERT INTO main.{name} SELECT * FROM temp.saved_{name}")


def scifact_data(quick: bool) -> scifact.SciFact:
    """SciFact, or the slice a quick run uses (300 abstracts, 20 queries a split)."""
    data = scifact.load()
    return scifact.subset(data, docs=300, queries_per_split=20) if quick else data


def warm(app: LithosApp, requests: Mapping[str, RetrievalQuery]) -> None:
    """Retrieve the first few requests untimed, so the first timed row pays no cold caches."""
    for request in list(requests.values())[:WARM_QUERIES]:
        asyncio.run(app.retrieval.retrieve(request))


def timed(
    app: LithosApp, requests: Mapping[str, RetrievalQuery]
) -> Iterator[tuple[str, Retrieval, float]]:
    """Each request retrieved in turn: its id, what came back and the milliseconds it took."""
    for qid, request in requests.items():
        started = time.perf_counter()
        got = asyncio.run(app.retrieval.retrieve(request))
        yield qid, got, 1000 * (time.perf_counter() - started)
