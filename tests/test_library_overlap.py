"""Two `run_suite` calls overlapping in one process (two threads; two `run_suite_async` tasks on one loop), one
replaying a recording and one live, run at once and give exactly the reports each gives alone; a call after
them neither records nor replays. Ctrl-C or cancellation in a running loop keeps the finished runs."""
from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import pytest

import agent_eval
from tests import overlap
from tests.builders import write_suite
from tests.loopback import LoopbackServer, text, tool_calls

TOOLS = '''
from agent_eval import tool
from tests import overlap


@tool
def lookup_user(user_id: str, env: dict) -> str:
    """Look a user up."""
    overlap.meet()  # the other call's tool must be here too
    return env["users"][user_id]
'''
CASES = [{"id": "who", "query": "Who is u1?", "expected_tools": [{"name": "lookup_user", "args": {"user_id": "u1"}}],
          "expect": {"contains": "Bob"}}]


def reply(request: dict, index: int) -> Any:
    """The same answer to the same request (a live call alone and beside another say the same)."""
    last = request["messages"][-1]
    if last["role"] == "tool":
        return text(f"Done: {last['content']}", prompt_tokens=12, completion_tokens=6)
    return tool_calls([("lookup_user", {"user_id": "u1"})])


VOLATILE = ("run_id", "created_at", "started_at_unix_ns", "output_dir", "journal")


def masked(value: Any) -> Any:
    """The report without what differs between two calls: ids, clocks, latencies, their own folders."""
    if isinstance(value, dict):
        return {k: None if k in VOLATILE or k.endswith(("_s", "_at")) else masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v) for v in value]
    return value


@pytest.fixture
def suite_and_tape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "AGENT_EVAL_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-overlap-test-key")
    cases = write_suite(tmp_path / "suite", CASES, {"name": "desk", "tools": "tools.py",
                                                   "initial_env": {"users": {"u1": "Bob, active"}}},
                        {"tools.py": TOOLS})
    with LoopbackServer(reply) as srv:
        common = {"model": "agent-m", "base_url": srv.base_url, "no_html": True, "no_judge": True}
        recorded = agent_eval.run_suite(cases, record=tmp_path / "tape", output_dir=tmp_path / "rec", **common)
        assert recorded["exit_code"] == 0
        yield cases, tmp_path, common, srv


def _calls(tmp_path: Path, common: dict, tag: str) -> tuple[dict, dict]:
    replay = {**common, "replay": tmp_path / "tape", "output_dir": tmp_path / f"replay-{tag}"}
    live = {**common, "output_dir": tmp_path / f"live-{tag}"}
    return replay, live


