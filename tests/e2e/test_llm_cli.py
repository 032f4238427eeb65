"""Every LLM call, seen from the command line: the judge's defaults, the placeholder key, the judge
timeout, errors naming their endpoint, retries shown in the log, and secrets never written."""
from __future__ import annotations

from pathlib import Path

from tests.e2e.test_judge_cli import run_suite
from tests.judged_suite import by_id, case, judged_suite
from tests.loopback import router, stall, status, text, tool_calls


def openai_suite(tmp_path: Path, cases: list[dict], **suite: object) -> Path:
    """The judged suite, played by the built-in openai agent instead of its Python agent."""
    return judged_suite(tmp_path, cases, agent="openai", **suite)


def refund_then_answer(messages: list[dict]):
    if messages[-1]["role"] == "tool":
        return text("Order A refunded.")
    if "evaluator" in messages[0].get("content", ""):  # the judge
        return text("PASS\nthe refund is stated")
    return tool_calls([("refund", {"order_id": "A"})])


def test_the_judge_falls_back_to_the_agents_model_and_the_header_says_so(loopback, tmp_path: Path) -> None:
    srv = loopback(router(refund_then_answer))
    cases_file = openai_suite(tmp_path, [case("judged", "RUBRIC_PASS")])
    code, report, out, err = run_suite(tmp_path, cases_file, "--model", "shared-m", "--base-url", srv.base_url,
                                       OPENAI_API_KEY="k")
    assert code == 0, err
    judge_requests = [r for r in srv.requests if "evaluator" in r["messages"][0]["content"]]
    assert len(judge_requests) == 1 and judge_requests[0]["model"] == "shared-m"
    settings = report["settings"]
    assert settings["judge_model"] == "shared-m" and settings["judge_base_url"] == srv.base_url
    assert settings["sources"]["judge_model"] == "agent" and settings["sources"]["judge_base_url"] == "agent"
    assert settings["sources"]["model"] == "flag" and settings["sources"]["repeat"] == "default"
    assert settings["judge_timeout"] == 120
    assert "judge: shared-m (the agent's model; set --judge-model for an independent judge)" in out


def test_sources_name_flag_env_suite_and_default(loopback, tmp_path: Path) -> None:
    srv = loopback(router(refund_then_answer))
    cases_file = openai_suite(tmp_path, [case("judged", "RUBRIC_PASS")], model="suite-m",
                              judge={"model": "judge-suite-m"}, defaults={"repeat": 2})
    code, report, out, err = run_suite(tmp_path, cases_file, "--threshold", "0.5", "--judge-timeout", "30",
                                       OPENAI_API_KEY="k", OPENAI_BASE_URL=srv.base_url)
    assert code == 0, err
    sources = report["settings"]["sources"]
    assert {k: sources[k] for k in ("threshold", "repeat", "model", "base_url", "judge_model", "judge_timeout",
                                    "concurrency", "agent")} == {
        "threshold": "flag", "repeat": "suite", "model": "suite", "base_url": "env",
        "judge_model": "suite", "judge_timeout": "flag", "concurrency": "default", "agent": "suite"}
    assert report["settings"]["judge_timeout"] == 30
    assert "judge: judge-suite-m" in out and "the agent's model" not in out


def test_a_base_url_without_a_key_sends_the_placeholder_key(loopback, tmp_path: Path) -> None:
    srv = loopback(router(refund_then_answer))
    cases_file = openai_suite(tmp_path, [case("judged", "RUBRIC_PASS")])
    code, _, _, err = run_suite(tmp_path, cases_file, "--model", "local-m", "--base-url", srv.base_url)
    assert code == 0, err
    assert {h["authorization"] for h in srv.request_headers} == {"Bearer unused"}  # agent and judge


def test_without_a_base_url_a_missing_key_is_still_exit_2(tmp_path: Path) -> None:
    cases_file = openai_suite(tmp_path, [case("plain", None, expect={"contains": "A"})])
    code, _, _, err = run_suite(tmp_path, cases_file, "--model", "m")
    assert code == 2 and "OPENAI_API_KEY" in err and "Traceback" not in err


def test_a_judge_that_never_answers_is_a_judge_error_after_judge_timeout(loopback, tmp_path: Path) -> None:
    judge = loopback(lambda request, index: stall(None))
    cases_file = judged_suite(tmp_path, [case("judged", "RUBRIC_PASS"), case("plain", None,
                                                                           expect={"contains": "refunded"})])
    code, report, _, err = run_suite(tmp_path, cases_file, "--judge-timeout", "0.5", judge=judge)
    assert code == 2 and "Traceback" not in err
    (run,) = by_id(report)["judged"]["runs"]
    assert run["status"] == "error"
    assert run["error"] == f"judge error: no answer within --judge-timeout 0.5s ({judge.base_url}, model judge-m)"
    assert by_id(report)["plain"]["status"] == "passed"
    assert report["summary"]["judge"]["errors"] == 1


def test_bad_judge_timeouts_are_exit_2(tmp_path: Path) -> None:
    cases_file = judged_suite(tmp_path, [case("plain", None, expect={"contains": "refunded"})])
    for value in ("0", "-3", "nan", "inf"):
        code, _, _, err = run_suite(tmp_path, cases_file, "--judge-timeout", value)
        assert code == 2 and "--judge-timeout must be a positive number" in err and "Traceback" not in err


def test_a_provider_error_names_endpoint_model_and_retries_and_the_log_shows_them(loopback, tmp_path: Path) -> None:
    srv = loopback(lambda request, index: status(503, headers={"retry-after-ms": "1"}))
    cases_file = openai_suite(tmp_path, [case("down", None, expect={"contains": "refunded"})])
    code, report, _, err = run_suite(tmp_path, cases_file, "--model", "m-down", "--base-url", srv.base_url,
                                     OPENAI_API_KEY="k")
    assert code == 2
    (run,) = by_id(report)["down"]["runs"]
    assert run["error"].startswith("InternalServerError: Error code: 503")
    assert run["error"].endswith(f"({srv.base_url}, model m-down) after 8 retries")
    # Not a terminal and not --quiet: the retries are in the log, from the third attempt on, once each.
    shown = [line for line in err.splitlines() if line.startswith("retrying ")]
    assert shown == [f"retrying {srv.base_url} (attempt {n}/8)" for n in range(3, 9)]


def test_secrets_in_the_base_url_are_never_written_or_shown(loopback, tmp_path: Path) -> None:
    srv = loopback(router(refund_then_answer))
    secret = srv.base_url.replace("http://", "http://me:sk-SECRET-1@")
    cases_file = openai_suite(tmp_path, [case("judged", "RUBRIC_PASS")])
    code, report, out, err = run_suite(tmp_path, cases_file, "--model", "m", "--base-url", secret,
                                       OPENAI_API_KEY="sk-KEY-2")
    assert code == 0, err
    shown = srv.base_url.replace("http://", "http://***@")
    assert report["settings"]["base_url"] == shown and report["settings"]["judge_base_url"] == shown
    assert f"endpoint {shown}" in out
    written = [p.read_text(errors="replace") for p in (tmp_path / "reports").iterdir() if p.is_file()]
    assert written and not any("SECRET" in text or "sk-KEY" in text for text in [*written, out, err])
