"""A report never chooses where anything is sent: `rescore` of a planted report sends nothing, and no key,
to the judge URL written in it; it takes --cases (else says which case file it loads) and resolves the
judge as `run` does; the judge cache is keyed by the endpoint; the report's counts never size work."""
from __future__ import annotations

from pathlib import Path

import orjson

from tests.e2e.hardening import agent_eval
from tests.judged_suite import by_id, case, judge_script, judged_suite

JUDGE_KEY = "judge-key-0123456789"


def judged_report(tmp_path: Path, judge) -> tuple[Path, Path]:
    """A run of one judged case, judged by `judge`; returns (its report, the case file)."""
    cases_file = judged_suite(tmp_path, [case("judged", "RUBRIC_PASS")])
    done = agent_eval(tmp_path, "run", "--cases", cases_file, "--no-html", AGENT_EVAL_JUDGE_BASE_URL=judge.base_url,
                      AGENT_EVAL_JUDGE_API_KEY=JUDGE_KEY, AGENT_EVAL_JUDGE_MODEL="judge-m")
    assert done.code == 0, done.err
    return tmp_path / "reports" / f"{done.report['run_id']}.json", cases_file


def plant(report_path: Path, **settings: object) -> None:
    report = orjson.loads(report_path.read_bytes())
    report["settings"].update(settings)
    report_path.write_bytes(orjson.dumps(report))


def test_rescore_never_sends_to_the_reports_judge_url(loopback, tmp_path: Path) -> None:
    first_judge, planted, honest = loopback(judge_script()), loopback(judge_script()), loopback(judge_script())
    report_path, cases_file = judged_report(tmp_path, first_judge)
    plant(report_path, judge_base_url=planted.base_url, repeat=10**9)
    done = agent_eval(tmp_path, "rescore", report_path, secrets=(JUDGE_KEY,),
                      AGENT_EVAL_JUDGE_BASE_URL=honest.base_url, AGENT_EVAL_JUDGE_API_KEY=JUDGE_KEY,
                      AGENT_EVAL_JUDGE_MODEL="judge-m")
    assert done.code == 0, done.err
    assert planted.count == 0 and planted.request_headers == []
    # the first run's verdict is cached for first_judge's URL; the honest judge's is another key: it is asked
    assert honest.count == 1
    assert done.report["settings"]["judge_base_url"] == honest.base_url
    assert by_id(done.report)["judged"]["status"] == "passed"
    # the report's settings.repeat of 10**9 sized nothing: K is the one run the case holds
    assert done.report["settings"]["repeat"] == 1 and list(done.report["summary"]["pass_hat"]) == ["1"]
    assert f"cases: {cases_file}" in done.err and "--cases" in done.err  # said before it was loaded


def test_a_report_judged_elsewhere_with_the_default_endpoint_here_is_exit_2(loopback, tmp_path: Path) -> None:
    first_judge, planted = loopback(judge_script()), loopback(judge_script())
    report_path, _ = judged_report(tmp_path, first_judge)
    plant(report_path, judge_base_url=planted.base_url)
    done = agent_eval(tmp_path, "rescore", report_path, secrets=("sk-live-key-abcdefghijklmnop",),
                      OPENAI_API_KEY="sk-live-key-abcdefghijklmnop", AGENT_EVAL_JUDGE_MODEL="judge-m")
    assert done.code == 2
    assert f"the report was judged at {planted.base_url}" in done.err and "AGENT_EVAL_JUDGE_BASE_URL" in done.err
    assert planted.count == 0 and first_judge.count == 1  # the run's one verdict; rescore sent nothing


def test_rescore_takes_cases(loopback, tmp_path: Path) -> None:
    judge = loopback(judge_script())
    report_path, _ = judged_report(tmp_path, judge)
    other = judged_suite(tmp_path / "other", [case("judged", "RUBRIC_FAIL")])  # the same id, another rubric
    plant(report_path, judge_base_url="http://127.0.0.1:9/v1")
    done = agent_eval(tmp_path, "rescore", report_path, "--cases", other, AGENT_EVAL_JUDGE_BASE_URL=judge.base_url,
                      AGENT_EVAL_JUDGE_API_KEY=JUDGE_KEY, AGENT_EVAL_JUDGE_MODEL="judge-m")
    assert done.code == 1, done.err  # the other file's rubric fails
    assert done.report["cases_file"] == str(other) and "cases: " not in done.err
    assert by_id(done.report)["judged"]["runs"][0]["judge"]["verdict"] == "FAIL"
