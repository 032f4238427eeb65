"""`rescore` in process: corrected checks, stale envs, judge errors redone, dropped cases, bad reports."""
from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from rich.console import Console

from agent_eval.errors import ConfigError
from agent_eval.commands.rescore import rescore_command
from agent_eval.commands.rescoring import validate_diff_fits
from tests.builders import flags_of
from tests.judged_suite import by_id, case, isolate_judge_env, judge_script, run_in_process, judged_suite


@pytest.fixture
def judge_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    return isolate_judge_env(monkeypatch, tmp_path)


def rescore(report_path: Path, **kw: object) -> tuple[int, dict, str]:
    out = io.StringIO()
    before = set(report_path.parent.glob("*.json"))
    console = Console(file=out, width=250, no_color=True)
    environ = kw.pop("environ", None)
    code = rescore_command(flags_of(report=report_path, **kw), console, console, environ=environ)
    new = sorted(set(report_path.parent.glob("*.json")) - before)
    return code, orjson.loads(new[-1].read_bytes()), out.getvalue()


def first_run(tmp_path: Path, cases: list[dict], **suite: object) -> tuple[Path, dict]:
    cases_file = judged_suite(tmp_path, cases, **suite)
    _, report, _ = run_in_process(tmp_path, cases_file)
    return tmp_path / "reports" / f"{report['run_id']}.json", report


def test_a_corrected_check_flips_the_verdict(loopback, judge_env, tmp_path: Path) -> None:
    judge = loopback(judge_script())
    judge_env(judge)
    wrong = case("fixed", "RUBRIC_PASS", expect={"contains": "Refunded"})  # the reply says "refunded"
    path, report = first_run(tmp_path, [wrong])
    assert report["exit_code"] == 1 and judge.count == 0  # the failed check spared the judge

    judged_suite(tmp_path, [{**wrong, "expect": {"contains": "refunded"}}])
    code, rescored, out = rescore(path)
    assert code == 0 and judge.count == 1
    run = by_id(rescored)["fixed"]["runs"][0]
    assert run["status"] == "passed" and run["judge"]["verdict"] == "PASS"
    assert [c["name"] for c in run["checks"]] == ["expect:contains", "judge"]
    # The trace is the old one, untouched; the new report sits beside the old one.
    assert run["trace"] == by_id(orjson.loads(path.read_bytes()))["fixed"]["runs"][0]["trace"]
    assert rescored["run_id"] != report["run_id"]
    assert rescored["settings"]["rescored_from"] == report["run_id"]
    assert "Rescored report:" in out


def test_a_trace_that_no_longer_fits_the_env_exits_2_naming_the_case(loopback, judge_env,
                                                                      tmp_path: Path) -> None:
    judge_env(loopback(judge_script()))
    path, _ = first_run(tmp_path, [case("stale", None, expect={"contains": "refunded"})])
    judged_suite(tmp_path, [case("stale", None, expect={"contains": "refunded"})],
                initial_env={"orders": {"A": {"status": "shipped"}}})
    with pytest.raises(ConfigError, match=r"case 'stale'.*no longer fits.*orders\.A\.status.*\"delivered\""):
        rescore(path)


def test_a_judge_error_is_asked_again_and_dropped_cases_are_listed(loopback, judge_env,
                                                                   tmp_path: Path) -> None:
    judge = loopback(judge_script())
    judge_env(judge)
    path, report = first_run(tmp_path, [case("flaky", "RUBRIC_GARBAGE"), case("gone", "RUBRIC_PASS")])
    assert by_id(report)["flaky"]["status"] == "error"
    judged_suite(tmp_path, [case("flaky", "RUBRIC_PASS")])  # a clearer rubric this time
    code, rescored, out = rescore(path)
    assert code == 0 and [c["id"] for c in rescored["cases"]] == ["flaky"]
    assert by_id(rescored)["flaky"]["runs"][0]["judge"]["verdict"] == "PASS"
    assert rescored["settings"]["cases_not_in_file"] == ["gone"]
    assert "not rescored: gone" in out


def test_no_judge_rescore_skips_rubric_only_cases(loopback, judge_env, tmp_path: Path) -> None:
    judge = loopback(judge_script())
    judge_env(judge)
    plain = case("plain", None, expect={"contains": "A"})
    path, _ = first_run(tmp_path, [case("judged", "RUBRIC_PASS"), plain])
    calls = judge.count
    code, rescored, _ = rescore(path, no_judge=True)
    assert code == 0 and judge.count == calls
    assert by_id(rescored)["judged"]["skip_reason"] == "judge disabled"
    assert by_id(rescored)["plain"]["status"] == "passed"


def test_rescore_rejects_bad_reports_and_flags(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("not json")
    with pytest.raises(ConfigError, match="is not a JSON report"):
        rescore_command(flags_of(report=tmp_path / "x.json"), Console(file=io.StringIO()), Console())
    (tmp_path / "y.json").write_text('{"schema_version": 1}')
    with pytest.raises(ConfigError, match="no \"cases\" list"):
        rescore_command(flags_of(report=tmp_path / "y.json"), Console(file=io.StringIO()), Console())
    with pytest.raises(ConfigError, match="--judge-repeat must be at least 1"):
        rescore_command(flags_of(report=tmp_path / "y.json", judge_repeat=0), Console(file=io.StringIO()),
                        Console())
    with pytest.raises(ConfigError, match="--no-judge forbids it"):
        rescore_command(flags_of(report=tmp_path / "y.json", judge_repeat=3, no_judge=True),
                        Console(file=io.StringIO()), Console())


@pytest.mark.parametrize("diff, fits", [
    ([{"path": ["a", "b"], "old": 1, "new": 2}], True),
    ([{"path": ["a", "b"], "old": 5, "new": 2}], False),
    ([{"path": ["a", "c"], "new": 3}], True),
    ([{"path": ["a", "b"], "new": 3}], False),  # "added" where the env now has a value
    ([{"path": ["a"], "old": {"b": 1}}], True),
    ([{"path": ["zz"], "old": 1}], False),
    ([{"path": [], "old": {"a": {"b": 1}}, "new": 7}], True),
])
def test_validate_diff_fits(diff: list[dict], fits: bool) -> None:
    env = {"a": {"b": 1}}
    if fits:
        validate_diff_fits("c", env, diff, Path("r.json"))
    else:
        with pytest.raises(ConfigError, match="case 'c'"):
            validate_diff_fits("c", env, diff, Path("r.json"))


def test_rescore_runs_the_suites_current_scorers(loopback, judge_env, tmp_path: Path) -> None:
    judge_env(loopback(judge_script()))
    plain = case("plain", None, expect={"contains": "refunded"})
    path, report = first_run(tmp_path, [plain])
    assert by_id(report)["plain"]["runs"][0]["scorers"] == {}
    (tmp_path / "scorers.py").write_text("def length(output):\n    return len(output)\n")
    judged_suite(tmp_path, [plain], scorers=["scorers.py:length"])
    code, rescored, _ = rescore(path)
    assert code == 0
    assert by_id(rescored)["plain"]["runs"][0]["scorers"] == {"length": {"length": 17}}  # "Order A refunded."
    assert rescored["summary"]["scorers"]["length"]["length"]["mean"] == 17
