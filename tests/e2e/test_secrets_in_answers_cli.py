"""A provider that echoes the key in its error body: the key is `***` in the report, the journal, the HTML
page, stdout and stderr (section 12b, "Secrets in answers")."""
from __future__ import annotations

from pathlib import Path

from tests.e2e.hardening import agent_eval, all_runs
from tests.judged_suite import case, judged_suite
from tests.loopback import router, status

AGENT_KEY = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123"
JUDGE_KEY = "judge-secret-7f3a9c"  # no sk- form: redacted because it is a configured key of 8+ chars
OTHER_SK = "sk-someoneelses1234567890abcdef"
TOKEN = "eyJhbGciOiJIUzI1NiJ9.payload.sig"


def echo_401(key: str):
    body = {"error": {"message": f"Incorrect API key provided: {key}. You sent Authorization: Bearer {TOKEN}; "
                                 f"try {OTHER_SK}", "type": "invalid_request_error", "code": "invalid_api_key"}}
    return router(lambda messages: status(401, body))


def test_an_agent_key_echoed_in_a_401_is_never_stored_or_shown(loopback, tmp_path: Path) -> None:
    srv = loopback(echo_401(AGENT_KEY))
    cases_file = judged_suite(tmp_path, [case("plain", None, expect={"contains": "A"})], agent="openai")
    done = agent_eval(tmp_path, "run", "--cases", cases_file, "--model", "m", "-v",
                      secrets=(AGENT_KEY, TOKEN, OTHER_SK), OPENAI_BASE_URL=srv.base_url, OPENAI_API_KEY=AGENT_KEY)
    assert done.code == 2, done.err  # a provider error is the run's infrastructure error
    (run,) = all_runs(done.report)["plain"]
    assert run["status"] == "error"
    assert "Incorrect API key provided: ***" in run["error"] and "Bearer ***" in run["error"], run["error"]
    assert f"({srv.base_url}, model m)" in run["error"]
    assert (tmp_path / "reports" / f"{done.report['run_id']}.html").exists()  # scanned for the key too
    assert (tmp_path / "reports" / f"{done.report['run_id']}.jsonl").exists()


def test_a_judge_key_echoed_in_a_401_is_never_stored_or_shown(loopback, tmp_path: Path) -> None:
    judge = loopback(echo_401(JUDGE_KEY))
    cases_file = judged_suite(tmp_path, [case("judged", "RUBRIC_PASS")])
    done = agent_eval(tmp_path, "run", "--cases", cases_file, "-v", secrets=(JUDGE_KEY, TOKEN, OTHER_SK),
                      AGENT_EVAL_JUDGE_BASE_URL=judge.base_url, AGENT_EVAL_JUDGE_API_KEY=JUDGE_KEY,
                      AGENT_EVAL_JUDGE_MODEL="judge-m")
    assert done.code == 2, done.err
    (run,) = all_runs(done.report)["judged"]
    assert run["error"].startswith("judge error: AuthenticationError") and "provided: ***" in run["error"]


def test_the_placeholder_key_is_no_secret(loopback, tmp_path: Path) -> None:
    srv = loopback(router(lambda messages: status(401, {"error": {"message": "key unused is not valid"}})))
    cases_file = judged_suite(tmp_path, [case("plain", None, expect={"contains": "A"})], agent="openai")
    done = agent_eval(tmp_path, "run", "--cases", cases_file, "--model", "m", OPENAI_BASE_URL=srv.base_url)
    assert done.code == 2
    (run,) = all_runs(done.report)["plain"]
    assert "key unused is not valid" in run["error"]
