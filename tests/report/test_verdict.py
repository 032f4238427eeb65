"""The verdict line names what actually decided the exit code (report/verdict.py)."""
from __future__ import annotations

from agent_eval.report.verdict import verdict_line


def report(code: int, **summary: object) -> dict:
    counts = {"cases_total": 2, "cases_failed": 0, "cases_errored": 0, "cases_skipped": 0, "cases_not_run": 0}
    return {"exit_code": code, "summary": {**counts, **summary}, "cases": [], "gate": None}


def test_a_baseline_with_nothing_to_gate_is_named_never_an_infrastructure_error() -> None:
    r = report(2)
    r["gate"] = {"nothing_to_gate": "the reports share no case id", "regression": False}
    line = verdict_line(r)
    assert line == "ERROR (exit 2): the baseline has nothing to gate: the reports share no case id"
    assert "infrastructure" not in line


def test_every_cause_that_applies_is_named_in_order() -> None:
    assert verdict_line(report(1, cases_failed=2)) == "FAIL (exit 1): 2 cases failed"
    assert verdict_line(report(1, cases_failed=1)) == "FAIL (exit 1): 1 case failed"
    both = report(1, cases_failed=1, cases_errored=1)
    both["gate"] = {"regression": True}
    assert verdict_line(both) == ("FAIL (exit 1): 1 case failed; the baseline gate found a regression; "
                                  "1 case ended in an infrastructure error")
    missed = report(2, cases_errored=2, replay={"hits": 0, "misses": 3, "live": 1})
    assert verdict_line(missed) == "ERROR (exit 2): 2 cases ended in an infrastructure error (2 replay misses)"
    assert verdict_line(report(2, cases_skipped=2)) == "ERROR (exit 2): every selected case was skipped"
    assert verdict_line(report(2, cases_not_run=1)) == "ERROR (exit 2): 1 case not run"
    assert verdict_line(report(0)) == "PASS (exit 0): every selected case passed"
