"""A gate that compares nothing fails loudly: `compare` and `run --baseline` exit 2 with "nothing to gate"
and why, never "no regression"; reports of different suites get one warning line (section 12b)."""
from __future__ import annotations

from pathlib import Path

import orjson

from tests.builders import LOOKUP_TOOLS, make_report, write_suite
from tests.e2e.hardening import agent_eval


def write(path: Path, report: dict) -> Path:
    path.write_bytes(orjson.dumps(report))
    return path


def errored(report: dict) -> dict:
    for case in report["cases"]:
        case["status"], case["pass_rate"] = "error", None
        for run in case["runs"]:
            run["status"], run["error"] = "error", "APIConnectionError: Connection error (http://x/v1, model m)"
    return report


def test_all_new_cases_errored_is_nothing_to_gate(tmp_path: Path) -> None:
    base = write(tmp_path / "base.json", make_report({"a": [True] * 3, "b": [True] * 3}))
    new = write(tmp_path / "new.json", errored(make_report({"a": [True] * 3, "b": [True] * 3})))
    for gate in ((), ("--gate", "pass_hat_k")):
        done = agent_eval(tmp_path, "compare", base, new, *gate)
        assert done.code == 2, done.out + done.err
        assert "nothing to gate" in done.err and "none of the 2 shared case(s) is counted" in done.err
        assert "no regression" not in done.out + done.err


def test_reports_sharing_no_case_id_are_nothing_to_gate(tmp_path: Path) -> None:
    base = write(tmp_path / "base.json", make_report({"a": [True], "b": [True]}))
    renamed = write(tmp_path / "new.json", make_report({"a2": [True], "b2": [True]}))
    done = agent_eval(tmp_path, "compare", base, renamed)
    assert done.code == 2
    assert "nothing to gate: the reports share no case id (the base has 2 case(s), the new report 2)" in done.err
    assert "no regression" not in done.out + done.err


def test_one_column_with_nothing_to_gate_fails_the_matrix(tmp_path: Path) -> None:
    base = write(tmp_path / "base.json", make_report({"a": [True] * 3}))
    same = write(tmp_path / "same.json", make_report({"a": [True] * 3}))
    renamed = write(tmp_path / "renamed.json", make_report({"z": [True] * 3}))
    done = agent_eval(tmp_path, "compare", base, same, renamed)
    assert done.code == 2
    assert f"nothing to gate {renamed} against {base}" in done.err and str(same) not in done.err


def test_reports_of_different_suites_get_one_warning_line(tmp_path: Path) -> None:
    base = write(tmp_path / "base.json", make_report({"a": [True] * 3}))
    other = make_report({"a": [True] * 3})
    other["suite"] = "another-suite"
    done = agent_eval(tmp_path, "compare", base, write(tmp_path / "new.json", other))
    assert done.code == 0, done.err
    warnings = [line for line in done.err.splitlines() if "different suites" in line]
    assert len(warnings) == 1 and "another-suite" in warnings[0] and "demo" in warnings[0], done.err
    same = agent_eval(tmp_path, "compare", base, base)
    assert same.code == 0 and "different suites" not in same.err


def test_run_baseline_sharing_no_case_id_exits_2(tmp_path: Path) -> None:
    baseline = write(tmp_path / "baseline.json", make_report({"renamed": [True]}))
    agent = "def agent(task):\n    return 'ok ' + task.call_tool('lookup', key='a')\n"
    cases_file = write_suite(tmp_path, [{"id": "a", "query": "q", "expect": {"contains": "ok"}}],
                             {"name": "demo", "tools": "tools.py", "agent": "agent.py:agent",
                              "initial_env": {"data": {"a": "1"}}},
                             {"tools.py": LOOKUP_TOOLS, "agent.py": agent})
    done = agent_eval(tmp_path, "run", "--cases", cases_file, "--baseline", baseline, "--no-html")
    assert done.code == 2, done.out + done.err
    assert "nothing to gate" in done.err and "share no case id" in done.err
    assert done.report["exit_code"] == 2 and done.report["gate"]["nothing_to_gate"]
    assert "no regression" not in done.out
