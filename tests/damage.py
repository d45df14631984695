"""Ways to damage a store on disk, as crashes, disks and people do, for the fault tests."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Literal

Damage = Literal["deleted", "truncated", "garbage", "garbage_with_wal"]
DAMAGES: tuple[Damage, ...] = ("deleted", "truncated", "garbage", "garbage_with_wal")


def damage_sqlite(path: Path, how: Damage) -> None:
    """Damage the SQLite file ``path`` (its ``-wal`` and ``-shm`` are left as they are unless
    ``how`` writes a WAL)."""
    if how == "deleted":
        shutil.rmtree(path.parent)
        return
    data = path.read_bytes()
    if how == "truncated":
        # Keep the header and a few pages: SQLite then finds pages it was promised missing.
        path.write_bytes(data[: max(4096, len(data) // 3)])
        if len(data) <= 4096 * 3:
            _scramble_after_header(path)
        return
    path.write_bytes(random.Random(1).randbytes(max(len(data), 8192)))
    if how == "garbage_with_wal":
        Path(f"{path}-wal").write_bytes(random.Random(2).randbytes(65536))


def _scramble_after_header(path: Path) -> None:
    data = bytearray(path.read_bytes())
    rng = random.Random(3)
    for offset in range(100, len(data)):
        data[offset] = rng.randrange(256)
    path.write_bytes(bytes(data))


def damage_tantivy(directory: Path, how: Damage) -> None:
    """Damage a Tantivy index directory (``garbage_with_wal``: garbage in every file)."""
    if how == "deleted":
        shutil.rmtree(directory)
        return
    for path in directory.iterdir():
        if not path.is_file() or path.name.startswith(".tantivy-"):
            continue
        data = path.read_bytes()
        if how == "truncated":
            replace_file(path, data[: len(data) // 2])
        elif how == "garbage" and path.suffix in (".store", ".term", ".idx"):
            replace_file(path, random.Random(path.name).randbytes(len(data)))
        elif how == "garbage_with_wal":
            replace_file(path, random.Random(path.name).randbytes(max(len(data), 64)))


def replace_file(path: Path, data: bytes) -> None:
    """Give ``path`` new content as a new file. Tantivy maps segment files into memory, and a
    test process may still hold a closed index's mapping: shrinking that file in place would
    kill the process with SIGBUS, which a stopped server never meets."""
    temporary = path.with_name(path.name + ".damage")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def block_next_deletes(directory: Path, ahead: int = 400) -> None:
    """Leave ``<segment>.<opstamp>.del`` files for the next opstamps, as a kill -9 during a
    commit does: Tantivy then fails the next commit that deletes with ``FileAlreadyExists``."""
    meta = json.loads((directory / "meta.json").read_text())
    for segment in meta["segments"]:
        segment_id = segment["segment_id"].replace("-", "")
        for opstamp in range(meta["opstamp"], meta["opstamp"] + ahead):
            (directory / f"{segment_id}.{opstamp}.del").write_bytes(b"left by a killed commit")


PANIC_PROBE = """
import sys
from pathlib import Path
import tantivy
from lithos.store.fulltext import build_schema
try:
    tantivy.Index(build_schema(), path=sys.argv[1], reuse=True)
except BaseException as exc:
    print(type(exc).__name__)
else:
    print("opened")
"""


def make_tantivy_panic_on_open(directory: Path) -> bool:
    """Cut the index's ``.idx`` files (then, if that was not enough, its ``.term``, ``.pos``
    and ``.store`` files) to their first 4 bytes, which makes opening it panic (a Rust
    assertion on a damaged segment). Returns whether it got there, probed in a child process
    so the test itself never panics here."""
    env = {**os.environ, "RUST_BACKTRACE": "0"}
    for suffix in (".idx", ".term", ".pos", ".store"):
        for path in directory.iterdir():
            if path.suffix == suffix:
                replace_file(path, path.read_bytes()[:4])
        probe = subprocess.run(
            [sys.executable, "-c", PANIC_PROBE, str(directory)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        if probe.stdout.strip() == "PanicException":
            return True
    return False
