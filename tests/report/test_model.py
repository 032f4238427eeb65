"""The report model: one schema version, one builder, one loader whose shape checks name the bad key."""
from __future__ import annotations

import copy
from pathlib import Path

import orjson
import pytest

from agent_eval.report.model import ReportError, build_report, exit_code, load_report
from agent_eval.report.shapes import COMPARE_SHAPE, RESCORE_SHAPE, VIEW_SHAPE, shape_problem
from tests.builders import make_report


def write(tmp_path: Path, name: str, report: dict) -> Path:
    path = tmp_path / name
    path.write_bytes(orjson.dumps(report))
    return path


def test_shape_problem_names_the_path_of_the_first_bad_key() -> None:
    report = make_report({"a": [True], "b": [True, False]})
    assert shape_problem(report, COMPARE_SHAPE, "") is None
    bad = copy.deepcopy(report)
    bad["cases"][1]["runs"][0]["metrics"] = "fast"
    assert shape_problem(bad, COMPARE_SHAPE, "") == "cases[1].runs[0].metrics must be an object, found a string"
    bad = copy.deepcopy(report)
    bad["settings"]["repeat"] = True  # a bool is not a count
    assert shape_problem(bad, COMPARE_SHAPE, "") == "settings.repeat must be a whole number, found true/false"
    bad = copy.deepcopy(report)
    del bad["cases"][0]["id"]
    assert shape_problem(bad, COMPARE_SHAPE, "") == "cases[0].id is missing"


def test_missing_keys_read_as_null_and_unknown_keys_are_ignored(tmp_path: Path) -> None:
    report = make_report({"a": [True]})
    for key in ("settings", "summary", "gate", "run_id"):
        del report[key]
    del report["cases"][0]["runs"][0]["scorers"]
    report["added_by_a_later_version"] = {"x": 1}
    report["cases"][0]["runs"][0]["trace"] = "not read by compare"
    assert load_report(write(tmp_path, "r.json", report))["cases"][0]["id"] == "a"
    with pytest.raises(ReportError, match=r"r\.json: cases\[0\]\.runs\[0\]\.trace must be an object"):
        load_report(tmp_path / "r.json", VIEW_SHAPE)


def test_rescore_needs_each_runs_trace(tmp_path: Path) -> None:
    report = make_report({"a": [True]})
    report["cases_file"] = "cases.json"
    with pytest.raises(ReportError, match=r"cases\[0\]\.runs\[0\]\.trace is missing"):
        load_report(write(tmp_path, "r.json", report), RESCORE_SHAPE)


def test_build_report_has_every_key_in_file_order_and_the_cases_exit_code() -> None:
    cases = [{"id": "a", "status": "passed"}, {"id": "b", "status": "failed"}]
    report = build_report(run_id="r", created_at="t", suite="s", agent="x", model=None, cases_file="c.json",
                          settings={}, summary={}, cases=cases, interrupted=False)
    assert list(report) == ["schema_version", "run_id", "created_at", "suite", "agent", "model", "cases_file",
                            "settings", "summary", "cases", "gate", "interrupted", "stopped_early", "stopped_at_budget",
                            "exit_code"]
    assert report["schema_version"] == 1 and report["exit_code"] == 1
    assert exit_code([{"status": "skipped"}]) == 2 and exit_code([]) == 0
    assert exit_code([{"status": "passed"}], regression=True) == 1


def test_the_metric_registry_is_the_one_list_of_suite_metrics() -> None:
    from agent_eval.report import gate, gate_stats, history
    from agent_eval.score.metric_registry import DEFAULT_GATES, SUITE_METRIC_TABLE
    from agent_eval.score.metrics import SUITE_METRICS, suite_figures

    names = [m.name for m in SUITE_METRIC_TABLE]
    assert names == list(suite_figures()) == SUITE_METRICS  # every figure computed, in report order
    assert set(gate_stats.gate_metrics()) == set(names) - {"pass_hat"}  # every number can be gated
    assert set(history.METRIC_COLUMNS) == set(names) - {"pass_hat"}
    assert DEFAULT_GATES == ["pass_at_1", "pass_hat_k", "param_accuracy", "tool_recall", "tool_precision"]
    assert [n for n in names if n != "pass_hat" and gate.metric_direction(n) == "lower"] == [
        "loop_rate", "invalid_call_rate", "latency_mean_s", "latency_p50_s", "latency_p95_s", "latency_p99_s",
        "ttfa_mean_s", "tokens_total", "cost_total_usd", "cost_per_success_usd", "tokens_per_success", "turns_mean"]
