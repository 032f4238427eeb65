"""Pins: the summary, summary.ci and the gate's numbers on fixed reports, exactly (floats to the last bit).

The expected values are the output of the code before the metric table became data (one row per metric),
kept in tests/fixtures/metric_pins.json; a change of any figure, interval, bootstrap draw or p-value
shows up here. The definitions themselves are tested by hand-computed cases in test_metrics.py,
test_intervals.py and tests/report/test_gate.py.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from agent_eval.report.gate import compare_reports
from agent_eval.score.metric_registry import SUITE_METRIC_TABLE
from agent_eval.score.metrics import summarize
from tests.builders import FIXTURES, make_report, vary_metrics
from tests.score.test_intervals import small_suite

PINS = FIXTURES / "metric_pins.json"


def fixed_report(seed: int, nulls: bool = False) -> dict[str, Any]:
    """30 cases x 3 runs with every per-run metric varied; an errored run, a skipped case, and (nulls) a run
    without a price and one with an invalid token count."""
    rng = np.random.default_rng(seed)
    report = vary_metrics(make_report({f"c{i}": [bool(x) for x in rng.random(3) < 0.6] for i in range(30)}), rng)
    if nulls:
        report["cases"][3]["runs"][0]["metrics"].update(cost_usd=None)
    report["cases"][5]["runs"][2].update(status="error", error="boom")
    report["cases"][6].update(status="skipped", runs=[], skip_reason="needs KEY")
    return report


def current() -> dict[str, Any]:
    """Every pinned number, as the code computes it now."""
    base, new, priceless = fixed_report(7), fixed_report(8), fixed_report(9, nulls=True)
    names = [m.name for m in SUITE_METRIC_TABLE if m.gateable] + ["pass_hat.1", "pass_hat.2"]
    gates = [(name, 0.0) for name in names]
    return orjson.loads(orjson.dumps({
        "summary": {name: summarize(r["cases"], 3) for name, r in
                    (("base", base), ("new", new), ("priceless", priceless))},
        "small_suite": summarize(small_suite(), 3),
        "small_suite_k2": summarize(small_suite(), 2),
        "gate": compare_reports(base, new, gates),
        "gate_priceless": compare_reports(new, priceless, gates),
        "gate_drop": compare_reports(base, new, [("cost_per_success_usd", 0.001), ("latency_p95_s", 0.5)]),
    }, default=float))


def test_figures_intervals_and_gate_are_unchanged() -> None:
    pinned = orjson.loads(PINS.read_bytes())
    now = current()
    for part in pinned:
        assert now[part] == pinned[part], part  # == on floats: the same bits, keys in the same order
        assert orjson.dumps(now[part]) == orjson.dumps(pinned[part]), part


if __name__ == "__main__":  # `python -m tests.score.test_metric_pins` rewrites the pins (an intended change)
    PINS.write_bytes(orjson.dumps(current(), option=orjson.OPT_INDENT_2))
