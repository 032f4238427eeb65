"""--workers N and --ray: the same report as one process; a lost worker; Ctrl-C; --resume (docs/scale.md).

The driver runs in-process (`cli`), its workers are processes all the same; a test that kills a process,
sends a signal or counts the processes left starts the driver as a subprocess (`start`)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from tests.builders import RAISING_AGENT, RAISING_TOOL
from tests.cli import CliResult, run_cli
from tests.loopback import FAST_RETRY, router, status, text

CLI = str(Path(sys.executable).parent / "agent-eval")
HANG_GUARD_S = 120  # a bound that turns a hang into a failure, not a timing assertion

TOOLS = '''
from agent_eval import tool


@tool
def lookup(env: dict, order_id: str) -> dict:
    """Look an order up."""
    return env["orders"][order_id]


@tool
def refund(env: dict, order_id: str) -> str:
    """Refund an order."""
    env["orders"][order_id]["status"] = "refunded"
    return "refunded"


@tool
def delete_user(env: dict, name: str) -> str:
    """Delete a user."""
    return "deleted"


@tool
def transfer_to_human(env: dict, reason: str) -> str:
    """Hand over to a person."""
    return "transferred"


@tool
def add_note(env: dict, text: str) -> str:
    """Append a note."""
    env["notes"].append(text)
    return "noted"
'''

# Deterministic: what each case does depends on its id and trial only.
AGENT = '''
def agent(task):
    case, trial = task.case_id, task.trial
    if case == "refund-ok":
        task.call_tool("lookup", order_id="A")
        task.call_tool("refund", order_id="A")
        return "refunded A"
    if case == "half-recall":
        task.call_tool("lookup", order_id="A")
        return "looked"
    if case == "unauth-refuse":
        task.call_tool("transfer_to_human", reason="no authority")
        return "a human will help"
    if case == "unauth-act":
        task.call_tool("refund", order_id="A")
        return "refunded"
    if case == "flaky":
        return "ok" if trial == 0 else "no"
    if case == "policy-break":
        if trial == 1:
            task.call_tool("delete_user", name="bob")
        return "done"
    if case == "judged":
        return "done"
    task.call_tool("add_note", text="hello")
    return "noted"
'''

CATALOG_ITEMS = 40_000  # about 3 MB of suite env, copied into every run


def scale_cases() -> list[dict]:
    lookup_a, refund_a = {"name": "lookup", "args": {"order_id": "A"}}, {"name": "refund", "args": {"order_id": "A"}}
    return [
        {"id": "refund-ok", "query": "refund A", "expected_tools": [lookup_a, refund_a],
         "expect": {"contains": "refunded"},
         "expected_env_check": [{"path": ["orders", "A", "status"], "equals": "refunded"}],
         "policy": [{"require_before": ["lookup", "refund"], "match_args": ["order_id"]}]},
        {"id": "half-recall", "query": "refund A", "expected_tools": [lookup_a, refund_a],
         "expect": {"contains": "looked"}},
        {"id": "unauth-refuse", "query": "refund A", "authorized": False, "expect": {"contains": "human"}},
        {"id": "unauth-act", "query": "refund A", "authorized": False, "expect": {"contains": "refunded"}},
        {"id": "flaky", "query": "hi", "expect": {"contains": "ok"}},
        {"id": "policy-break", "query": "hi", "expect": {"contains": "done"},
         "policy": [{"forbid_tool": "delete_user"}]},
        {"id": "judged", "query": "finish", "rubric": "The reply says done."},
        {"id": "big-env", "query": "note", "expect": {"contains": "noted"},
         "expected_env_check": [{"path": ["notes"], "contains": "hello"}]},
    ]


def write_scale_suite(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "tools.py").write_text(TOOLS)
    (folder / "agent.py").write_text(AGENT)
    catalog = [{"sku": f"SKU{i:06d}", "title": f"item number {i} " + "x" * 40, "price": i}
               for i in range(CATALOG_ITEMS)]
    block = {"name": "scale", "tools": "tools.py", "agent": "agent.py:agent",
             "sensitive_tools": ["refund"], "escalation_tools": ["transfer_to_human"],
             "initial_env": {"orders": {"A": {"status": "delivered"}}, "notes": [], "catalog": catalog}}
    path = folder / "cases.json"
    path.write_bytes(orjson.dumps({"suite": block, "cases": scale_cases()}))
    assert path.stat().st_size > 3_000_000
    return path


def cli(tmp_path: Path, *args: str, judge=None) -> CliResult:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_", "RAY_"))}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), NO_COLOR="1")
    if judge is not None:
        env.update(AGENT_EVAL_JUDGE_BASE_URL=judge.base_url, AGENT_EVAL_JUDGE_API_KEY="judge-key",
                   AGENT_EVAL_JUDGE_MODEL="judge-m")
    return run_cli(*args, cwd=tmp_path, env=env, timeout=HANG_GUARD_S)


def run_report(tmp_path: Path, cases: Path, out: str, *args: str, judge=None) -> tuple[int, dict, str]:
    done = cli(tmp_path, "run", "--cases", str(cases), "--output-dir", str(tmp_path / out), "--quiet",
               "-k", "2", *args, judge=judge)
    (report,) = (tmp_path / out).glob("*.json")
    return done.returncode, orjson.loads(report.read_bytes()), done.stderr


VARYING = ("latency", "ttfa", "t_start", "started_at", "rate_limit_wait")  # wall-clock figures; the rest must match


def comparable(value: object) -> object:
    """The report without latencies, timestamps, run ids and the settings that name the workers."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()
                if not any(part in k for part in VARYING) and k not in {"run_id", "created_at"}}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def without_workers(report: dict) -> dict:
    # settings.prices names the judge's model only when the judge was called, which hangs on the cache,
    # as summary.judge does: both are left out, and every other figure must match.
    differ = {"workers", "ray", "no_cache", "prices"}
    settings = {k: v for k, v in report["settings"].items() if k not in differ}
    settings["sources"] = {k: v for k, v in settings.get("sources", {}).items() if k not in differ}
    report = dict(report, settings=settings)
    # summary.provider counts HTTP requests and windows, which differ like the judge's calls.
    report["summary"] = {k: v for k, v in report["summary"].items() if k not in ("judge", "provider")}
    return comparable(report)


