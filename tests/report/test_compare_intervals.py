"""`compare` shows both reports' intervals side by side, pass^k at the k both reports have."""
from __future__ import annotations

import pytest
from rich.console import Console

from agent_eval.report.compare_intervals import interval_table, render_compare_intervals
from agent_eval.score.intervals import counted_cases, pass_hat_interval
from agent_eval.score.metrics import summarize
from tests.builders import make_report

pytestmark = pytest.mark.unit


def scored(outcomes: dict[str, list[bool]], run_id: str) -> dict:
    report = make_report(outcomes, run_id=run_id)
    report["summary"] = summarize(report["cases"], report["settings"]["repeat"])
    return report


def test_side_by_side_with_pass_hat_at_the_common_k():
    base = scored({"a": [True, False, True], "b": [True, True, True], "c": [False, False, True]}, "base")
    new = scored({"a": [True, False], "b": [True, True], "c": [False, True]}, "new")  # K = 2
    rows = dict(interval_table([base, new]))
    assert rows["pass@1"] == [tuple(base["summary"]["ci"]["pass_at_1"]), tuple(new["summary"]["ci"]["pass_at_1"])]
    # K is 3 and 2: pass^2 for both; the base's is computed from its cases at k = 2
    assert "pass^3" not in rows
    assert rows["pass^2"][1] == tuple(new["summary"]["ci"]["pass_hat_k"])
    assert rows["pass^2"][0] == tuple(pass_hat_interval(counted_cases(base["cases"]), 2))
    console = Console(record=True, width=200, color_system=None)
    render_compare_intervals([base, new], ["b.json", "n.json"], console)
    text = console.export_text()
    low, high = base["summary"]["ci"]["pass_at_1"]
    assert f"[{low:.2f}, {high:.2f}]" in text and "pass^2" in text


def test_reports_without_ci_show_nothing():
    base, new = make_report({"a": [True]}), make_report({"a": [False]})
    console = Console(record=True, width=200, color_system=None)
    render_compare_intervals([base, new], ["b", "n"], console)
    assert "intervals" not in console.export_text()
