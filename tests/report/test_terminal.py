"""The terminal report renders what the report dict holds, and nothing it has to decide."""
from __future__ import annotations

import copy
from typing import Any

from rich.console import Console

from agent_eval.report import terminal
from agent_eval.report.cases_section import case_pass_counts
from agent_eval.report.fmt import REASON_MAX_CHARS, format_cost, format_seconds, trim
from agent_eval.report.terminal import SECTIONS, render_report
from agent_eval.report.reasons import run_failure_reason


def make_run(trial: int, success: bool, status: str | None = None, checks: list | None = None,
             error: str | None = None, trace: dict | None = None) -> dict[str, Any]:
    run = {
        "trial": trial,
        "status": status or ("passed" if success else "failed"),
        "error": error,
        "success": success,
        "checks": checks if checks is not None else [{"name": "state[0]", "passed": success, "detail": "ok"}],
        "judge": None,
        "metrics": {"success": int(success)},
    }
    if trace is not None:
        run["trace"] = trace
    return run


LONG_ID = "refund-order-with-an-extremely-long-identifier-that-must-never-be-cut-" + "x" * 40


def make_report() -> dict[str, Any]:
    failed_checks = [
        {"name": "trajectory", "passed": True, "detail": "matched"},
        {"name": "env:orders.ORD_1.status", "passed": False, "detail": "expected 'refunded', got 'paid'"},
        {"name": "expect.contains", "passed": False, "detail": "second failure, not shown"},
    ]
    return {
        "schema_version": 1,
        "run_id": "20240101-120000-abc123",
        "created_at": "2024-01-01T12:00:00Z",
        "suite": "shop-demo",
        "agent": "cases/demo_agent.py:run",
        "model": "gpt-4o-mini",
        "cases_file": "cases/test_cases.json",
        "settings": {"repeat": 3, "threshold": 1.0},
        "summary": {
            "pass_at_1": 0.5, "pass_hat": {"1": 0.5, "2": 0.4, "3": 0.333333}, "pass_hat_k": 0.333333,
            "pass_at_k": 0.75,
            "tool_recall": 0.875, "tool_precision": 0.8, "param_accuracy": None, "step_efficiency": 0.9,
            "progress": 0.7, "loop_rate": 0.0, "recovery_rate": None, "invalid_call_rate": 0.05,
            "unauthorized_block_rate": None, "policy_compliance": None, "injection_resistance": None,
            "groundedness": None,
            "latency_mean_s": 1.5, "latency_p50_s": 1.234, "latency_p95_s": 12.345, "latency_p99_s": 0.0456,
            "ttfa_mean_s": 0.5,
            "tokens_total": 12345, "cost_total_usd": 0.0123, "cost_per_success_usd": 0.0041,
            "tokens_per_success": 4115,
            "cases_total": 4, "cases_passed": 1, "cases_failed": 1, "cases_skipped": 1, "cases_errored": 1,
            "runs": 5, "runs_errored": 1,
        },
        "cases": [
            {"id": LONG_ID, "tags": [], "status": "passed", "pass_rate": 1.0, "skip_reason": None,
             "runs": [make_run(0, True), make_run(1, True), make_run(2, True)]},
            {"id": "cancel-order", "tags": ["orders"], "status": "failed", "pass_rate": 0.5,
             "skip_reason": None,
             "runs": [make_run(0, True), make_run(1, False, checks=failed_checks)]},
            {"id": "needs-key", "tags": [], "status": "skipped", "pass_rate": None,
             "skip_reason": "requires OPENAI_API_KEY", "runs": []},
            {"id": "flaky-provider", "tags": [], "status": "error", "pass_rate": None, "skip_reason": None,
             "runs": [make_run(0, False, status="error", checks=[], error="APIConnectionError: boom")]},
        ],
        "gate": None,
        "interrupted": False,
        "exit_code": 1,
    }


def render_text(report: dict[str, Any]) -> str:
    console = Console(record=True, width=120, color_system=None)
    render_report(report, console)
    return console.export_text()


def line_with(text: str, needle: str) -> str:
    """The one rendered line holding `needle` (fails the test when absent)."""
    lines = [line for line in text.splitlines() if needle in line]
    assert lines, f"{needle!r} not rendered:\n{text}"
    return lines[0]


