"""`run --record DIR` then `run --replay DIR` (section 22), in process against the loopback model.

The model answers with a counter in its text, so a second live run would differ from the first: a
replay that equals the recording was answered from the cassettes. The server is stopped before
replaying, so any request that reached the network would be a connection error."""
from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import orjson
import pytest
from rich.console import Console

from agent_eval.commands.run import run_command
from agent_eval.errors import ConfigError
from agent_eval.provider.cassette import case_folder
from tests.builders import HELPDESK_TOOLS, ROOT, flags_of, write_suite
from tests.loopback import LoopbackServer, text, tool_calls

TOOLS = HELPDESK_TOOLS
ENV = {"users": {"u1": "Bob, active", "u3": "Ada, active", "u2": "Eve, active"}, "resets": []}
CASES = [
    {"id": "reset", "query": "Reset the password of u1.",
     "expected_tools": [{"name": "reset_password", "args": {"user_id": "u1"}}], "expect": {"contains": "Done"}},
    {"id": "judged ../ id", "query": "Who is u3?", "rubric": "Says who u3 is."},
    {"id": "chat", "scenario": "You are u2 and forgot your password.", "max_turns": 3,
     "expected_env_check": [{"path": ["resets"], "equals": ["u2"]}]},
]
PRICING = {"agent-m": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
           "judge-m": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
           "user-m": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}}
CMD_AGENT = '''
import json, os, sys
from openai import OpenAI

messages = json.load(open(os.environ["AGENT_EVAL_MESSAGES_FILE"]))
client = OpenAI(max_retries=0)
stream = client.chat.completions.create(model=os.environ["AGENT_EVAL_MODEL"], messages=messages, stream=True)
print("".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices))
'''
CMD_RESPONSES_AGENT = '''
import json, os
from openai import OpenAI

messages = json.load(open(os.environ["AGENT_EVAL_MESSAGES_FILE"]))
client = OpenAI(max_retries=0)
events = client.responses.create(model=os.environ["AGENT_EVAL_MODEL"], stream=True,
                                 input=[m for m in messages if m["role"] != "system"])
print("".join(e.response.output_text for e in events if e.type == "response.completed"))
'''
SDK_AGENT = '''
from agents import Agent, Runner, set_tracing_disabled
from agent_eval.bridge import openai_agents as bridge

set_tracing_disabled(True)


async def agent(task):
    helper = Agent(name="helpdesk", instructions=task.system_prompt, tools=bridge.tools(task),
                   model=bridge.model(task))
    result = await Runner.run(helper, [m for m in task.messages if m["role"] != "system"], max_turns=10)
    return result.final_output
'''
# Keys planted everywhere one can be configured; none may reach a cassette.
AGENT_KEY, JUDGE_KEY, USER_KEY = "sk-plantedAgentKey0123456789", "judge-planted-key-42", "user-planted-key-42"
URL_SECRET = "urlpass-planted-9"


def reply(request: dict, index: int):
    """Agent, judge and user by model; every text carries the request's index (a live re-run differs)."""
    messages = request.get("messages") or []
    model = request.get("model")
    if "input" in request:  # the Responses API
        return text(f"Done: answered on /responses (#{index})")
    if model == "judge-m":
        return text(f"PASS: it says so (#{index})", prompt_tokens=30, completion_tokens=3)
    if model == "user-m":
        last = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        said = "Reset my password." if not any(m["role"] == "assistant" for m in messages) else (
            "I am u2." if "Which" in last else "###STOP###")
        return text(said, prompt_tokens=20, completion_tokens=4)
    last = messages[-1]
    if last["role"] == "tool":
        return text(f"Done: {last['content']} (#{index})", prompt_tokens=12, completion_tokens=6)
    asked = last.get("content") or ""
    if "u1" in asked:
        return tool_calls([("reset_password", {"user_id": "u1"})])
    if "u3" in asked:
        return tool_calls([("lookup_user", {"user_id": "u3"})])
    if "u2" in asked:
        return tool_calls([("reset_password", {"user_id": "u2"})])
    return text(f"Which user are you? (#{index})")


