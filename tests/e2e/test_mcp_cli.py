"""MCP tool servers (docs/mcp.md): `agent-eval run` (in-process) against real stdio and HTTP servers.

The server is tests/fixtures/mcp/bank_server.py. Each test gives its server a unique tag argument, so
that it can count the server processes still alive (in /proc) once the command has returned: in-process
that is the run's own cleanup, without the exiting process's reaper behind it. Ctrl-C is sent to a
subprocess, whose exit is under test.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import orjson
import pytest

from tests import cli
from tests.builders import write_suite
from tests.hostile import http_mcp_server, live_pids

pytest.importorskip("mcp")

CLI = str(Path(sys.executable).parent / "agent-eval")
SERVER = Path(__file__).resolve().parent.parent / "fixtures" / "mcp" / "bank_server.py"
ENV = {"accounts": {"alice": 100, "bob": 20}, "log": []}
HANG_GUARD_S = 120

# Makes the calls listed in the case's metadata, in order; a tool error becomes part of the answer.
AGENT = '''
import time


async def agent(task):
    outs = []
    for name, args in task.metadata.get("calls", []):
        try:
            outs.append(await task.acall_tool(name, **args))
        except Exception as exc:
            outs.append(f"ERR {exc}")
    return " | ".join(outs)


def sync_agent(task):
    outs = []
    for name, args in task.metadata.get("calls", []):
        try:
            outs.append(task.call_tool(name, **args))
        except Exception as exc:
            outs.append(f"ERR {exc}")
    time.sleep(float(task.metadata.get("sleep", 0)))
    return " | ".join(outs)


def schemas(task):
    return ",".join(sorted(s["function"]["name"] for s in task.tool_schemas))
'''


def bank_suite(folder: Path, cases: list[dict], name: str | None = None, url: str | None = None,
                **suite: object) -> tuple[Path, str]:
    """A suite of `cases` using one bank server with a state resource: per_run stdio, or shared at `url`."""
    tag = f"tag-{uuid.uuid4().hex}"
    entry: dict = {"url": url} if url else {"command": ["python", str(SERVER), tag]}
    entry.update({"state_resource": "state://env"}, **({"name": name} if name else {}))
    block = {"name": "bank", "tools": [{"mcp": entry}], "agent": "agent.py:agent", "initial_env": ENV, **suite}
    return write_suite(folder, cases, block, {"agent.py": AGENT}), tag


def run_cli(cases: Path, out: Path, *args: str, env: dict | None = None) -> cli.CliResult:
    return cli.run_cli("run", "--cases", cases, "--output-dir", out, "--no-html", *args, cwd=Path.cwd(),
                       timeout=HANG_GUARD_S, env={**os.environ, **(env or {})})


def report_of(out: Path) -> dict:
    return orjson.loads(max(out.glob("*.json"), key=lambda p: p.stat().st_mtime).read_bytes())


def runs_of(report: dict) -> dict[str, list[dict]]:
    return {c["id"]: c["runs"] for c in report["cases"]}


def call(name: str, **args: object) -> list:
    return [name, args]


def test_state_checks_tool_errors_faults_and_isolation(tmp_path: Path) -> None:
    cases = [
        {"id": "deposit", "query": "pay alice", "metadata": {"calls": [call("deposit", account="alice", amount=5)]},
         "expected_env_check": {"path": ["accounts", "alice"], "equals": 105},
         "expected_env": {"accounts": {"alice": 105, "bob": 20}, "log": [["deposit", "alice", 5]]}},
        # The case's own initial_env reaches its per-run server through AGENT_EVAL_ENV_FILE.
        {"id": "own-env", "query": "pay alice", "initial_env": {"accounts": {"alice": 1}},
         "metadata": {"calls": [call("deposit", account="alice", amount=5)]},
         "expected_env_check": {"path": ["accounts", "alice"], "equals": 6}},
        # isError is a tool error: recorded on the step and shown to the agent; nothing changes.
        {"id": "refused", "query": "take 50 from bob",
         "metadata": {"calls": [call("withdraw", account="bob", amount=50)]},
         "expect": {"contains": "insufficient funds in bob"},
         "expected_env_check": {"path": ["accounts", "bob"], "equals": 20}},
        # The first deposit is failed by agent-eval without reaching the server; the retry executes.
        {"id": "fault", "query": "pay bob", "faults": [{"tool": "deposit", "fail_times": 1}],
         "metadata": {"calls": [call("deposit", account="bob", amount=1), call("deposit", account="bob", amount=1)]},
         "expected_env_check": {"path": ["accounts", "bob"], "equals": 21}},
        # A failing state check: bob is not touched, so 99 is wrong.
        {"id": "wrong", "query": "nothing", "metadata": {"calls": [call("balance", account="bob")]},
         "expected_env_check": {"path": ["accounts", "bob"], "equals": 99}},
    ]
    path, tag = bank_suite(tmp_path / "suite", cases)
    out = tmp_path / "out"
    done = run_cli(path, out, "-k", "3", "--concurrency", "6")
    assert done.returncode == 1, done.stderr  # `wrong` failed, nothing errored
    report = report_of(out)
    runs = runs_of(report)
    status = {c["id"]: c["status"] for c in report["cases"]}
    assert status == {"deposit": "passed", "own-env": "passed", "refused": "passed", "fault": "passed",
                      "wrong": "failed"}
    # Isolation: each of the 3 concurrent runs saw a fresh server, so each deposit starts from 100.
    for run in runs["deposit"]:
        assert run["trace"]["final_env_diff"] == [
            {"path": ["accounts", "alice"], "old": 100, "new": 105},
            {"path": ["log"], "old": [], "new": [["deposit", "alice", 5]]}]
        assert run["trace"]["state_resource"] == "state://env"
    step = runs["refused"][0]["trace"]["steps"][0]
    assert step["output"] is None and "insufficient funds in bob" in step["error"]
    assert [s["error"] for s in runs["fault"][0]["trace"]["steps"]] == [
        "ServiceUnavailable: 503 Service Unavailable", None]
    # 15 runs, 12 passed: pass@1 averages the per-case pass rates (1, 1, 1, 1, 0) / 5 = 0.8.
    assert report["summary"]["runs"] == 15
    assert report["summary"]["pass_at_1"] == pytest.approx(0.8)
    assert live_pids(tag) == []


def test_observations_and_argument_validation(tmp_path: Path) -> None:
    cases = [{"id": "obs", "query": "show", "expect": {"contains": "total"}, "metadata": {"calls": [
        call("report"), call("logo"), call("deposit", account="bob", amount="ten")]}}]
    path, tag = bank_suite(tmp_path / "suite", cases)
    out = tmp_path / "out"
    done = run_cli(path, out)
    assert done.returncode == 0, done.stdout + done.stderr
    steps = runs_of(report_of(out))["obs"][0]["trace"]["steps"]
    assert steps[0]["output"] == '{"total":120,"accounts":2}'  # structured content only: compact JSON
    assert steps[1]["output"] == "<image/png, 1234 bytes>"  # 4 + 1230 bytes of PNG
    # The schema from tools/list says integer: recorded, and the call still went to the server.
    assert steps[2]["invalid_args"] == "args.amount: 'ten' is not of type 'integer'"
    assert steps[2]["error"] is not None
    assert live_pids(tag) == []


def test_crashing_server_is_an_error_naming_it(tmp_path: Path) -> None:
    cases = [{"id": "crash", "query": "x", "expect": {"contains": "bob"},
              "metadata": {"calls": [call("bank__deposit", account="bob", amount=1), call("bank__crash")]}},
             {"id": "fine", "query": "x", "expect": {"contains": "bob"},
              "metadata": {"calls": [call("bank__balance", account="bob")]}}]
    path, tag = bank_suite(tmp_path / "suite", cases, name="bank")
    out = tmp_path / "out"
    done = run_cli(path, out)
    assert done.returncode == 2, done.stdout + done.stderr
    runs = runs_of(report_of(out))
    assert runs["crash"][0]["status"] == "error"
    assert runs["crash"][0]["error"] == "MCP server bank exited during tools/call crash"
    assert runs["fine"][0]["status"] == "passed"
    assert live_pids(tag) == []


def test_hanging_server_is_an_error_within_the_timeout(tmp_path: Path) -> None:
    cases = [{"id": "hang", "query": "x", "expect": {"contains": "late"}, "metadata": {"calls": [call("hang")]}}]
    path, tag = bank_suite(tmp_path / "suite", cases)
    out = tmp_path / "out"
    done = run_cli(path, out, "--timeout", "2")
    assert done.returncode == 2, done.stdout + done.stderr
    run = runs_of(report_of(out))["hang"][0]
    assert run["status"] == "error"
    assert run["error"] == f"MCP server {SERVER} did not answer within --timeout 2s"
    assert run["trace"]["agent_error"] is None  # the server's fault, not the agent's
    assert live_pids(tag) == []


def test_server_that_fails_to_start_for_a_run(tmp_path: Path) -> None:
    cases = [{"id": "bad-env", "query": "x", "initial_env": {"fail_start": True}, "expect": {"contains": "x"}},
             {"id": "ok", "query": "x", "expect": {"contains": "alice"},
              "metadata": {"calls": [call("balance", account="alice")]}}]
    path, tag = bank_suite(tmp_path / "suite", cases)
    out = tmp_path / "out"
    done = run_cli(path, out)
    assert done.returncode == 2
    runs = runs_of(report_of(out))
    assert runs["bad-env"][0]["status"] == "error"
    assert runs["bad-env"][0]["error"].startswith(f"MCP server {SERVER} failed to start")
    assert "this env says fail_start" in runs["bad-env"][0]["error"]  # the tail of its stderr
    assert runs["ok"][0]["status"] == "passed"
    assert live_pids(tag) == []


def test_sync_python_agent_and_tool_schemas(tmp_path: Path) -> None:
    cases = [{"id": "sync", "query": "x", "metadata": {"calls": [call("bank__deposit", account="bob", amount=2)]},
              "expected_env_check": {"path": ["accounts", "bob"], "equals": 22}},
             {"id": "schemas", "query": "x", "expect": {"contains": "bank__balance,bank__crash,bank__deposit"}}]
    path, tag = bank_suite(tmp_path / "suite", cases, name="bank")
    out = tmp_path / "out"
    assert run_cli(path, out, "--filter", "sync", "--agent", f"{path.parent / 'agent.py'}:sync_agent").returncode == 0
    assert run_cli(path, out, "--filter", "schemas", "--agent", f"{path.parent / 'agent.py'}:schemas").returncode == 0
    assert live_pids(tag) == []


def test_openai_agent_sees_mcp_tools_as_functions(tmp_path: Path, loopback) -> None:
    from tests.loopback import tool_then_text

    srv = loopback(tool_then_text("bank__deposit", {"account": "alice", "amount": 7}, "Deposited."))
    cases = [{"id": "llm", "query": "put 7 into alice", "expected_tools": [{"name": "bank__deposit"}],
              "trajectory": "strict", "expected_env_check": {"path": ["accounts", "alice"], "equals": 107}}]
    path, tag = bank_suite(tmp_path / "suite", cases, name="bank")
    out = tmp_path / "out"
    done = run_cli(path, out, "--agent", "openai", "--model", "m", "--base-url", srv.base_url,
                   env={"OPENAI_API_KEY": "test"})
    assert done.returncode == 0, done.stdout + done.stderr
    functions = {t["function"]["name"]: t["function"] for t in srv.requests[0]["tools"]}
    assert functions["bank__deposit"]["parameters"]["required"] == ["account", "amount"]
    assert live_pids(tag) == []


@pytest.fixture
def http_server():
    with http_mcp_server(SERVER, "--http", "{port}") as url:
        yield url


def test_shared_http_server_keeps_its_state_across_runs(tmp_path: Path, http_server: str) -> None:
    cases = [{"id": "pay", "query": "x", "metadata": {"calls": [call("bank__deposit", account="alice", amount=5)]},
              "expected_env_check": {"path": ["accounts", "alice"], "gte": 105}}]
    path, _ = bank_suite(tmp_path / "suite", cases, name="bank", url=http_server)
    out = tmp_path / "out"
    done = run_cli(path, out, "-k", "2", "--concurrency", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning" not in done.stderr
    diffs = [r["trace"]["final_env_diff"][0] for r in runs_of(report_of(out))["pay"]]
    # One server for both runs: the second starts where the first ended.
    assert sorted((d["old"], d["new"]) for d in diffs) == [(100, 105), (105, 110)]
    done = run_cli(path, out, "-k", "2", "--concurrency", "2")
    assert "can see each other's writes" in done.stderr


def test_ctrl_c_leaves_no_server_behind(tmp_path: Path) -> None:
    cases = [{"id": f"slow-{n}", "query": "x", "expect": {"contains": "bob"},
              "metadata": {"calls": [call("balance", account="bob")], "sleep": 30}} for n in range(8)]
    path, tag = bank_suite(tmp_path / "suite", cases)
    out = tmp_path / "out"
    proc = subprocess.Popen([CLI, "run", "--cases", str(path), "--output-dir", str(out), "--no-html", "--quiet",
                             "--concurrency", "4", "--agent", f"{path.parent / 'agent.py'}:sync_agent"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + HANG_GUARD_S
    while len(live_pids(tag)) < 4:  # the runs' servers, and the next run's, are up
        assert time.monotonic() < deadline and proc.poll() is None, "the servers never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=HANG_GUARD_S) == 130
    assert live_pids(tag) == []


def test_rescore_keeps_env_checks_from_a_state_resource(tmp_path: Path) -> None:
    cases = [{"id": "pay", "query": "x", "metadata": {"calls": [call("deposit", account="alice", amount=5)]},
              "expected_env_check": {"path": ["accounts", "alice"], "equals": 105}, "expect": {"contains": "alice"}}]
    path, tag = bank_suite(tmp_path / "suite", cases)
    out = tmp_path / "out"
    assert run_cli(path, out).returncode == 0
    first = max(out.glob("*.json"), key=lambda p: p.stat().st_mtime)
    # The case file changes: a new initial env (which the old diff no longer fits) and a stricter expect.
    data = orjson.loads(path.read_bytes())
    data["suite"]["initial_env"] = {"accounts": {"alice": 1}, "log": []}
    data["cases"][0]["expect"] = {"contains": "nobody"}
    path.write_bytes(orjson.dumps(data))
    done = cli.run_cli("rescore", first, "--no-judge", cwd=Path.cwd(), env=dict(os.environ), timeout=HANG_GUARD_S)
    assert done.returncode == 1, done.stdout + done.stderr
    rescored = orjson.loads(max(out.glob("*.json"), key=lambda p: p.stat().st_mtime).read_bytes())
    checks = {c["name"]: c["passed"] for c in rescored["cases"][0]["runs"][0]["checks"]}
    assert checks == {"env:accounts.alice:equals": True, "expect:contains": False}
    assert live_pids(tag) == []


def test_example_suite_numbers(tmp_path: Path) -> None:
    cases = Path(__file__).resolve().parents[2] / "cases" / "mcp_cases.json"
    done = run_cli(cases, tmp_path, "--no-judge")
    assert done.returncode == 1, done.stdout + done.stderr
    report = report_of(tmp_path)
    assert {c["id"]: c["status"] for c in report["cases"]} == {
        "mcp-refund-delivered": "passed",  # the injected 503 on get_order is retried once
        "mcp-cancel-shipped": "passed",
        "mcp-refund-two-orders": "failed",  # the demo agent refunds the first order only
    }
    failed = {c["name"]: c["passed"] for c in report["cases"][2]["runs"][0]["checks"]}
    assert failed == {"env:orders.ORD_1005.status:equals": True, "env:orders.ORD_1006.status:equals": False}