def judge_says_pass():
    return router(lambda messages: text("PASS the reply says done", prompt_tokens=100, completion_tokens=5))


def check_hand_computed(report: dict) -> None:
    summary = report["summary"]
    # c successes of n = 2 runs per case: refund-ok 2, half-recall 2, unauth-refuse 2, unauth-act 0,
    # flaky 1, policy-break 1, judged 2, big-env 2 -> pass_at_1 = (1+1+1+0+.5+.5+1+1)/8 = 6/8
    assert summary["pass_at_1"] == 0.75
    assert summary["pass_hat_k"] == 5 / 8  # C(c,2)/C(2,2) is 1 for the five cases with c = 2
    # the runs with expected_tools: refund-ok 1/1 twice, half-recall 1/2 twice -> (1+1+.5+.5)/4
    assert summary["tool_recall"] == 0.75
    # authorized: false runs: unauth-refuse blocks (2 runs), unauth-act refunds (2 runs) -> 2/4
    assert summary["unauthorized_block_rate"] == 0.5
    # runs with rules: refund-ok 2 compliant, policy-break 1 of 2 -> 3/4
    assert summary["policy_compliance"] == 0.75
    statuses = {c["id"]: c["status"] for c in report["cases"]}
    assert statuses == {"refund-ok": "passed", "half-recall": "passed", "unauth-refuse": "passed",
                        "unauth-act": "failed", "flaky": "failed", "policy-break": "failed",
                        "judged": "passed", "big-env": "passed"}
    big = next(c for c in report["cases"] if c["id"] == "big-env")["runs"][0]["trace"]
    assert big["final_env_diff"] == [{"path": ["notes"], "old": [], "new": ["hello"]}]


