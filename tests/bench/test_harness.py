"""bench/harness.py: lcma settings overridden for one row and put back afterwards."""

from __future__ import annotations

from bench.harness import overridden
from lithos.app import LithosApp


def test_a_row_override_merges_into_the_settings_and_is_undone(app: LithosApp):
    lcma = app.config.lcma
    weights = dict(lcma.scout_weights)
    before = app.retrieval
    with overridden(app, {"scout_weights": {"scout_random": 0.5}, "exploration": {"slots": 2}}):
        assert lcma.scout_weights == {**weights, "scout_random": 0.5}
        assert lcma.exploration.slots == 2 and lcma.exploration.threshold == 0.6
        assert app.retrieval is not before  # retrieval rebuilt under the row's settings
    assert lcma.scout_weights == weights and lcma.exploration.slots == 0
    kept = app.retrieval
    with overridden(app, {}):
        assert app.retrieval is kept  # no overrides: nothing rebuilt
    assert app.retrieval is kept