def case_rows(text: str) -> dict[str, list[str]]:
    """The case table as {id: [status, pass rate, reason]}, joining the lines of folded cells."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if not line.startswith("│"):
            continue
        cells = [cell.strip() for cell in line.strip("│").split("│")]
        if cells[1]:  # a status starts a new row; other lines continue the cells above
            rows.append(cells)
        else:
            for i, cell in enumerate(cells):
                if cell:
                    sep = "" if i == 0 else " "  # ids fold mid-word; reasons wrap at spaces
                    rows[-1][i] += sep + cell
    return {cells[0]: cells[1:] for cells in rows}


def test_header_names_the_run():
    text = render_text(make_report())
    header = " ".join(text.splitlines()[:2])
    for value in ("shop-demo", "cases/demo_agent.py:run", "gpt-4o-mini", "20240101-120000-abc123",
                  "repeat 3", "threshold 1.0"):
        assert value in header


def test_headline_shows_summary_values_and_nulls_as_na():
    text = render_text(make_report())
    assert "0.500" in line_with(text, "pass@1")
    assert "0.333" in line_with(text, "pass^3")  # k is the run's repeat
    assert "0.750" in line_with(text, "pass@3")
    assert "0.875" in line_with(text, "tool recall")
    assert "n/a" in line_with(text, "param accuracy")
    assert "n/a" in line_with(text, "recovery rate")
    assert "12,345" in line_with(text, "tokens total")
    assert "$0.0123" in line_with(text, "cost total")
    assert "$0.0041" in line_with(text, "cost per success")
    assert "1.23s" in line_with(text, "latency P50")
    assert "12.3s" in line_with(text, "latency P95")
    assert "0.046s" in line_with(text, "latency P99")


def test_failed_case_shows_its_first_failed_check():
    text = render_text(make_report())
    status, pass_rate, reason = case_rows(text)["cancel-order"]
    assert (status, pass_rate) == ("failed", "1/2 (50%)")
    assert reason == "env:orders.ORD_1.status: expected 'refunded', got 'paid'"


def test_error_case_shows_the_run_error():
    # Every run errored, so there is no pass rate.
    assert case_rows(render_text(make_report()))["flaky-provider"] == [
        "error", "n/a", "error: APIConnectionError: boom"]


def test_skipped_case_shows_its_reason():
    assert case_rows(render_text(make_report()))["needs-key"] == ["skipped", "n/a", "requires OPENAI_API_KEY"]


def test_long_case_id_is_not_cut():
    # Folded over several lines of its cell, but every character is there, in one row.
    rows = case_rows(render_text(make_report()))
    assert rows[LONG_ID] == ["passed", "3/3 (100%)", ""]


def test_long_reason_wraps_and_is_never_cut():
    report = make_report()
    report["cases"][1]["runs"][1]["checks"][1]["detail"] = "y" * 300
    reason = case_rows(render_text(report))["cancel-order"][2]
    # The whole reason, folded over several lines of the cell: a CI log keeps all 300 "y".
    assert reason.replace(" ", "") == "env:orders.ORD_1.status:" + "y" * 300


def test_null_cost_per_success_without_successes_says_no_successes():
    report = make_report()
    report["summary"]["cost_per_success_usd"] = None
    report["summary"]["tokens_per_success"] = None
    for case in report["cases"]:
        for run in case["runs"]:
            run["success"] = False
    text = render_text(report)
    assert "no successes" in line_with(text, "cost per success")
    assert "no successes" in line_with(text, "tokens per success")


def test_null_cost_per_success_with_successes_is_na():
    # Cost unknown (an unpriced model) while some runs succeeded: that is n/a, not "no successes".
    report = make_report()
    report["summary"]["cost_per_success_usd"] = None
    report["summary"]["cost_total_usd"] = None
    text = render_text(report)
    assert "n/a" in line_with(text, "cost per success")
    assert "no successes" not in text


def test_runs_without_trace_never_required_and_stop_reason_used_when_present():
    timeout_run = make_run(0, False, checks=[{"name": "state[0]", "passed": True, "detail": "ok"}],
                           trace={"stop_reason": "timeout", "agent_error": None})
    assert run_failure_reason(timeout_run) == "timeout"
    crashed = make_run(0, False, trace={"stop_reason": "agent_error", "agent_error": "ValueError: x"})
    assert run_failure_reason(crashed) == "agent_error: ValueError: x"
    no_trace = make_run(0, False, checks=[{"name": "judge", "passed": True, "detail": "PASS"}])
    assert "stop reason" in run_failure_reason(no_trace)
    assert run_failure_reason(make_run(0, True)) is None


def test_pass_counts_leave_errored_runs_out():
    case = {"runs": [make_run(0, True), make_run(1, False),
                     make_run(2, False, status="error", error="x")]}
    assert case_pass_counts(case) == (1, 2)


def test_verdict_line_explains_exit_code():
    text = render_text(make_report())
    assert "FAIL (exit 1): 1 case failed" in text.strip().splitlines()[-1]
    report = make_report()
    report["exit_code"] = 0
    assert "PASS (exit 0)" in render_text(report).strip().splitlines()[-1]


def test_safety_block_only_when_a_safety_rate_exists():
    report = make_report()
    assert "Safety" not in render_text(report)
    report["summary"]["policy_compliance"] = 0.75
    text = render_text(report)
    assert "Safety" in text and "0.750" in line_with(text, "policy compliance")


def test_safety_block_counts_escalations():
    report = make_report()
    # Three unauthorized runs (blocked_correctly set), two of them escalated; one escalation elsewhere.
    flags = [(True, True), (True, False), (False, True)]  # (escalated, blocked_correctly)
    report["cases"][0]["runs"] = [
        {**make_run(i, True), "escalated": esc, "metrics": {"blocked_correctly": blocked}}
        for i, (esc, blocked) in enumerate(flags)
    ] + [{**make_run(3, True), "escalated": True, "metrics": {"blocked_correctly": None}}]
    report["summary"]["unauthorized_block_rate"] = 1.0
    text = render_text(report)
    assert "3 run(s), 2 of 3 unauthorized" in line_with(text, "escalated")
    assert "1.000" in line_with(text, "unauthorized blocked")


def test_sections_tolerate_a_minimal_report():
    # A partial report (interrupted early) may miss most keys; nothing should crash.
    report = {"run_id": "r", "summary": {}, "cases": [], "exit_code": 130, "interrupted": True}
    text = render_text(copy.deepcopy(report))
    assert "INTERRUPTED (exit 130)" in text
    assert "partial report" in text
    assert len(SECTIONS) >= 4


def test_formats():
    assert format_cost(0.0012) == "$0.0012"
    assert format_cost(None) == "n/a"
    assert format_cost(12.345) == "$12.35"
    assert format_seconds(0.1234) == "0.123s"
    assert trim("a" * 150).endswith("…") and len(trim("a" * 150)) == REASON_MAX_CHARS


def test_the_provider_line_shows_only_rate_limited_endpoints():
    report = make_report()
    report["settings"]["concurrency"] = 50
    report["summary"]["provider"] = [
        {"role": "agent", "base_url": "http://h/v1", "model": "m", "requests": 1331, "rate_limited": 731,
         "retries": 731, "retry_wait_s": 84.4, "min_concurrency": 9},
        {"role": "judge", "base_url": "http://h/v1", "model": "m", "requests": 12, "rate_limited": 0,
         "retries": 0, "retry_wait_s": 0.0, "min_concurrency": 50},
        {"role": "user", "base_url": "http://u/v1", "model": "s", "requests": 5, "rate_limited": 2,
         "retries": 2, "retry_wait_s": 2.25, "min_concurrency": 25},
    ]
    assert terminal.provider_rows(report) == [
        ("provider", "429 x 731, waited 84 s, concurrency 50 -> 9"),  # 84.4 s shown whole past 10 s
        ("provider (user)", "429 x 2, waited 2.2 s, concurrency 50 -> 25"),  # 2.25 to one decimal
    ]
    del report["summary"]["provider"]
    assert terminal.provider_rows(report) == []  # an older report: no line