@pytest.fixture
def keyed_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "AGENT_EVAL_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", AGENT_KEY)
    monkeypatch.setenv("AGENT_EVAL_JUDGE_API_KEY", JUDGE_KEY)
    monkeypatch.setenv("AGENT_EVAL_USER_API_KEY", USER_KEY)
    monkeypatch.setenv("AGENT_EVAL_JUDGE_MODEL", "judge-m")
    monkeypatch.setenv("AGENT_EVAL_USER_MODEL", "user-m")
    for name in ("AGENT_EVAL_JUDGE_BASE_URL", "AGENT_EVAL_USER_BASE_URL"):  # set by a test, restored after it
        monkeypatch.setenv(name, "")
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


def suite(folder: Path, agent: str | None = None) -> Path:
    block = {"name": "helpdesk", "tools": "tools.py", "initial_env": ENV, "pricing": PRICING,
             "system_prompt": "You are the helpdesk.", **({"agent": agent} if agent else {})}
    return write_suite(folder, CASES, block, {"tools.py": TOOLS, "cmd_agent.py": CMD_AGENT,
                                              "sdk_agent.py": SDK_AGENT,
                                              "cmd_responses.py": CMD_RESPONSES_AGENT})


def run(folder: Path, cases: Path, *, base_url: str | None = None, **flags: object) -> tuple[int, dict, str]:
    out = io.StringIO()
    console = Console(file=out, width=300, no_color=True)
    reports = folder / "reports"
    before = set(reports.glob("*.json")) if reports.exists() else set()
    given = {"cases": cases, "output_dir": reports, "no_html": True, "model": "agent-m", **flags}
    if base_url is not None:
        given["base_url"] = base_url
    try:
        code = run_command(flags_of(**given), console, console)
    except ConfigError as exc:  # what the CLI prints, with exit 2
        return 2, {}, str(exc)
    new = sorted(set(reports.glob("*.json")) - before)
    return code, orjson.loads(new[-1].read_bytes()) if new else {}, out.getvalue()


def secret_url(srv: LoopbackServer, password: str = URL_SECRET) -> str:
    """The server's URL with a password in its userinfo (redacted where shown, never stored)."""
    scheme, rest = srv.base_url.split("://")
    return f"{scheme}://bob:{password}@{rest}"


def outcome(report: dict) -> dict:
    """What a replay must reproduce: each run's status, checks, metrics (latency aside), tokens and cost."""
    runs = {}
    for case in report["cases"]:
        for r in case["runs"]:
            metrics = {k: v for k, v in r["metrics"].items() if k not in ("latency_s", "ttfa_s")}
            runs[(case["id"], r["trial"])] = (r["status"], r["checks"], metrics, r["trace"]["replies"],
                                              [(c["prompt_tokens"], c["completion_tokens"])
                                               for c in r["trace"]["llm_calls"]])
    summary = report["summary"]
    return {"runs": runs, "cost": summary.get("cost_usd_total"), "judge": summary["judge"],
            "user": summary["user_sim"]}


def all_cassette_text(folder: Path) -> str:
    return "".join(p.read_text() for p in folder.rglob("*") if p.is_file())


