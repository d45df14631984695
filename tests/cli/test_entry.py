"""The ``lithos`` command's entry point keeps the garbage collector off while it imports its
modules and turns it on again before any work: before ``serve`` checks the indexes and
serves, and before every other command runs. In processes of their own, since the collector
is process-wide."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SERVE = """
import asyncio, gc, sys
import lithos.app
import lithos.mcp.server

seen = {}
start = lithos.app.LithosApp.start

def recording_start(self, *args, **kwargs):
    seen["start"] = gc.isenabled()
    return start(self, *args, **kwargs)

async def serve(app, settings):
    seen["serve"] = gc.isenabled()
    seen["frozen"] = gc.get_freeze_count()

lithos.app.LithosApp.start = recording_start
lithos.mcp.server.serve = serve
from lithos.cli.entry import main

code = main(["--data-dir", sys.argv[1], "serve", "--no-watch"])
print(code, seen["start"], seen["serve"], seen["frozen"] > 10000)
"""

STATS = """
import gc, sys
from lithos.cli.entry import main
import lithos.cli.main

seen = {}
stats = lithos.cli.main._stats

def recording_stats(config, args):
    seen["stats"] = gc.isenabled()
    return stats(config, args)

lithos.cli.main._stats = recording_stats
code = main(["--data-dir", sys.argv[1], "stats", "--json"])
print(code, seen["stats"], gc.isenabled())
"""

PAUSE = """
import gc
from lithos.runtime import pause_collection, resume_collection

pause_collection()
paused = gc.isenabled()
resume_collection()
resumed, frozen = gc.isenabled(), gc.get_freeze_count()
gc.disable()  # someone else's choice: neither a pause nor its end changes it
pause_collection()
resume_collection()
print(paused, resumed, frozen > 1000, gc.isenabled())
"""


def _run(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_serve_turns_the_collector_on_before_checking_the_indexes_and_serving(data_dir: Path):
    # A new data dir: start() fills the catalog before serving, with the collector on.
    assert _run(SERVE, str(data_dir)) == "0 True True True"


def test_other_commands_run_with_the_collector_on(data_dir: Path):
    data_dir.mkdir()
    assert _run(STATS, str(data_dir)) == "0 True True"


def test_a_pause_ends_with_the_collector_on_and_leaves_one_it_did_not_make_off():
    assert _run(PAUSE) == "False True True False"
