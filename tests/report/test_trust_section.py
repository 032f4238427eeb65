"""The terminal shows summary.ci beside the rates and lists the flaky cases after the case table."""
from __future__ import annotations

import pytest
from rich.console import Console

from agent_eval.report.terminal import render_report
from tests.report.test_terminal import line_with, make_report

pytestmark = pytest.mark.unit


def render(report: dict, verbose: bool = False) -> str:
    console = Console(record=True, width=160, color_system=None)
    render_report(report, console, verbose=verbose)
    return console.export_text()


def with_ci(report: dict) -> dict:
    report["summary"]["pass_at_1"] = 0.7
    report["summary"]["ci"] = {"pass_at_1": [0.55, 0.85], "tool_recall": [0.75, 0.9375], "param_accuracy": None,
                               "loop_rate": "bad"}
    return report


def test_pass_at_1_carries_its_interval():
    text = render(with_ci(make_report()))
    assert "0.700 [0.55, 0.85]" in line_with(text, "pass@1")
    assert "95% intervals" not in text  # the others only under -v


def test_verbose_lists_every_interval():
    text = render(with_ci(make_report()), verbose=True)
    section = text.split("95% intervals")[1].split("Cases")[0]
    assert "0.875 [0.75, 0.94]" in line_with(section, "tool recall")
    assert "0.700 [0.55, 0.85]" in line_with(section, "pass@1")
    assert "loop rate" not in section and "param accuracy" not in section  # malformed or null: not shown


def test_a_report_without_ci_shows_the_rate_alone():
    text = render(make_report())
    assert line_with(text, "pass@1").split("pass@1")[1].split()[0] == "0.500"


def test_flaky_cases_are_listed_after_the_case_table():
    report = make_report()
    report["cases"][1]["flaky"] = True  # cancel-order: 1 of 2
    extra = {"id": "[red]x[/red]", "tags": [], "status": "passed", "pass_rate": 2 / 3, "skip_reason": None,
             "flaky": True, "runs": [{"trial": t, "status": "passed" if s else "failed", "success": s}
                                     for t, s in enumerate((True, False, True))]}
    report["cases"].append(extra)
    text = render(report)
    line = line_with(text, "flaky cases")
    assert line.strip() == "2 flaky cases: cancel-order (1/2), [red]x[/red] (2/3)"  # markup stays inert text
    assert text.index("flaky cases") > text.index("Cases")


def test_no_flaky_line_without_flaky_cases():
    assert "flaky" not in render(make_report()).replace("flaky-provider", "")