@pytest.mark.slow
def test_record_then_replay_with_the_provider_stopped(keyed_env: None, tmp_path: Path) -> None:
    cases = suite(tmp_path)
    tape = tmp_path / "tape"
    with LoopbackServer(reply) as srv:
        os.environ["AGENT_EVAL_JUDGE_BASE_URL"] = secret_url(srv, "judge-url-secret-7")
        os.environ["AGENT_EVAL_USER_BASE_URL"] = secret_url(srv, "user-url-secret-7")
        code, recorded, out = run(tmp_path, cases, base_url=secret_url(srv), repeat=3, record=tape)
        assert code == 0, out
        live_requests = srv.count
    assert recorded["settings"]["record"] == str(tape)
    # A cassette per (case, trial), the hostile id as one safe folder; every exchange in order.
    assert sorted(p.name for p in tape.iterdir()) == sorted([".lock", "cassette.json", "reset", "chat",
                                                             "judged%20..%2F%20id"])
    assert case_folder("judged ../ id") == "judged%20..%2F%20id"
    lines = [orjson.loads(x) for x in (tape / "chat" / "0.jsonl").read_text().splitlines()]
    assert [x["seq"] for x in lines] == list(range(1, len(lines) + 1))
    assert {x["role"] for x in lines} == {"agent", "user"}
    judged = [orjson.loads(x) for x in (tape / "judged%20..%2F%20id" / "2.jsonl").read_text().splitlines()]
    assert [x["role"] for x in judged] == ["agent", "agent", "judge"]
    assert judged[0]["usage"] == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    assert sum(len(p.read_text().splitlines()) for p in tape.rglob("*.jsonl")) == live_requests
    header = orjson.loads((tape / "cassette.json").read_bytes())
    assert (header["suite"], header["model"], header["agent"]) == ("helpdesk", "agent-m", "openai")
    text_of_all = all_cassette_text(tape)
    for secret in (AGENT_KEY, JUDGE_KEY, USER_KEY, URL_SECRET, "judge-url-secret", "user-url-secret", "Bearer"):
        assert secret not in text_of_all

    # The provider is gone, and no key is set: the replay answers every request from the cassettes.
    for name in ("OPENAI_API_KEY", "AGENT_EVAL_JUDGE_API_KEY", "AGENT_EVAL_USER_API_KEY"):
        os.environ.pop(name)
    code, replayed, out = run(tmp_path, cases, base_url=srv.base_url, repeat=3, replay=tape)
    assert code == 0, out
    assert outcome(replayed) == outcome(recorded)
    assert replayed["summary"]["replay"] == {"hits": live_requests, "misses": 0, "live": 0, "no_request_runs": 0}
    assert replayed["settings"]["replay"] == str(tape)
    assert f"replaying {tape} (recorded {header['created_at']}, model agent-m)" in out
    # The recorded latency is reported (the cassette's, plus agent-eval's own time around it), not waited for.
    on_tape = orjson.loads((tape / "reset" / "0.jsonl").read_text().splitlines()[0])["latency_s"]
    again = replayed["cases"][0]["runs"][0]["trace"]["llm_calls"][0]["latency_s"]
    assert on_tape <= again <= recorded["cases"][0]["runs"][0]["trace"]["llm_calls"][0]["latency_s"] + 0.5
    assert replayed["cases"][0]["runs"][0]["metrics"]["ttfa_s"] >= on_tape  # the first call waited for the model

    # A replayed report gates like any other: against the recording's own report, nothing regressed.
    recorded_path = tmp_path / "reports" / f"{recorded['run_id']}.json"
    code, gated, out = run(tmp_path, cases, repeat=3, replay=tape, baseline=str(recorded_path),
                           markdown=tmp_path / "summary.md")
    assert code == 0 and gated["gate"]["regression"] is False, out
    assert f"replaying `{tape}` (recorded {header['created_at']}, model agent-m)" in (
        tmp_path / "summary.md").read_text()

    # pass^k stays honest: four trials were never recorded.
    code, _, out = run(tmp_path, cases, repeat=4, replay=tape)
    assert code == 2 and "trial 3" in out and "reset" in out

    # A tool that now answers differently changes what the model saw: a replay miss naming the field.
    (tmp_path / "tools.py").write_text(TOOLS.replace("password of {user_id} reset", "reset done for {user_id}"))
    code, missed, out = run(tmp_path, cases, replay=tape, filter=["reset"])
    assert code == 2, out
    run0 = missed["cases"][0]["runs"][0]
    assert run0["status"] == "error"
    assert "replay miss: agent request 2" in run0["error"] and "at messages[3].content" in run0["error"]
    assert "record again with --record" in out

    # --replay-miss live asks the provider for what is missing and adds it; the next replay hits.
    with LoopbackServer(reply) as srv:
        os.environ["OPENAI_API_KEY"] = AGENT_KEY
        code, filled, out = run(tmp_path, cases, base_url=srv.base_url, replay=tape, replay_miss="live",
                                filter=["reset"])
        assert code == 0, out
        assert filled["summary"]["replay"]["live"] == 1 and srv.count == 1
    code, again_report, out = run(tmp_path, cases, replay=tape, filter=["reset"])
    assert code == 0, out
    assert again_report["summary"]["replay"] == {"hits": 2, "misses": 0, "live": 0, "no_request_runs": 0}
    assert AGENT_KEY not in all_cassette_text(tape)


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["sdk_agent.py:agent", "cmd:python cmd_agent.py --token sk-plantedInTheSuite0123",
                                   "cmd:python cmd_responses.py"])
