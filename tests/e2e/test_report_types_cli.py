"""compare and view refuse a report whose summary, a case's pass_rate or a run's steps has the wrong type:
exit 2 naming the file and the key's path (section 7, "Reading a report")."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.builders import make_report
from tests.e2e.hardening import agent_eval


def damaged(key: str) -> tuple[dict, str]:
    report = make_report({"a": [True], "b": [True]})
    for case in report["cases"]:
        for run in case["runs"]:
            run["trace"] = {"stop_reason": "completed", "steps": [], "llm_calls": []}
    if key == "none":
        return report, ""
    if key == "summary":
        report["summary"] = [1, 2]
        return report, "summary"
    if key == "pass_rate":
        report["cases"][1]["pass_rate"] = "high"
        return report, "cases[1].pass_rate"
    report["cases"][0]["runs"][0]["trace"]["steps"] = "many"
    return report, "cases[0].runs[0].trace.steps"


@pytest.mark.parametrize("key", ["summary", "pass_rate", "steps"])
def test_compare_and_view_refuse_a_key_of_the_wrong_type(tmp_path: Path, key: str) -> None:
    good = tmp_path / "good.json"
    good.write_bytes(orjson.dumps(damaged("none")[0]))
    report, path = damaged(key)
    bad = tmp_path / "bad.json"
    bad.write_bytes(orjson.dumps(report))
    commands = [("view", bad)] + ([("compare", good, bad)] if key != "steps" else [])
    for command in commands:
        done = agent_eval(tmp_path, *command)
        assert done.code == 2, (command, done.out, done.err)
        assert str(bad) in done.err and path in done.err, done.err