def test_two_overlapping_calls_in_threads_give_the_reports_each_gives_alone(suite_and_tape) -> None:
    cases, tmp_path, common, srv = suite_and_tape
    replay, live = _calls(tmp_path, common, "alone")
    alone = agent_eval.run_suite(cases, **replay), agent_eval.run_suite(cases, **live)
    assert alone[0]["summary"]["replay"]["hits"] == 2 and "replay" not in alone[1]["summary"]

    replay, live = _calls(tmp_path, common, "together")
    overlap.GATE = threading.Barrier(2)  # each call's tool waits for the other's: they must run at once
    reports: dict[str, dict] = {}
    try:
        threads = [threading.Thread(target=lambda name=name, kw=kw: reports.__setitem__(
            name, agent_eval.run_suite(cases, **kw))) for name, kw in (("replay", replay), ("live", live))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        overlap.GATE = None
    # It gave an empty recording and a run that errored with 'the client has been closed'.
    assert masked(reports["replay"]) == masked(alone[0])
    assert masked(reports["live"]) == masked(alone[1])

    before = srv.count
    after = agent_eval.run_suite(cases, **{**common, "output_dir": tmp_path / "after"})
    assert "replay" not in after["summary"] and srv.count == before + 2  # live: neither records nor replays
    assert masked(after) == masked(alone[1])


def test_two_run_suite_async_tasks_on_one_loop_overlap(suite_and_tape) -> None:
    cases, tmp_path, common, srv = suite_and_tape
    replay, live = _calls(tmp_path, common, "alone")
    alone = agent_eval.run_suite(cases, **replay), agent_eval.run_suite(cases, **live)
    replay, live = _calls(tmp_path, common, "tasks")

    async def both() -> list[dict]:
        return await asyncio.gather(agent_eval.run_suite_async(cases, **replay),
                                    agent_eval.run_suite_async(cases, **live))

    overlap.GATE = threading.Barrier(2)
    try:
        together = asyncio.run(both())
    finally:
        overlap.GATE = None
    assert [masked(r) for r in together] == [masked(r) for r in alone]


SLOW_AGENT = '''
import time
from pathlib import Path


def agent(task):
    if task.case_id == "slow":
        Path(task.metadata["mark"]).write_text("started")
        time.sleep(30)
    return "the answer is 42"
'''


def _slow_suite(tmp_path: Path) -> Path:
    mark = str(tmp_path / "slow-started")
    return write_suite(tmp_path / "slow", [
        {"id": "quick", "query": "q", "expect": {"contains": "42"}},
        {"id": "slow", "query": "q", "expect": {"contains": "42"}, "metadata": {"mark": mark}},
        {"id": "later", "query": "q", "expect": {"contains": "42"}}], {"agent": "agent.py:agent"},
        {"agent.py": SLOW_AGENT})


def _when_slow_started(tmp_path: Path, then: Any) -> None:
    def wait() -> None:
        for _ in range(600):
            if (tmp_path / "slow-started").exists():
                then()
                return
            threading.Event().wait(0.05)
    threading.Thread(target=wait, daemon=True).start()


def _partial(report: dict) -> None:
    assert report["exit_code"] == 130 and report["interrupted"] is True
    assert [(c["id"], c["status"]) for c in report["cases"]][0] == ("quick", "passed")  # the finished run kept
    assert report["cases"][2]["status"] == "not_run"


def test_ctrl_c_in_a_running_loop_keeps_the_finished_runs_and_raises_with_the_report(tmp_path: Path) -> None:
    import signal

    cases = _slow_suite(tmp_path)
    main = threading.main_thread().ident
    assert main is not None

    async def notebook() -> None:  # a cell calling run_suite where the kernel's loop runs
        agent_eval.run_suite(cases, output_dir=tmp_path / "r", concurrency=1)

    _when_slow_started(tmp_path, lambda: signal.pthread_kill(main, signal.SIGINT))  # a Ctrl-C
    with pytest.raises(KeyboardInterrupt) as stopped:
        asyncio.run(notebook())
    _partial(stopped.value.report)  # type: ignore[attr-defined]
    (written,) = (tmp_path / "r").glob("*.json")
    assert written.stem == stopped.value.report["run_id"]  # type: ignore[attr-defined]


def test_a_cancelled_run_suite_async_writes_the_partial_report_and_re_raises(tmp_path: Path) -> None:
    cases = _slow_suite(tmp_path)

    async def main() -> dict:
        task = asyncio.ensure_future(agent_eval.run_suite_async(cases, output_dir=tmp_path / "r", concurrency=1))
        loop = asyncio.get_running_loop()
        _when_slow_started(tmp_path, lambda: loop.call_soon_threadsafe(task.cancel))
        try:
            await task
        except asyncio.CancelledError as exc:
            return exc.report  # type: ignore[attr-defined]
        raise AssertionError("not cancelled")

    _partial(asyncio.run(main()))


MCP_AGENT = '''
import asyncio

from tests import overlap


async def agent(task):
    first = await task.acall_tool("echo", text="before")
    if task.metadata.get("waits"):
        overlap.STARTED.set()  # its server is up: the other call starts and ends meanwhile
        await asyncio.to_thread(overlap.ENDED.wait, 60)
    return first + " " + await task.acall_tool("echo", text="after")
'''


def test_a_call_that_ends_leaves_the_other_call_s_mcp_servers_running(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    tiny = Path(__file__).resolve().parent / "fixtures" / "mcp" / "tiny_server.py"

    def call(name: str, waits: bool) -> dict:
        cases = write_suite(tmp_path / name, [{"id": name, "query": "q", "metadata": {"waits": waits},
                                               "expect": {"contains": "before after"}}],
                            {"name": name, "tools": [{"mcp": {"command": ["python", str(tiny)]}}],
                             "agent": "agent.py:agent"}, {"agent.py": MCP_AGENT})
        return agent_eval.run_suite(cases, no_html=True, output_dir=tmp_path / f"{name}-reports")

    overlap.STARTED.clear()
    overlap.ENDED.clear()
    reports: dict[str, dict] = {}
    waiting = threading.Thread(target=lambda: reports.__setitem__("waiting", call("waiting", True)))
    waiting.start()
    try:
        assert overlap.STARTED.wait(60)
        reports["ending"] = call("ending", False)
    finally:
        overlap.ENDED.set()
        waiting.join(60)
    # The ending call killed every MCP server of the process as it closed its own: the waiting call's second
    # tool call failed on a dead server.
    for name in ("ending", "waiting"):
        run = reports[name]["cases"][0]["runs"][0]
        assert (run["status"], run["error"], run["trace"]["final_answer"]) == ("passed", None, "before after"), name