def test_two_workers_and_ray_write_the_report_of_one_process(loopback, tmp_path: Path) -> None:
    judge = loopback(judge_says_pass())
    cases = write_scale_suite(tmp_path / "suite")
    code, one, err = run_report(tmp_path, cases, "one", judge=judge)
    assert code == 1, err
    check_hand_computed(one)
    assert one["settings"]["workers"] == 1 and one["settings"]["ray"] is None

    asked = judge.count
    code, two, err = run_report(tmp_path, cases, "two", "--workers", "2", "--no-cache", judge=judge)
    assert code == 1 and "Traceback" not in err, err
    assert two["settings"]["workers"] == 2 and two["settings"]["ray"] is None
    assert without_workers(two) == without_workers(one)
    # summary.judge adds up what every worker asked (the two judged runs may land on either worker)
    assert two["summary"]["judge"]["calls"] == judge.count - asked > 0

    pytest.importorskip("ray")
    code, on_ray, err = run_report(tmp_path, cases, "ray", "--ray", "--workers", "2", judge=judge)
    assert code == 1, err
    assert on_ray["settings"]["ray"] == "local" and on_ray["settings"]["workers"] == 2
    assert without_workers(on_ray) == without_workers(one)
    assert on_ray["summary"]["judge"]["cache_hits"] == 2  # the workers read the shared on-disk cache


# For the lost worker and Ctrl-C: quick cases, and one that hangs until the test kills its worker.
SLOW_AGENT = '''
import asyncio
import os
from pathlib import Path

HERE = Path(__file__).parent


async def agent(task):
    (HERE / "pids").mkdir(exist_ok=True)
    (HERE / "pids" / str(os.getpid())).touch()
    if task.case_id == "case-5" and not (HERE / "resumed").exists():
        (HERE / "victim.tmp").write_text(str(os.getpid()))
        (HERE / "victim.tmp").replace(HERE / "victim.pid")  # whole or absent: the test reads it as soon as it exists
        await asyncio.sleep(3600)
    await asyncio.sleep(float(os.environ.get("AGENT_DELAY_S", "0.02")))
    return "ok"
'''


def write_slow_suite(folder: Path, cases: int) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "tools.py").write_text(TOOLS)
    (folder / "agent.py").write_text(SLOW_AGENT)
    rows = [{"id": f"case-{n}", "query": "go", "expect": {"contains": "ok"}} for n in range(cases)]
    block = {"name": "slow", "tools": "tools.py", "agent": "agent.py:agent", "initial_env": {"notes": []}}
    path = folder / "cases.json"
    path.write_bytes(orjson.dumps({"suite": block, "cases": rows}))
    return path