def test_framework_and_cmd_agents_replay_through_the_runs_endpoint(keyed_env: None, tmp_path: Path,
                                                                   agent: str) -> None:
    cases = suite(tmp_path, agent)
    tape = tmp_path / "tape"
    with LoopbackServer(reply) as srv:
        code, recorded, out = run(tmp_path, cases, base_url=srv.base_url, record=tape, filter=["reset", "judged"])
        assert code in (0, 1), out
    os.environ.pop("OPENAI_API_KEY")
    code, replayed, out = run(tmp_path, cases, base_url=srv.base_url, replay=tape, filter=["reset", "judged"])
    assert code == recorded["exit_code"], out
    assert outcome(replayed) == outcome(recorded)
    assert replayed["summary"]["replay"]["misses"] == 0
    text_of_all = all_cassette_text(tape)
    assert "sk-planted" not in text_of_all and AGENT_KEY not in text_of_all and JUDGE_KEY not in text_of_all
    line = orjson.loads((tape / "reset" / "0.jsonl").read_text().splitlines()[0])
    if "cmd_agent" in agent:  # the cmd: agent streams: its cassette holds the stream's events
        assert line["stream"] is True and isinstance(line["response"], list) and line["response"][-1] == "[DONE]"
    if "responses" in agent:  # a Responses stream, replayed as one (its events' types kept)
        assert line["path"] == "/responses" and line["stream"] is True
        assert line["response"][-1]["type"] == "response.completed"
        assert replayed["cases"][0]["runs"][0]["trace"]["replies"][0].startswith("Done: answered on /responses")


def test_a_bad_cassette_is_exit_2_naming_the_file_and_line(keyed_env: None, tmp_path: Path) -> None:
    cases = suite(tmp_path)
    tape = tmp_path / "tape"
    (tape / "reset").mkdir(parents=True)
    (tape / "cassette.json").write_bytes(orjson.dumps({"format": 1, "suite": "helpdesk", "model": "agent-m"}))
    good = {"seq": 1, "role": "agent", "path": "/chat/completions", "request": {}, "response": {}, "status": 200,
            "latency_s": 0.1, "usage": None}
    (tape / "reset" / "0.jsonl").write_bytes(orjson.dumps(good) + b"\n" + orjson.dumps(good)[:20])
    code, _, out = run(tmp_path, cases, replay=tape, filter=["reset"])
    assert code == 2 and "0.jsonl, line 2 is truncated" in out
    (tape / "cassette.json").write_bytes(orjson.dumps({"format": 1, "suite": "other", "model": "agent-m"}))
    code, _, out = run(tmp_path, cases, replay=tape, filter=["reset"])
    assert code == 2 and "cassette.json, line 1" in out and "another suite" in out
    code, _, out = run(tmp_path, cases, replay=tape, record=tmp_path / "t2")
    assert code == 2 and "--record and --replay" in out


def test_a_replayed_run_with_no_request_through_agent_eval_is_warned_about(keyed_env: None, tmp_path: Path) -> None:
    cases = write_suite(tmp_path, [{"id": "direct", "query": "hi", "expect": {"contains": "hello"}}],
                        {"name": "direct", "agent": "direct.py:agent"},
                        {"direct.py": "def agent(task):\n    return 'hello'  # a provider called directly, say\n"})
    tape = tmp_path / "tape"
    code, _, out = run(tmp_path, cases, record=tape)
    assert code == 0, out
    assert (tape / "direct" / "0.jsonl").read_text() == ""  # recorded: nothing went through agent-eval
    code, replayed, out = run(tmp_path, cases, replay=tape)
    assert code == 0, out
    assert replayed["summary"]["replay"]["no_request_runs"] == 1
    assert "1 run made no model request through agent-eval; --replay cannot cover direct calls" in out


def test_a_cassette_that_cannot_be_written_is_that_runs_error(keyed_env: None, tmp_path: Path) -> None:
    cases = write_suite(tmp_path, [{"id": "direct", "query": "hi", "expect": {"contains": "hello"}}],
                        {"name": "direct", "agent": "direct.py:agent"},
                        {"direct.py": "def agent(task):\n    return 'hello'\n"})
    tape = tmp_path / "tape"
    tape.mkdir()
    (tape / "direct").write_text("a file where the case's folder goes")
    code, report, out = run(tmp_path, cases, record=tape)
    assert code == 2, out
    assert report["cases"][0]["runs"][0]["error"].startswith(f"cannot write the cassette {tape / 'direct' / '0.jsonl'}")
