"""Rate limits end to end: `agent-eval run` (in-process) against a rate-limited loopback provider.

The provider (tests/ratelimited.py) is a token bucket: past it, each request is answered at once with
429 and a hint of how long to wait. No test asserts a duration (speed lives in bench/rate_limits.py).
"""
from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from tests import cli
from tests.e2e.test_provider_errors_cli import answer, provider_suite
from tests.loopback import router, status
from tests.ratelimited import RateLimitedServer

HANG_GUARD_S = 180


def run_cli(tmp_path: Path, cases: Path, base_url: str, *args: str,
            env_extra: dict[str, str] | None = None) -> tuple[int, dict | None, str]:
    out = tmp_path / "reports"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    env.update(OPENAI_API_KEY="test", OPENAI_BASE_URL=base_url, COLUMNS="200", **(env_extra or {}))
    proc = cli.run_cli("run", "--cases", cases, "--output-dir", out, *args, cwd=Path.cwd(), env=env,
                       timeout=HANG_GUARD_S)
    reports = list(out.glob("*.json"))
    return proc.returncode, orjson.loads(reports[0].read_bytes()) if reports else None, proc.stdout + proc.stderr


def agent_entry(report: dict) -> dict:
    (entry,) = [e for e in report["summary"]["provider"] if e["role"] == "agent"]
    return entry


def test_high_concurrency_under_a_limit_loses_no_run_and_counts_the_servers_429s(tmp_path: Path) -> None:
    cases = provider_suite(tmp_path, [f"c{n:02d}" for n in range(40)])
    # 20 requests a second, burst 2, at --concurrency 40: most first attempts meet a 429 (Retry-After: 1).
    with RateLimitedServer(router(answer), rate=20, burst=2, latency_s=0.01, hint="retry-after") as srv:
        code, report, output = run_cli(tmp_path, cases, srv.base_url, "--concurrency", "40")
        sent_429 = srv.rate_limited
    assert code == 0, output
    assert report["summary"]["runs_errored"] == 0 and report["summary"]["cases_passed"] == 40
    entry = agent_entry(report)
    assert sent_429 > 0
    assert entry["rate_limited"] == sent_429  # what the server sent, counted on our side
    assert entry["requests"] == 80 + sent_429  # two answered completions a case, plus every 429'd attempt
    assert entry["retries"] == sent_429  # nothing else failed: each 429 was retried once
    assert 1 <= entry["min_concurrency"] < 40  # the window shrank
    assert entry["base_url"] == srv.base_url and entry["model"] == "loopback"
    assert "429 x " in output and "concurrency 40 -> " in output  # the terminal's provider line
    waits = [run["trace"]["rate_limit_wait_s"] for case in report["cases"] for run in case["runs"]]
    assert any(w > 0 for w in waits)


def test_a_provider_that_always_says_429_ends_each_run_once_the_budget_is_spent(tmp_path: Path) -> None:
    cases = provider_suite(tmp_path, ["a", "b", "c"])
    with RateLimitedServer(router(answer), hint="always-429") as srv:
        code, report, output = run_cli(tmp_path, cases, srv.base_url, "--retry-budget", "5")
    assert code == 2, output
    errors = [run["error"] for case in report["cases"] for run in case["runs"]]
    assert len(errors) == 3
    for error in errors:
        assert error.startswith("RateLimitError: Error code: 429")
        assert f"({srv.base_url}, model loopback) after " in error
        # Retry-After: 2 is waited 2 s plus up to 1 s each time: a wait is refused once it passes what is left.
        assert "the provider asks to wait 2 s (Retry-After: 2)" in error
        assert "left of --retry-budget 5s" in error
    assert report["settings"]["retry_budget"] == 5.0


def test_insufficient_quota_is_not_retried(tmp_path: Path) -> None:
    cases = provider_suite(tmp_path, ["a"])
    with RateLimitedServer(router(answer), hint="insufficient-quota") as srv:
        code, report, output = run_cli(tmp_path, cases, srv.base_url)
        asked = srv.rate_limited
    assert code == 2, output
    assert asked == 1  # one request, no retry
    (run,) = report["cases"][0]["runs"]
    assert "insufficient_quota" in run["error"] and "not retried" in run["error"]
    assert run["error"].endswith("(the quota is spent, waiting will not help)")