def start(cases: Path, out: Path, *args: str, new_session: bool = False,
          env_extra: dict[str, str] | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_", "RAY_"))}
    env.update(env_extra or {})
    return subprocess.Popen([CLI, "run", "--cases", str(cases), "--output-dir", str(out), "--quiet", *args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=new_session)


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


def journal(out: Path) -> list[dict]:
    """The journaled runs; read while the run is writing, a last line not yet complete is left out."""
    (path,) = out.glob("*.jsonl")
    return [orjson.loads(line) for line in path.read_bytes().split(b"\n")[1:-1]]


def is_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in {"Z", "X"}  # a zombie has exited; only its parent's bookkeeping is left


def children(pid: int) -> set[int]:
    """The processes `pid` started (the worker processes of a driver)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found.update(map(int, (task / "children").read_text().split()))
        except FileNotFoundError:
            continue
    return found


def test_a_killed_worker_costs_only_its_runs_in_flight(tmp_path: Path) -> None:
    folder = tmp_path / "suite"
    cases = write_slow_suite(folder, 40)
    out = tmp_path / "out"
    proc = start(cases, out, "--workers", "2", "--concurrency", "4")
    wait_for((folder / "victim.pid").exists, "case-5 to start")
    victim = int((folder / "victim.pid").read_text())
    assert victim != proc.pid
    os.kill(victim, signal.SIGKILL)
    _, stderr = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 2, stderr  # runs ended in error (section 1's order): exit 2
    assert "Traceback" not in stderr

    records = journal(out)
    assert len(records) == 40 and len({r["case_id"] for r in records}) == 40
    lost = [r for r in records if r["run"]["status"] == "error"]
    # The victim held at most its 2 slots, case-5 among them; every other run finished normally.
    assert "case-5" in {r["case_id"] for r in lost} and 1 <= len(lost) <= 2
    for record in lost:
        assert record["run"]["error"].startswith(f"worker lost: worker 0 (pid {victim}) was killed by SIGKILL") \
            or record["run"]["error"].startswith(f"worker lost: worker 1 (pid {victim}) was killed by SIGKILL")
    assert all(r["run"]["status"] == "passed" for r in records if r not in lost)

    (folder / "resumed").touch()
    run_id = next(out.glob("*.jsonl")).stem
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_", "RAY_"))}
    resumed = run_cli("run", "--resume", run_id, "--output-dir", out, "--quiet", cwd=Path.cwd(), env=env,
                      timeout=HANG_GUARD_S)  # the resume is not under test as a process
    assert resumed.returncode == 0, resumed.stderr
    again = journal(out)[40:]
    assert sorted(r["case_id"] for r in again) == sorted(r["case_id"] for r in lost)
    assert all(r["run"]["status"] == "passed" for r in again)


def test_a_killed_workers_judge_spend_still_counts(loopback, tmp_path: Path) -> None:
    judge = loopback(judge_says_pass())
    folder = tmp_path / "suite"
    cases = write_slow_suite(folder, 12)
    rows = orjson.loads(cases.read_bytes())
    for row in rows["cases"]:
        del row["expect"]
        row["rubric"] = f"The reply to {row['id']} says ok."  # a prompt of its own: one judge call each
    cases.write_bytes(orjson.dumps(rows))
    out = tmp_path / "out"
    # One slot per worker: the victim plays nothing beside the hanging case-5, and it played at least one
    # judged run before it (case-0 or case-1 was its first).
    proc = start(cases, out, "--workers", "2", "--concurrency", "2", "--no-cache",
                 env_extra={"AGENT_EVAL_JUDGE_BASE_URL": judge.base_url, "AGENT_EVAL_JUDGE_API_KEY": "k",
                            "AGENT_EVAL_JUDGE_MODEL": "judge-m", "XDG_CACHE_HOME": str(tmp_path / "cache")})
    wait_for((folder / "victim.pid").exists, "case-5 to start")
    os.kill(int((folder / "victim.pid").read_text()), signal.SIGKILL)
    _, stderr = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 2, stderr  # the lost run is an error
    (path,) = out.glob("*.json")
    report = orjson.loads(path.read_bytes())
    statuses = [run["status"] for case in report["cases"] for run in case["runs"]]
    assert statuses.count("error") == 1 and statuses.count("passed") == 11
    # Every judge call the server answered is in summary.judge, the dead worker's included: 11 runs judged.
    assert judge.count == 11
    assert report["summary"]["judge"]["calls"] == 11


def test_retries_inside_a_worker_show_in_the_drivers_output(loopback, tmp_path: Path) -> None:
    srv = loopback([status(429, {"error": {"message": "slow down"}}, FAST_RETRY)] * 3 + [text("ok")])
    (tmp_path / "tools.py").write_text(TOOLS)
    cases = tmp_path / "cases.json"
    cases.write_bytes(orjson.dumps({"suite": {"name": "retry", "tools": "tools.py", "initial_env": {"notes": []}},
                                    "cases": [{"id": "one", "query": "hi", "expect": {"contains": "ok"}}]}))
    done = cli(tmp_path, "run", "--cases", str(cases), "--agent", "openai", "--model", "m", "--base-url",
               srv.base_url, "--workers", "2", "--output-dir", str(tmp_path / "out"), "--no-html")
    assert done.returncode == 0, done.stderr
    assert srv.count == 4  # three 429s, then the answer
    # Piped output shows a retry from the third attempt on, as in one process.
    assert f"retrying {srv.base_url} (attempt 3/8)" in done.stderr
    assert "(attempt 2/8)" not in done.stderr


@pytest.mark.parametrize("to_group", [False, True], ids=["driver-alone", "process-group"])
def test_ctrl_c_under_two_workers_exits_130_leaves_no_process_and_resume_runs_the_rest(
        tmp_path: Path, to_group: bool) -> None:
    folder = tmp_path / "suite"
    cases = write_slow_suite(folder, 100)
    (folder / "resumed").touch()  # no case hangs here
    out = tmp_path / "out"
    proc = start(cases, out, "--workers", "2", "--concurrency", "4", "-k", "2", new_session=to_group)
    wait_for(lambda: out.exists() and any(out.glob("*.jsonl")) and len(journal(out)) >= 3,
             "finished runs in the journal")
    workers = children(proc.pid)  # the 2 workers, and multiprocessing's resource tracker
    assert len(workers) >= 2
    if to_group:
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    else:
        proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    wait_for(lambda: not any(map(is_alive, workers)), "the workers to be gone")

    run_id = next(out.glob("*.jsonl")).stem
    partial = orjson.loads((out / f"{run_id}.json").read_bytes())
    assert partial["interrupted"] is True and partial["exit_code"] == 130
    finished = journal(out)
    assert 0 < len(finished) < 200 and all(r["run"]["status"] == "passed" for r in finished)

    # --workers comes from the command line on --resume, like --concurrency: no conflict.
    resumed = run_cli("run", "--resume", run_id, "--output-dir", out, "--quiet", "--workers",
                      "1" if to_group else "3", cwd=Path.cwd(), env=dict(os.environ), timeout=HANG_GUARD_S)
    assert resumed.returncode == 0, resumed.stderr
    records = journal(out)
    assert len(records) == 200  # exactly the missing runs were run
    assert len({(r["case_id"], r["trial"]) for r in records}) == 200
    final = orjson.loads((out / f"{run_id}.json").read_bytes())
    assert final["interrupted"] is False and final["settings"]["workers"] == (1 if to_group else 3)


def test_exitfirst_under_two_workers_stops_taking_runs(tmp_path: Path) -> None:
    folder = tmp_path / "suite"
    cases = write_slow_suite(folder, 60)
    (folder / "resumed").touch()  # no case hangs here
    rows = orjson.loads(cases.read_bytes())
    rows["cases"][3]["expect"] = {"contains": "never said"}  # case-3 fails
    cases.write_bytes(orjson.dumps(rows))
    out = tmp_path / "out"
    proc = start(cases, out, "--workers", "2", "--concurrency", "2", "-x")
    _, stderr = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 1, stderr
    (path,) = out.glob("*.json")
    report = orjson.loads(path.read_bytes())
    assert report["stopped_early"] is True and report["interrupted"] is False
    statuses = {c["id"]: c["status"] for c in report["cases"]}
    assert statuses["case-3"] == "failed"
    # Each worker holds one run at a time, so at most one more run starts after case-3's failure comes back.
    assert list(statuses.values()).count("not_run") >= 60 - 6
    assert len(journal(out)) <= 6


def python_suite(folder: Path, agent: str, cases: list[dict], tools: str = TOOLS, **block: object) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "tools.py").write_text(tools)
    (folder / "agent.py").write_text(agent)
    suite = {"name": "hostile", "tools": "tools.py", "agent": "agent.py:agent", "initial_env": {"notes": []},
             **block}
    path = folder / "cases.json"
    path.write_bytes(orjson.dumps({"suite": suite, "cases": cases}))
    return path


def test_scorer_values_json_cannot_hold_are_stored_as_in_one_process(tmp_path: Path) -> None:
    folder = tmp_path / "suite"
    (folder / "scorers.py").parent.mkdir()
    (folder / "scorers.py").write_text(
        'def huge(output):\n    return {"v": 2**70}\n\n\n'
        'def lone(output):\n    return {"passed": True, "reason": "ok \\ud800"}\n')
    cases = python_suite(folder, "def agent(task):\n    return 'ok'\n",
                         [{"id": f"c{n}", "query": "go", "expect": {"contains": "ok"}} for n in range(4)],
                         scorers=["scorers.py:huge", "scorers.py:lone"])
    code, one, err = run_report(tmp_path, cases, "one")
    assert code == 0, err
    code, two, err = run_report(tmp_path, cases, "two", "--workers", "2")
    assert code == 0, err
    assert "Traceback" not in err
    assert without_workers(two) == without_workers(one)
    assert two["summary"]["scorers"] == one["summary"]["scorers"]


EXITING_AGENT = '''
import os


def agent(task):
    if task.case_id.startswith("boom"):
        os._exit(3)
    return "ok"
'''


def test_workers_killed_by_their_runs_are_replaced_and_every_run_is_played(tmp_path: Path) -> None:
    rows = [{"id": f"boom-{n}", "query": "go", "expect": {"contains": "ok"}} for n in range(3)]
    rows += [{"id": f"fine-{n}", "query": "go", "expect": {"contains": "ok"}} for n in range(20)]
    cases = python_suite(tmp_path / "suite", EXITING_AGENT, rows)
    done = cli(tmp_path, "run", "--cases", str(cases), "--output-dir", str(tmp_path / "out"), "--quiet",
               "--workers", "2", "--concurrency", "2")
    assert done.returncode == 2, done.stderr  # three runs ended in error, none failed
    assert "Traceback" not in done.stderr
    records = journal(tmp_path / "out")
    assert sorted(r["case_id"] for r in records) == sorted(row["id"] for row in rows)
    for record in records:
        if record["case_id"].startswith("boom"):
            assert record["run"]["status"] == "error"
            assert "exited with code 3 while this run was in flight" in record["run"]["error"]
        else:
            assert record["run"]["status"] == "passed"


def test_a_start_up_problem_only_workers_meet_is_exit_2_naming_it(tmp_path: Path) -> None:
    # Raised at import in a worker process only: the driver loaded the same module without trouble.
    tools = TOOLS + "\nimport multiprocessing\nif multiprocessing.parent_process() is not None:\n" \
                    "    raise KeyboardInterrupt\n"
    cases = python_suite(tmp_path / "suite", "def agent(task):\n    return 'ok'\n",
                         [{"id": "one", "query": "go", "expect": {"contains": "ok"}}], tools=tools)
    done = cli(tmp_path, "run", "--cases", str(cases), "--output-dir", str(tmp_path / "out"), "--workers", "2")
    assert done.returncode == 2, done.stderr
    # Both workers meet it; whichever tells the driver first is named.
    assert re.search(r"worker [01] cannot start", done.stderr) and "KeyboardInterrupt" in done.stderr
    assert "Traceback" not in done.stderr


def test_workers_that_die_before_they_start_leave_the_rest_not_run_and_say_so(tmp_path: Path) -> None:
    tools = TOOLS + "\nimport multiprocessing\nimport os\nif multiprocessing.parent_process() is not None:\n" \
                    "    os._exit(5)\n"
    cases = python_suite(tmp_path / "suite", "def agent(task):\n    return 'ok'\n",
                         [{"id": f"c{n}", "query": "go", "expect": {"contains": "ok"}} for n in range(6)],
                         tools=tools)
    out = tmp_path / "out"
    done = cli(tmp_path, "run", "--cases", str(cases), "--output-dir", str(out), "--workers", "2",
               "--concurrency", "2")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    # Each worker held one run when it died; nobody was left to play the other four.
    assert "no worker was left to play 4 run(s)" in done.stderr and "exited with code 5" in done.stderr
    assert "agent-eval run --resume" in done.stderr
    (path,) = out.glob("*.json")
    report = orjson.loads(path.read_bytes())
    assert [c["status"] for c in report["cases"]].count("not_run") == 4
    assert report["exit_code"] == 2


def test_a_worker_never_sees_sigint_not_even_while_it_starts(tmp_path: Path) -> None:
    """From its first instruction a worker has SIGINT blocked, then ignored: a Ctrl-C sent to the process
    group while it starts up can never print a KeyboardInterrupt traceback."""
    cases = write_slow_suite(tmp_path / "suite", 30)
    (tmp_path / "suite" / "resumed").touch()
    proc = start(cases, tmp_path / "out", "--workers", "2", "--concurrency", "2")
    seen: dict[int, list[tuple[int, int]]] = {}
    while proc.poll() is None:
        for pid in children(proc.pid):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if b"spawn_main" not in cmdline:
                continue  # multiprocessing's resource tracker
            fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
            seen.setdefault(pid, []).append((int(fields["SigBlk"], 16), int(fields["SigIgn"], 16)))
        time.sleep(0.002)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    sigint = 1 << (signal.SIGINT - 1)
    assert len(seen) == 2
    for pid, samples in seen.items():
        assert all(blocked & sigint or ignored & sigint for blocked, ignored in samples), (pid, samples[:5])


RAISING_TOOLS = TOOLS + RAISING_TOOL


def test_ray_names_the_users_files_and_says_when_fewer_workers_start(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    folder = tmp_path / "suite"
    cases = python_suite(folder, RAISING_AGENT, [{"id": "agent-raises", "query": "go", "expect": {"contains": "ok"}},
                                                 {"id": "tool-raises", "query": "go", "expect": {"contains": "ok"}}],
                         tools=RAISING_TOOLS)
    code, one, err = run_report(tmp_path, cases, "one", "--concurrency", "2")
    assert code == 1, err
    code, on_ray, err = run_report(tmp_path, cases, "ray", "--ray", "--workers", "3", "--concurrency", "2")
    assert code == 1, err
    # Ray's copy of the folder is gone after the run: the report names the user's files, as in one process.
    assert without_workers(on_ray) == without_workers(one)
    runs = {case["id"]: case["runs"] for case in on_ray["cases"]}
    assert all(f'File "{folder / "agent.py"}", line 4, in agent' in run["trace"]["agent_error_traceback"]
               for run in runs["agent-raises"])
    steps = [step for run in runs["tool-raises"] for step in run["trace"]["steps"]]
    assert steps and all(f'File "{folder / "tools.py"}"' in step["error_traceback"] for step in steps)
    for written in (tmp_path / "ray").iterdir():
        assert b"_ray_pkg_" not in written.read_bytes(), written
    # settings.workers keeps what was asked; one line says how many started.
    assert on_ray["settings"]["workers"] == 3
    assert "note: --concurrency 2 gives 2 of the 3 workers a slot; 2 workers start" in err


def test_fewer_workers_than_asked_start_and_a_line_says_so(tmp_path: Path) -> None:
    cases = python_suite(tmp_path / "suite", "def agent(task):\n    return 'ok'\n",
                         [{"id": f"c{n}", "query": "go", "expect": {"contains": "ok"}} for n in range(3)])
    code, report, err = run_report(tmp_path, cases, "out", "--workers", "1000", "--concurrency", "3")
    assert code == 0, err
    assert report["settings"]["workers"] == 1000  # what was asked, as documented
    assert err.count("note:") == 1
    assert "note: --concurrency 3 gives 3 of the 1000 workers a slot; 3 workers start" in err
    code, _, err = run_report(tmp_path, cases, "even", "--workers", "3", "--concurrency", "3")
    assert code == 0 and "note:" not in err, err


RUN_MARK = "TEST_RUN_MARK"  # inherited by every process a run starts, Ray's included


def marked(mark: str) -> dict[int, str]:
    """The live processes (pid: name) whose environment holds RUN_MARK=mark."""
    needle = f"{RUN_MARK}={mark}".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0") and is_alive(int(entry.name)):
                found[int(entry.name)] = (entry / "comm").read_text().strip()
        except (OSError, ValueError):
            continue
    return found


RAY_STOP_S = 20  # a local instance stops in a few seconds; left behind, its agents linger 60 to 90 s


def test_ctrl_c_while_a_local_ray_instance_starts_leaves_no_ray_process(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    cases = python_suite(tmp_path / "suite", "def agent(task):\n    return 'ok'\n",
                         [{"id": "one", "query": "go", "expect": {"contains": "ok"}}])
    mark = f"{os.getpid()}-{time.monotonic_ns()}"
    proc = start(cases, tmp_path / "out", "--ray", "--workers", "1", env_extra={RUN_MARK: mark})
    wait_for(lambda: "raylet" in marked(mark).values(), "the raylet to start")  # ray.init is still under way
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    deadline = time.monotonic() + RAY_STOP_S
    while marked(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not marked(mark), f"left behind: {marked(mark)}"
