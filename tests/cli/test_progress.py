"""The progress bar of long commands: rate and ETA on a terminal, sparse lines in a log."""

from __future__ import annotations

import io

from lithos.cli.progress import ProgressBar


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_terminal_bar_shows_count_rate_and_eta():
    clock, out = Clock(), io.StringIO()
    bar = ProgressBar("files", stream=out, interactive=True, clock=clock)
    clock.now += 10
    bar(250, 1000)
    line = out.getvalue().split("\r")[-1]
    assert "files [" in line and "250/1000" in line and "25%" in line
    assert "25/s" in line and "ETA 0:30" in line


def test_terminal_bar_ends_its_line_on_finish():
    clock, out = Clock(), io.StringIO()
    bar = ProgressBar("files", stream=out, interactive=True, clock=clock)
    bar(1, 2)
    clock.now += 1
    bar(2, 2)
    bar.finish()
    assert out.getvalue().endswith("\n") and "2/2" in out.getvalue()


def test_log_output_is_one_key_value_line_per_interval_and_one_at_the_end():
    clock, out = Clock(), io.StringIO()
    bar = ProgressBar("files", stream=out, interactive=False, every=10, clock=clock)
    for done in range(1, 100):
        clock.now += 0.25  # 99 updates over ~25 s: lines at 10 s and 20 s
        bar(done, 100)
    bar(100, 100)
    bar.finish()
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[0] == "progress task=files done=40 total=100 rate=4.0 eta_s=15"
    assert lines[-1].startswith("progress task=files done=100 total=100 rate=")