def test_x_should_retry_false_on_a_429_is_not_retried(loopback, tmp_path: Path) -> None:
    cases = provider_suite(tmp_path, ["a"])
    srv = loopback(lambda request, index: status(429, headers={"x-should-retry": "false", "retry-after": "1"}))
    code, report, output = run_cli(tmp_path, cases, srv.base_url)
    assert code == 2 and srv.count == 1, output
    assert report["cases"][0]["runs"][0]["error"].endswith("; not retried: the provider sent x-should-retry: false")


def passed_after(loopback, tmp_path: Path, first: list) -> tuple[dict, dict]:
    """One case under --timeout 1 whose first requests get `first`, then answers: its run (which must
    pass, completed) and the report."""
    cases = provider_suite(tmp_path, ["a"])
    replies = iter(first)
    srv = loopback(lambda request, index: next(replies, None) or answer(request["messages"]))
    code, report, output = run_cli(tmp_path, cases, srv.base_url, "--timeout", "1")
    assert code == 0, output
    (run,) = report["cases"][0]["runs"]
    assert run["status"] == "passed" and run["trace"]["stop_reason"] == "completed"
    return run, report


def test_waiting_for_the_limit_is_not_the_agents_time(loopback, tmp_path: Path) -> None:
    # The first attempt is told to wait 5 s; every later one is answered (the run's own time is tiny).
    run, _ = passed_after(loopback, tmp_path, [status(429, headers={"retry-after": "5"})])
    # It waited 5 s plus up to 1 s of jitter, past --timeout 1, and none of it is the agent's latency.
    assert run["trace"]["rate_limit_wait_s"] >= 5.0
    assert run["trace"]["latency_s"] < 1.0 and run["trace"]["ttfa_s"] < 1.0
    assert all(call["latency_s"] < 1.0 for call in run["trace"]["llm_calls"])


def test_retried_server_errors_are_waiting_too_not_the_agents_time(loopback, tmp_path: Path) -> None:
    # Two server errors, each asking for 2 s, then answers: 4 s of retries against --timeout 1.
    run, report = passed_after(loopback, tmp_path, [status(500, headers={"retry-after": "2"}),
                                                    status(502, headers={"retry-after": "2"})])
    # From the first attempt to the start of the answered one: at least the two 2 s hints.
    assert run["trace"]["rate_limit_wait_s"] >= 4.0
    assert run["trace"]["latency_s"] < 1.0 and run["trace"]["ttfa_s"] < 1.0
    (entry,) = [e for e in report["summary"]["provider"] if e["role"] == "agent"]
    assert entry["retries"] == 2 and entry["rate_limited"] == 0
    # The built-in agent's calls carry what the recording endpoint's do: path, final status, retries.
    assert [(c["path"], c["status"], c["retries"]) for c in run["trace"]["llm_calls"]] == [
        ("/chat/completions", 200, 2), ("/chat/completions", 200, 0)]


def test_a_client_side_rate_limit_keeps_the_providers_429s_near_zero(tmp_path: Path) -> None:
    cases = provider_suite(tmp_path, [f"c{n:02d}" for n in range(30)])
    # The provider allows 20 a second (1200 a minute), burst 5; the client keeps 1080 a minute, burst 1.
    with RateLimitedServer(router(answer), rate=20, burst=5, latency_s=0.01) as srv:
        code, report, output = run_cli(tmp_path, cases, srv.base_url, "--concurrency", "30",
                                       "--rate-limit", "1080")
        sent_429 = srv.rate_limited
    assert code == 0, output
    assert sent_429 <= 1  # of 60 requests: under 2%
    assert report["settings"]["rate_limit"] == "1080"
    assert agent_entry(report)["rate_limited"] == sent_429


