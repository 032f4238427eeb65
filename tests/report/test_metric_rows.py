"""A metric is one row: a row added to the table is computed, bootstrapped and gated, and shown where its
fields say (the terminal's block, the page's card, the Markdown headline), with nothing else written."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent_eval.report.gate import compare_reports
from agent_eval.report.markdown import render_markdown
from agent_eval.report.metrics_section import page_rows
from agent_eval.report.terminal import trajectory_rows
from agent_eval.score import metric_registry
from agent_eval.score.metric_registry import SuiteMetric, mean
from agent_eval.score.metrics import summarize
from tests.builders import make_report

CALLS = SuiteMetric("calls_mean", "mean calls", lower_is_better=True, fmt="number", statistic=mean("tool_calls"),
                    interval=True, section="trajectory", in_markdown=True)


@pytest.fixture
def calls_row() -> Iterator[SuiteMetric]:
    metric_registry.SUITE_METRIC_TABLE.append(CALLS)
    metric_registry.SUITE_METRIC_BY_NAME[CALLS.name] = CALLS
    try:
        yield CALLS
    finally:
        metric_registry.SUITE_METRIC_TABLE.remove(CALLS)
        del metric_registry.SUITE_METRIC_BY_NAME[CALLS.name]


def test_a_row_is_computed_gated_and_shown_where_its_fields_say(calls_row: SuiteMetric) -> None:
    report = make_report({"a": [True, True], "b": [False, True]})
    for run, calls in zip((r for c in report["cases"] for r in c["runs"]), (2, 4, 1, 5), strict=True):
        run["metrics"]["tool_calls"] = calls
    report["summary"] = summarize(report["cases"], 2)
    # mean of 2, 4, 1, 5 = 12 / 4 = 3.0; per case a (6, 2 runs), b (6, 2 runs): every resample is 12 / 4 = 3.0
    assert report["summary"]["calls_mean"] == 3.0
    assert report["summary"]["ci"]["calls_mean"] == [3.0, 3.0]
    assert compare_reports(report, report, [("calls_mean", 0.0)])["metrics"][0]["base"] == 3.0
    # The terminal's Trajectory block, after the built-in rows of its section, in its format:
    assert trajectory_rows(report)[-1] == ("mean calls", "3.000")
    # the page's Trajectory card, after invalid-call rate and before the Safety card:
    names = [(row["card"], row["name"]) for row in page_rows(report)]
    at = names.index(("Trajectory", "calls_mean"))
    assert names[at - 1] == ("Trajectory", "invalid_call_rate") and names[at + 1][0] == "Cost & latency"
    # and a headline row of the Markdown summary, in table order: last, after the cost per success
    # (4 runs at $0.001 over 3 successes = $0.00133).
    assert "| cost per success | $0.0013 |\n| mean calls | 3.000 |\n\n" in render_markdown(report)
