"""The matrix snapshot: the vector store's search matrices copied to one file beside
``vectors.db``, so a start-up reads them in one pass instead of decoding and quantising every
vector held in SQLite (7.6 s at 347,000 chunks).

The file is derived and disposable. It is trusted only when the stamp it records equals the
store's (:class:`Stamp`: the store file's random id and a generation that triggers bump with
every change of a chunk, a vector or a space, by any process), when its format, spaces and
dimensions are the expected ones and when its CRC-32 matches; otherwise it is ignored (stale)
or set aside (damaged) and the matrices are read from SQLite. It is written to a temporary
file that replaces the old one by a rename, so a reader sees the old file or the new one,
never a part; a kill while writing leaves only a temporary file, removed by the next write
(of any process, once its writer is gone).

Layout: ``MAGIC``, the header's length (8 bytes, little-endian), the header (JSON: format,
stamp, whether int8, and per space its id, dimension, row count and sections), the sections'
bytes in that order, then the CRC-32 of everything before it (4 bytes) and ``END``.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from io import BufferedReader
from pathlib import Path
from typing import BinaryIO

from lithos.lazy_numpy import np
from lithos.store.vector_codes import row_vectors
from lithos.store.vector_matrix import HASH_BYTES, MatrixRows, spare_rows

MAGIC = b"LITHOSVM"
END = b"LITHOSVE"
FORMAT = 2  # 2: sign bits word-major


@dataclass(frozen=True)
class Stamp:
    """Which content of a vector store a snapshot holds: the store file's id (new for every
    file made) and its generation."""

    store: str
    generation: int


@dataclass(frozen=True)
class SpaceShape:
    """A searched embedding space: its id and dimension."""

    space_id: str
    dimension: int


class SnapshotDamaged(Exception):
    """The snapshot file is not one this module wrote, or not all of it (torn, truncated,
    changed): set it aside and read the matrices from SQLite."""


def write(
    path: Path, stamp: Stamp, compact: bool, spaces: Sequence[tuple[SpaceShape, MatrixRows]]
) -> Path:
    """Write the snapshot of ``spaces`` to a temporary file beside ``path`` and return it (the
    caller renames it over ``path`` once it knows the matrices did not change meanwhile, or
    removes it). Temporary files left by a killed writer are removed first."""
    for stale in path.parent.glob(f"{path.name}.tmp-*"):
        if not _running(stale.name.rpartition("-")[2]):
            stale.unlink(missing_ok=True)
    described: list[dict[str, object]] = []
    payload: list[list[tuple[str, np.ndarray]]] = []
    for shape, rows in spaces:
        notes = np.frombuffer(json.dumps(rows.notes).encode(), dtype=np.uint8)
        sections = [
            *rows.vectors.sections(rows.size).items(),
            ("note_codes", rows.note_codes),
            ("indexes", rows.indexes),
            ("hashes", rows.hashes),
            ("notes", notes),
        ]
        described.append(
            {
                "id": shape.space_id,
                "dimension": shape.dimension,
                "size": rows.size,
                "sections": [[name, a.dtype.str, list(a.shape)] for name, a in sections],
            }
        )
        payload.append(sections)
    header = {
        "format": FORMAT,
        "store": stamp.store,
        "generation": stamp.generation,
        "compact": compact,
        "spaces": described,
    }
    encoded = json.dumps(header).encode()
    temporary = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    with open(temporary, "wb") as out:
        crc = _put(out, MAGIC + struct.pack("<Q", len(encoded)) + encoded, 0)
        for sections in payload:
            for _, array in sections:
                crc = _put(out, _bytes(np.ascontiguousarray(array)), crc)
        out.write(struct.pack("<I", crc) + END)
    return temporary


def read(
    path: Path, stamp: Stamp, compact: bool, spaces: Sequence[SpaceShape]
) -> dict[str, MatrixRows] | None:
    """The matrices the snapshot at ``path`` holds, by space id, if it holds those of
    ``stamp`` for exactly ``spaces`` (else ``None``: missing or stale). Raises
    :class:`SnapshotDamaged` when the file is damaged."""
    if not path.exists():
        return None
    with open(path, "rb") as source:
        start = source.read(len(MAGIC) + 8)
        if len(start) < len(MAGIC) + 8 or not start.startswith(MAGIC):
            raise SnapshotDamaged("no snapshot header")
        (length,) = struct.unpack("<Q", start[len(MAGIC) :])
        encoded = source.read(min(length, 1 << 30))
        try:
            header = json.loads(encoded)
            wanted = [[s.space_id, s.dimension] for s in spaces]
            held = [[space["id"], space["dimension"]] for space in header["spaces"]]
            current = (
                header["format"] == FORMAT
                and Stamp(header["store"], header["generation"]) == stamp
                and header["compact"] == compact
                and held == wanted
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise SnapshotDamaged(f"unreadable snapshot header: {exc}") from exc
        if not current:
            return None
        crc = zlib.crc32(encoded, zlib.crc32(start))
        matrices = {}
        for space in header["spaces"]:
            rows, crc = _read_space(source, space, compact, crc)
            matrices[space["id"]] = rows
        end = source.read(4 + len(END) + 1)
        if len(end) != 4 + len(END) or end[4:] != END or struct.unpack("<I", end[:4])[0] != crc:
            raise SnapshotDamaged("snapshot checksum does not match")
    return matrices


def _read_space(
    source: BufferedReader, space: dict[str, object], compact: bool, crc: int
) -> tuple[MatrixRows, int]:
    try:
        size, dimension = int(space["size"]), int(space["dimension"])  # type: ignore[call-overload]
        sections = {name: (dtype, tuple(shape)) for name, dtype, shape in space["sections"]}  # type: ignore[attr-defined]
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotDamaged(f"unreadable snapshot space: {exc}") from exc
    vectors = row_vectors(size + spare_rows(size), dimension, compact)
    expected = {
        **vectors.sections(size),
        "note_codes": np.empty(size, dtype=np.int32),
        "indexes": np.empty(size, dtype=np.int32),
        "hashes": np.empty((size, HASH_BYTES), dtype=np.uint8),
    }
    notes_shape = sections.get("notes", ("", ()))[1]
    expected["notes"] = np.empty(notes_shape, dtype=np.uint8)
    if list(sections) != list(expected):
        raise SnapshotDamaged(f"unexpected snapshot sections {list(sections)}")
    for name, target in expected.items():
        if sections[name] != (target.dtype.str, target.shape):
            raise SnapshotDamaged(f"snapshot section {name} is {sections[name]}")
        view = _bytes(target)
        if view and source.readinto(view) != len(view):
            raise SnapshotDamaged("snapshot file is truncated")
        crc = zlib.crc32(view, crc)
    codes = expected["note_codes"]
    try:
        notes = json.loads(expected["notes"].tobytes())
    except ValueError as exc:
        raise SnapshotDamaged(f"unreadable snapshot notes: {exc}") from exc
    if size and (codes.min() < -1 or codes.max() >= len(notes)):
        raise SnapshotDamaged("snapshot rows name notes it does not hold")
    rows = MatrixRows(vectors, size, codes, expected["indexes"], expected["hashes"], notes)
    return rows, crc


def _bytes(array: np.ndarray) -> memoryview:
    """The bytes of a C-contiguous ``array`` (numpy cannot cast an empty one's view)."""
    return array.data.cast("B") if array.size else memoryview(b"")


def _running(pid: str) -> bool:
    """Whether the process ``pid`` (a temporary file's writer) still runs."""
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _put(out: BinaryIO, data: bytes | memoryview, crc: int) -> int:
    out.write(data)
    return zlib.crc32(data, crc)