def test_the_rate_limit_may_come_from_the_environment_and_the_suite(tmp_path: Path) -> None:
    cases = provider_suite(tmp_path, ["a"])
    suite = orjson.loads(cases.read_bytes())
    suite["suite"]["rate_limit"] = "600:5"
    cases.write_bytes(orjson.dumps(suite))
    with RateLimitedServer(router(answer)) as srv:
        code, report, output = run_cli(tmp_path, cases, srv.base_url)
        assert code == 0, output
        assert report["settings"]["rate_limit"] == "600:5"
        assert report["settings"]["sources"]["rate_limit"] == "suite"
        for old in (tmp_path / "reports").glob("*"):
            old.unlink()
        code, report, output = run_cli(tmp_path, cases, srv.base_url, env_extra={"AGENT_EVAL_RATE_LIMIT": "900"})
        assert code == 0, output
        assert (report["settings"]["rate_limit"], report["settings"]["sources"]["rate_limit"]) == ("900", "env")


@pytest.mark.parametrize(("args", "named"), [
    (["--rate-limit", "0"], "--rate-limit"),
    (["--rate-limit", "abc"], "--rate-limit"),
    (["--rate-limit", "60:0"], "--rate-limit"),
    (["--rate-limit", "60:1.5"], "--rate-limit"),
    (["--rate-limit", "nan"], "--rate-limit"),
    (["--rate-limit", "-5"], "--rate-limit"),
    (["--judge-rate-limit", "inf"], "--judge-rate-limit"),
    (["--retry-budget", "0"], "--retry-budget"),
    (["--retry-budget", "nan"], "--retry-budget"),
])
def test_bad_rate_limit_values_exit_2_naming_the_flag(tmp_path: Path, args: list[str], named: str) -> None:
    cases = provider_suite(tmp_path, ["a"])
    code, report, output = run_cli(tmp_path, cases, "http://127.0.0.1:9/v1", *args)
    assert code == 2 and report is None
    assert named in output and "Traceback" not in output


def test_a_bad_suite_rate_limit_is_exit_2_naming_the_file_and_field(tmp_path: Path) -> None:
    cases = provider_suite(tmp_path, ["a"])
    suite = orjson.loads(cases.read_bytes())
    suite["suite"]["rate_limit"] = "fast"
    cases.write_bytes(orjson.dumps(suite))
    code, report, output = run_cli(tmp_path, cases, "http://127.0.0.1:9/v1")
    assert code == 2 and report is None
    assert "rate_limit" in output and str(cases.name) in output and "Traceback" not in output


def test_an_unlimited_provider_shows_no_rate_limiting(loopback, tmp_path: Path) -> None:
    cases = provider_suite(tmp_path, ["a"])
    srv = loopback(router(answer))
    code, report, _ = run_cli(tmp_path, cases, srv.base_url)
    assert code == 0
    assert report["summary"]["provider"][0]["rate_limited"] == 0
    assert report["cases"][0]["runs"][0]["trace"]["rate_limit_wait_s"] == 0.0


def test_under_workers_no_run_is_lost_and_the_429s_are_counted_across_workers(tmp_path: Path) -> None:
    cases = provider_suite(tmp_path, [f"c{n:02d}" for n in range(30)])
    with RateLimitedServer(router(answer), rate=20, burst=2, latency_s=0.01, hint="retry-after-ms") as srv:
        code, report, output = run_cli(tmp_path, cases, srv.base_url, "--concurrency", "30", "--workers", "2")
        sent_429 = srv.rate_limited
    assert code == 0, output
    assert report["summary"]["runs_errored"] == 0
    entry = agent_entry(report)  # one entry: both workers' figures added up
    assert entry["rate_limited"] == sent_429 and entry["requests"] == 60 + sent_429
    assert 2 <= entry["min_concurrency"] <= 30  # the sum of each worker's smallest window (each at least 1)


def test_a_resumed_run_takes_the_limits_from_its_own_command_line(tmp_path: Path) -> None:
    cases = provider_suite(tmp_path, ["a", "b"])
    with RateLimitedServer(router(answer)) as srv:
        code, report, output = run_cli(tmp_path, cases, srv.base_url, "--rate-limit", "600", "--retry-budget", "30")
        assert code == 0, output
        journal = next((tmp_path / "reports").glob("*.jsonl"))
        run_id = journal.stem
        code, resumed, output = run_cli(tmp_path, cases, srv.base_url, "--resume", run_id, "--rate-limit", "1200:4")
    assert code == 0, output
    assert resumed["settings"]["rate_limit"] == "1200:4" and resumed["settings"]["retry_budget"] == 600.0
    assert report["settings"]["rate_limit"] == "600" and report["settings"]["retry_budget"] == 30.0
