"""The judge inside `run` (in process, real HTTP to a loopback judge): errors, --no-judge, dedup, config."""
from __future__ import annotations

from pathlib import Path

import pytest

from agent_eval.errors import ConfigError
from tests.judged_suite import by_id, case, isolate_judge_env, judge_script, run_in_process, judged_suite


@pytest.fixture
def judge_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    return isolate_judge_env(monkeypatch, tmp_path)


def test_garbage_from_the_judge_is_an_error_never_a_pass(loopback, judge_env, tmp_path: Path) -> None:
    judge = loopback(judge_script())
    judge_env(judge)
    cases_file = judged_suite(tmp_path, [case("good", "RUBRIC_PASS"), case("garbled", "RUBRIC_GARBAGE")])
    code, report, out = run_in_process(tmp_path, cases_file)
    assert code == 2  # nothing failed, one case errored
    run = by_id(report)["garbled"]["runs"][0]
    assert run["status"] == "error" and run["success"] is False and run["judge"] is None
    assert run["error"] == ("judge error: the answer does not start with PASS or FAIL: "
                            "'I am not sure about this one.'")
    assert report["summary"]["judge"]["errors"] == 1 and report["summary"]["cases_errored"] == 1
    assert "error: judge error" in out


def test_a_judge_fail_beats_an_error_for_the_exit_code(loopback, judge_env, tmp_path: Path) -> None:
    judge = loopback(judge_script())
    judge_env(judge)
    cases_file = judged_suite(tmp_path, [case("bad", "RUBRIC_FAIL"), case("garbled", "RUBRIC_GARBAGE")])
    code, report, out = run_in_process(tmp_path, cases_file)
    assert code == 1 and by_id(report)["bad"]["status"] == "failed"
    assert "judge: the amount is missing" in out


def test_no_judge_makes_no_call_and_skips_rubric_only_cases(loopback, judge_env, tmp_path: Path) -> None:
    judge = loopback(judge_script())
    judge_env(judge)
    cases_file = judged_suite(tmp_path, [case("only-rubric", "RUBRIC_FAIL"),
                                        case("both", "RUBRIC_FAIL", expect={"contains": "refunded"})])
    code, report, _ = run_in_process(tmp_path, cases_file, no_judge=True)
    assert code == 0 and judge.count == 0
    cases = by_id(report)
    assert cases["only-rubric"]["status"] == "skipped"
    assert cases["only-rubric"]["skip_reason"] == "judge disabled"
    assert cases["both"]["status"] == "passed" and cases["both"]["runs"][0]["judge"] is None
    assert report["summary"]["judge"]["calls"] == 0 and report["settings"]["judge"] is False


def test_identical_runs_ask_the_judge_once(loopback, judge_env, tmp_path: Path) -> None:
    judge = loopback(judge_script(), latency_s=0.05)
    judge_env(judge)
    cases_file = judged_suite(tmp_path, [case("good", "RUBRIC_PASS")])
    code, report, out = run_in_process(tmp_path, cases_file, repeat=3, no_cache=True)
    assert code == 0 and judge.count == 1
    assert report["summary"]["judge"]["calls"] == 1 and report["summary"]["judge"]["cache_hits"] == 2
    assert [r["judge"]["verdict"] for r in by_id(report)["good"]["runs"]] == ["PASS"] * 3
    assert "judge judge-m: 1 calls, 2 cache hits, 1,020 tokens" in out


def test_the_judge_model_flag_and_the_suite_block(loopback, judge_env, monkeypatch, tmp_path: Path) -> None:
    judge = loopback(judge_script())
    judge_env(judge)
    monkeypatch.delenv("AGENT_EVAL_JUDGE_MODEL")
    cases_file = judged_suite(tmp_path, [case("good", "RUBRIC_PASS")], judge={"model": "from-suite"})
    run_in_process(tmp_path, cases_file)
    run_in_process(tmp_path, cases_file, judge_model="from-flag")
    assert [r["model"] for r in judge.requests] == ["from-suite", "from-flag"]


def test_the_judge_falls_back_to_the_agents_endpoint_and_key(loopback, judge_env, monkeypatch,
                                                              tmp_path: Path) -> None:
    judge = loopback(judge_script())
    monkeypatch.setenv("OPENAI_BASE_URL", judge.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "shared-key")
    cases_file = judged_suite(tmp_path, [case("good", "RUBRIC_PASS")])
    code, report, _ = run_in_process(tmp_path, cases_file, judge_model="m")
    assert code == 0 and judge.count == 1
    assert judge.request_headers[0]["authorization"] == "Bearer shared-key"
    assert report["settings"]["judge_base_url"] == judge.base_url


def test_missing_judge_settings_are_configuration_errors(judge_env, tmp_path: Path) -> None:
    cases_file = judged_suite(tmp_path, [case("needs-judge", "RUBRIC_PASS"), case("plain", None,
                                                                                expect={"contains": "A"})])
    with pytest.raises(ConfigError, match=r"case 'needs-judge' .*AGENT_EVAL_JUDGE_MODEL.*--no-judge"):
        run_in_process(tmp_path, cases_file)
    with pytest.raises(ConfigError, match=r"case 'needs-judge' .*AGENT_EVAL_JUDGE_API_KEY"):
        run_in_process(tmp_path, cases_file, judge_model="m")
    # A rubric case left out by --filter needs no judge.
    code, _, _ = run_in_process(tmp_path, cases_file, filter=["plain"])
    assert code == 0


def test_no_cache_bypasses_the_disk_cache(loopback, judge_env, tmp_path: Path) -> None:
    judge = loopback(judge_script())
    judge_env(judge)
    cases_file = judged_suite(tmp_path, [case("good", "RUBRIC_PASS")])
    run_in_process(tmp_path, cases_file)
    assert any((tmp_path / "cache" / "agent-eval" / "judge").rglob("*.json"))
    run_in_process(tmp_path, cases_file)
    assert judge.count == 1
    _, report, _ = run_in_process(tmp_path, cases_file, no_cache=True)
    assert judge.count == 2 and report["settings"]["no_cache"] is True
    assert report["summary"]["judge"]["calls"] == 1 and report["summary"]["judge"]["cache_hits"] == 0


def test_a_resumed_run_reports_the_judge_calls_of_every_process(loopback, judge_env, tmp_path: Path) -> None:
    judge = loopback(judge_script())
    judge_env(judge)
    cases_file = judged_suite(tmp_path, [case("one", "RUBRIC_PASS"), case("two", "RUBRIC_PASS")])
    code, report, _ = run_in_process(tmp_path, cases_file, no_cache=True)
    assert code == 0 and report["summary"]["judge"]["calls"] == 2
    # Pretend the first process stopped after its first run: keep the header and one run line.
    journal = tmp_path / "reports" / f"{report['run_id']}.jsonl"
    journal.write_bytes(b"".join(journal.read_bytes().splitlines(keepends=True)[:2]))
    (tmp_path / "reports" / f"{report['run_id']}.json").unlink()
    code, resumed, _ = run_in_process(tmp_path, cases_file, resume=report["run_id"])
    # 2 calls by the first process (its usage line survives the cut) + 1 for the run resumed now.
    assert code == 0 and judge.count == 3
    assert resumed["summary"]["judge"]["calls"] == 3
    assert resumed["summary"]["judge"]["prompt_tokens"] == 3 * 1000
