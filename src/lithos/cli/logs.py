"""Log files: every `serve` and `reindex` also logs to a rotating file in the data directory.

Log lines go to stderr and to ``DATA_DIR/.lithos/logs/lithos.log`` (rotated at 1 MB, three old
files kept), never to stdout, which the stdio transport reserves for MCP messages.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from logging.handlers import RotatingFileHandler
from pathlib import Path

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
MAX_BYTES = 1_000_000
BACKUPS = 3


def log_file(data_dir: Path) -> Path:
    return data_dir / ".lithos" / "logs" / "lithos.log"


@contextmanager
def file_log(data_dir: Path) -> Iterator[Path]:
    """Copy every log record to the rotating log file while the block runs; yield its path."""
    path = log_file(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = RotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield path
    finally:
        root.removeHandler(handler)
        handler.close()
