"""Provider trouble: the SDK's retries absorb a flaky provider; what is left is an `error`.

`agent-eval run` runs (in-process) with the built-in `openai` agent against the loopback server. Every
retried answer carries `retry-after-ms`, which the SDK honours before its own 0.5 s-and-doubling backoff,
so eight retries take milliseconds.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import orjson

from tests.loopback import router, status, text, tool_calls
from tests import cli
from tests.builders import write_suite

HANG_GUARD_S = 120  # a generous bound so that a hang fails the test instead of stalling the suite

TOOLS = '''
from agent_eval import tool


@tool
def lookup(key: str, env: dict) -> str:
    """Read one record."""
    return env["records"][key]
'''


def provider_suite(folder: Path, case_ids: list[str]) -> Path:
    records = {cid: f"value-of-{cid}" for cid in case_ids}
    cases = [{"id": cid, "query": f"What is {cid}?", "expect": {"contains": f"value-of-{cid}"}}
             for cid in case_ids]
    block = {"name": "provider", "tools": "tools.py", "agent": "openai", "model": "loopback",
             "initial_env": {"records": records}}
    return write_suite(folder, cases, block, {"tools.py": TOOLS})


def answer(messages: list[dict]):
    """Look the asked key up, then repeat the tool's result as the answer."""
    if messages[-1]["role"] == "tool":
        return text(f"It is {messages[-1]['content']}.")
    key = re.search(r"What is (\S+)\?", messages[-1]["content"]).group(1)
    return tool_calls([("lookup", {"key": key})])


def run_cli(tmp_path: Path, cases: Path, base_url: str, *args: str) -> tuple[int, dict, str]:
    out = tmp_path / "reports"
    env = {**os.environ, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": base_url}
    env.pop("AGENT_EVAL_MODEL", None)
    proc = cli.run_cli("run", "--cases", cases, "--output-dir", out, "--quiet", *args, cwd=Path.cwd(), env=env,
                       timeout=HANG_GUARD_S)
    (report,) = out.glob("*.json")
    return proc.returncode, orjson.loads(report.read_bytes()), proc.stderr


def by_id(report: dict) -> dict[str, dict]:
    return {c["id"]: c for c in report["cases"]}


def test_a_flaky_provider_429_every_7th_and_500_every_11th_passes_all_200_cases(loopback, tmp_path):
    srv = loopback(router(answer), fail_every={7: 429, 11: 500})  # each with retry-after-ms: 5
    cases = provider_suite(tmp_path, [f"c{n:03d}" for n in range(200)])
    code, report, err = run_cli(tmp_path, cases, srv.base_url)
    assert code == 0, err
    assert report["summary"]["cases_passed"] == 200 and report["summary"]["runs_errored"] == 0
    statuses = srv.statuses
    assert statuses.count(200) == 400  # two completions per case, whatever failed in between
    assert statuses.count(429) > 0 and statuses.count(500) > 0
    assert not srv.errors


def test_a_provider_still_failing_after_the_retries_is_an_error_left_out_of_the_figures(loopback, tmp_path):
    def pick(messages: list[dict]):
        if "down" in messages[-1]["content"]:
            return status(500, headers={"retry-after-ms": "1"})
        return answer(messages)

    srv = loopback(router(pick))
    cases = provider_suite(tmp_path, ["ok-1", "down", "ok-2"])
    code, report, err = run_cli(tmp_path, cases, srv.base_url)
    assert code == 2 and "Traceback" not in err
    down = by_id(report)["down"]
    assert down["status"] == "error" and down["pass_rate"] is None
    (run,) = down["runs"]
    assert run["status"] == "error" and run["success"] is False and "InternalServerError" in run["error"]
    assert run["trace"]["stop_reason"] == "completed"  # not the agent's fault: no failure recorded
    summary = report["summary"]
    assert summary["runs_errored"] == 1 and summary["runs"] == 2 and summary["cases_errored"] == 1
    assert summary["pass_at_1"] == 1.0 and summary["cases_passed"] == 2
    down_requests = [r for r in srv.requests if "down" in r["messages"][-1]["content"]]
    assert len(down_requests) == 1 + 8  # the first try and the SDK's eight retries


def test_a_failed_case_beats_an_errored_one_for_the_exit_code(loopback, tmp_path):
    def pick(messages: list[dict]):
        if "down" in messages[-1]["content"]:
            return status(503, headers={"retry-after-ms": "1"})
        if messages[-1]["role"] == "tool" and "wrong" in messages[0]["content"]:
            return text("I could not find it.")
        return answer(messages)

    srv = loopback(router(pick))
    cases = provider_suite(tmp_path, ["ok", "down", "wrong"])
    code, report, _ = run_cli(tmp_path, cases, srv.base_url)
    assert code == 1
    assert {k: v["status"] for k, v in by_id(report).items()} == {"ok": "passed", "down": "error",
                                                                  "wrong": "failed"}


def test_a_400_is_not_retried_and_ends_the_run_in_error(loopback, tmp_path):
    srv = loopback([status(400)])
    cases = provider_suite(tmp_path, ["bad-request"])
    code, report, _ = run_cli(tmp_path, cases, srv.base_url)
    assert code == 2
    (run,) = by_id(report)["bad-request"]["runs"]
    assert run["status"] == "error" and "BadRequestError" in run["error"]
    assert srv.count == 1
