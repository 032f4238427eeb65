"""`history --case-id`: one case's pass rate over the recent runs of its suite."""
from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from agent_eval.commands.history import case_history_main
from agent_eval.report.case_history import case_runs
from agent_eval.report.history import record_run
from tests.report.test_history import make_report

pytestmark = pytest.mark.unit


def with_case(report: dict, case_id: str, status: str, pass_rate: float | None) -> dict:
    report["cases"] = [{"id": case_id, "status": status, "pass_rate": pass_rate, "runs": []},
                       {"id": "other", "status": "passed", "pass_rate": 1.0, "runs": []}]
    return report


def test_one_case_over_the_recent_runs(tmp_path: Path) -> None:
    db = tmp_path / "reports" / "history.sqlite"
    record_run(db, with_case(make_report("r1", "2025-01-01T10:00:00"), "refund", "failed", 1 / 3), None)
    record_run(db, with_case(make_report("r2", "2025-01-02T10:00:00"), "refund", "failed", 2 / 3), None)
    record_run(db, with_case(make_report("r3", "2025-01-03T10:00:00"), "refund", "passed", 1.0), None)
    record_run(db, with_case(make_report("x", "2025-01-04T10:00:00", cases_file="other.json"), "refund",
                             "passed", 0.0), None)  # another suite: not shown
    rows = case_runs(db, "cases/test_cases.json", "refund", last=10)
    assert [(r["run_id"], r["status"], r["pass_rate"]) for r in rows] == [
        ("r1", "failed", pytest.approx(1 / 3)), ("r2", "failed", pytest.approx(2 / 3)), ("r3", "passed", 1.0)]
    assert [r["run_id"] for r in case_runs(db, "cases/test_cases.json", "refund", last=2)] == ["r2", "r3"]
    console = Console(record=True, width=200, color_system=None)
    assert case_history_main("cases/test_cases.json", tmp_path / "reports", "refund", 10, console) == 0
    text = console.export_text()
    assert "history of case refund: 3 run(s)" in text
    assert "0.333" in text and "0.667" in text and "1.000" in text
    assert "▁▃▇" in text  # 1/3, 2/3, 1: lowest, middle, highest


def test_an_unknown_case_or_no_history_says_so(tmp_path: Path) -> None:
    console = Console(record=True, width=200, color_system=None)
    assert case_history_main("cases/test_cases.json", tmp_path, "nope", 10, console) == 0
    assert "holds case 'nope'" in console.export_text()
