"""Agents on frameworks, run by the CLI: an IT-helpdesk suite and one scripted model, played by the
built-in agent and by the docs/frameworks.md agents on the real Agents SDK, pydantic-ai and LangChain.
The model issues the same calls whoever runs it, so the trajectory metrics and verdicts agree."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import orjson
import pytest

from tests.builders import HELPDESK_TOOLS, ROOT, clean_env, write_suite
from tests.cli import run_cli
from tests.loopback import router, status, text, tool_calls

DOCS = (ROOT / "docs" / "frameworks.md").read_text()
AGENT_FILES = dict(re.findall(r"```python\n# file: (\S+)\n(.*?)```", DOCS, re.S))
FRAMEWORKS = {"openai-agents": "helpdesk_openai_agents.py:agent", "pydantic-ai": "helpdesk_pydantic_ai.py:agent",
              "langchain": "helpdesk_langchain.py:agent"}
# Tools only through task.mcp_url / AGENT_EVAL_MCP_URL: the Agents SDK's MCP client, and a program.
MCP_AGENTS = {"openai-agents-mcp": "helpdesk_openai_agents_mcp.py:agent", "cmd": "cmd:python helpdesk_cmd.py"}

TOOLS = HELPDESK_TOOLS + '''

@tool
def create_ticket(summary: str, priority: str, env: dict) -> str:
    """Open a ticket. Priority is "low" or "high"."""
    if priority not in ("low", "high"):
        raise ValueError(f"priority must be low or high, not {priority!r}")
    env["tickets"].append(summary)
    return "ticket T1 opened"
'''

ENV = {"users": {"u1": "Bob, active", "u2": "Eve, active", "u3": "Ada, active"}, "resets": [], "tickets": []}

# Each case: its query, the model's replies in order (one per completion), what the case expects.
SCRIPTS = {
    "reset": ("Reset the password of u1.",
              [[("lookup_user", {"user_id": "u1"}, "r1")], [("reset_password", {"user_id": "u1"}, "r2")],
               "Password reset for u1."],
              {"expected_tools": [{"name": "lookup_user", "args": {"user_id": "u1"}},
                                  {"name": "reset_password", "args": {"user_id": "u1"}}],
               "expect": {"contains": "reset"}}),
    "unknown": ("Reset the password of u2, quickly.",
                [[("escalate_now", {}, "k1")], [("reset_password", {"user_id": "u2"}, "k2")],
                 "Password reset for u2."],
                {"expected_tools": [{"name": "reset_password", "args": {"user_id": "u2"}}],
                 "trajectory": "strict", "expect": {"contains": "reset"}}),
    "invalid": ("Open a ticket: printer jammed.",
                [[("create_ticket", {"summary": "printer jammed", "priority": 5}, "i1")],
                 [("create_ticket", {"summary": "printer jammed", "priority": "low"}, "i2")],
                 "Ticket T1 opened."],
                {"expected_tools": [{"name": "create_ticket",
                                     "args": {"summary": "printer jammed", "priority": "low"}}],
                 "expect": {"contains": "opened"}}),
    "malformed": ("Who is u3?",
                  [[("lookup_user", '{"user_id": ', "m1")], [("lookup_user", {"user_id": "u3"}, "m2")],
                   "u3 is Ada."],
                  {"expected_tools": [{"name": "lookup_user", "args": {"user_id": "u3"}}],
                   "expect": {"contains": "Ada"}}),
    "parallel": ("Are u1 and u2 active?",
                 [[("lookup_user", {"user_id": "u1"}, "p1"), ("lookup_user", {"user_id": "u2"}, "p2")],
                  "Both are active."],
                 {"expected_tools": [{"name": "lookup_user", "args": {"user_id": "u1"}},
                                     {"name": "lookup_user", "args": {"user_id": "u2"}}],
                  "expect": {"contains": "active"}}),
    "loop": ("Look u1 up, carefully.",
             [[("lookup_user", {"user_id": "u1"}, "l1")], [("lookup_user", {"user_id": "u1"}, "l2")],
              "u1 is Bob."],
             {"expected_tools": [{"name": "lookup_user", "args": {"user_id": "u1"}}],
              "expect": {"contains": "Bob"}}),
}

# Hand-computed from the metric definitions, with E the expected names and A the model's calls:
#   reset:     E=[lookup,reset], A=[lookup,reset]:   recall 1, precision 2/2=1, params 2/2=1, eff 1, no loop
#   unknown:   E=[reset], A=[escalate_now,reset]:    recall 1, precision 1/2, params 1/1, eff 1/2, invalid 1;
#              strict needs 1 call, got 2: failed
#   invalid:   E=[ticket], A=[ticket(5),ticket(low)]: recall 1, precision 1/2, params 2/2 (the second call),
#              eff 1/2, invalid 1 (priority 5 is not a string), tool error 1 (the tool refused it)
#   malformed: E=[lookup], A=[lookup(raw),lookup(u3)]: recall 1, precision 1/2, params 1/1, eff 1/2, invalid 1
#   parallel:  E=[lookup u1,lookup u2], A=the same:  all 1
#   loop:      E=[lookup], A=[lookup u1, lookup u1]: recall 1, precision 1/2, params 1, eff 1/2, has_loop
EXPECTED = {  # (recall, precision, params, efficiency, has_loop, invalid_calls, status)
    "reset": (1.0, 1.0, 1.0, 1.0, False, 0, "passed"),
    "unknown": (1.0, 0.5, 1.0, 0.5, False, 1, "failed"),
    "invalid": (1.0, 0.5, 1.0, 0.5, False, 1, "passed"),
    "malformed": (1.0, 0.5, 1.0, 0.5, False, 1, "passed"),
    "parallel": (1.0, 1.0, 1.0, 1.0, False, 0, "passed"),
    "loop": (1.0, 0.5, 1.0, 0.5, True, 0, "passed"),
}
# Completions per case (each answered with 10 prompt and 5 completion tokens): the script's length.
COMPLETIONS = {case_id: len(script) for case_id, (_, script, _) in SCRIPTS.items()}
# Where the framework itself stops the agent: the Agents SDK raises on an unknown tool; LangChain
# ends when a completion's only call is not JSON (it is kept apart as an invalid tool call).
STOPPED = {"openai-agents": {"unknown"}, "langchain": {"malformed"}, "openai-agents-mcp": {"unknown"}}


def pick(messages: list[dict]) -> object:
    query = next(m["content"] for m in messages if m.get("role") == "user")
    query = query if isinstance(query, str) else "".join(part.get("text", "") for part in query)
    script = next(s for q, s, _ in SCRIPTS.values() if q == query)
    answered = sum(1 for m in messages if m.get("role") == "assistant")
    reply = script[min(answered, len(script) - 1)]
    return text(reply) if isinstance(reply, str) else tool_calls(reply)


def suite(folder: Path, agent: str | None = None) -> Path:
    cases = [{"id": case_id, "query": query, **fields} for case_id, (query, _, fields) in SCRIPTS.items()]
    block = {"name": "helpdesk", "tools": "tools.py", "initial_env": ENV,
             "system_prompt": "You are the IT helpdesk.", **({"agent": agent} if agent else {})}
    return write_suite(folder, cases, block, {"tools.py": TOOLS, **AGENT_FILES})


def run(folder: Path, base_url: str, *args: str) -> tuple[int, dict, str]:
    out = folder / "out"
    env = clean_env(OPENAI_API_KEY="real-key", PYTHONPATH=str(ROOT), PATH=f"{Path(sys.executable).parent}:"
                    f"{os.environ['PATH']}", AGENT_EVAL_JUDGE_API_KEY="never-handed-on")
    done = run_cli("run", "--cases", folder / "cases.json", "--output-dir", out, "--no-html", "--quiet",
                   "--model", "helpdesk-model", "--base-url", base_url, *args, cwd=folder, env=env, timeout=300)
    reports = sorted(out.glob("*.json"), key=lambda p: p.stat().st_mtime)
    return done.returncode, orjson.loads(reports[-1].read_bytes()) if reports else {}, done.stderr


def by_case(report: dict) -> dict[str, dict]:
    return {case["id"]: case["runs"][0] for case in report["cases"]}


def observed(run: dict) -> tuple:
    m = run["metrics"]
    return (m["tool_recall"], m["tool_precision"], m["param_accuracy"], m["step_efficiency"], m["has_loop"],
            m["invalid_calls"], run["status"])


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    from tests.loopback import LoopbackServer

    made = {}
    with LoopbackServer(router(pick)) as srv:
        for name, spec in {"builtin": "openai", **FRAMEWORKS, **MCP_AGENTS}.items():
            folder = tmp_path_factory.mktemp(name)
            suite(folder)
            code, report, stderr = run(folder, srv.base_url, "--agent", spec)
            assert report, stderr
            made[name] = report | {"_code": code}
    return made


def test_the_built_in_agent_gives_the_hand_computed_numbers(reports: dict[str, dict]) -> None:
    runs = by_case(reports["builtin"])
    assert {case_id: observed(run) for case_id, run in runs.items()} == EXPECTED
    # Token counts are the server's: 10 + 5 per completion.
    assert {case_id: run["metrics"]["prompt_tokens"] for case_id, run in runs.items()} == {
        case_id: 10 * n for case_id, n in COMPLETIONS.items()}


@pytest.mark.parametrize("framework", [*FRAMEWORKS, *MCP_AGENTS])
def test_each_framework_gives_the_built_in_agents_numbers(reports: dict[str, dict], framework: str) -> None:
    runs = by_case(reports[framework])
    stopped = STOPPED.get(framework, set())
    compared = {case_id: observed(run) for case_id, run in runs.items() if case_id not in stopped}
    assert compared == {case_id: v for case_id, v in EXPECTED.items() if case_id not in stopped}
    for case_id, run in runs.items():
        assert all("executed" in step for step in run["trace"]["steps"])
        if case_id in stopped:
            continue
        # Token counts equal the server's own, with no record_usage: 10 prompt + 5 completion each.
        assert run["metrics"]["prompt_tokens"] == 10 * COMPLETIONS[case_id], case_id
        assert run["metrics"]["completion_tokens"] == 5 * COMPLETIONS[case_id], case_id
        assert [c["path"] for c in run["trace"]["llm_calls"]] == ["/chat/completions"] * COMPLETIONS[case_id]
        assert run["trace"]["framework_calls"] == []
    # The parallel batch is stored in the model's order.
    assert [s["args"] for s in runs["parallel"]["trace"]["steps"]] == [{"user_id": "u1"}, {"user_id": "u2"}]


def test_the_frameworks_own_refusals_are_unexecuted_steps(reports: dict[str, dict]) -> None:
    pydantic = by_case(reports["pydantic-ai"])
    unknown = pydantic["unknown"]["trace"]["steps"][0]
    assert (unknown["name"], unknown["executed"], unknown["output"], unknown["invalid_args"]) == (
        "escalate_now", False, None, "unknown tool")
    assert unknown["error"] == "not executed: the agent did not run this call (unknown tool)"
    malformed = pydantic["malformed"]["trace"]["steps"][0]
    assert (malformed["executed"], malformed["args"], malformed["invalid_args"]) == (
        False, '{"user_id": ', "malformed JSON")
    # The Agents SDK raises on the unknown tool: the run is the agent's error; the call is still a step.
    sdk = by_case(reports["openai-agents"])["unknown"]
    assert sdk["trace"]["stop_reason"] == "agent_error" and "escalate_now" in sdk["trace"]["agent_error"]
    assert [(s["name"], s["executed"]) for s in sdk["trace"]["steps"]] == [("escalate_now", False)]
    # LangChain ends on a completion whose only call is not JSON: the call is recorded, the run fails.
    lc = by_case(reports["langchain"])["malformed"]
    assert lc["status"] == "failed"
    assert [(s["executed"], s["invalid_args"]) for s in lc["trace"]["steps"]] == [(False, "malformed JSON")]


def test_the_model_endpoint_down_makes_every_frameworks_runs_error(tmp_path: Path, loopback) -> None:
    srv = loopback(lambda request, index: status(503, headers={"x-should-retry": "false"}))
    for name, spec in FRAMEWORKS.items():
        folder = tmp_path / name
        suite(folder)
        code, report, stderr = run(folder, srv.base_url, "--agent", spec, "--filter", "reset")
        assert code == 2, (name, stderr)
        only = by_case(report)["reset"]
        assert only["status"] == "error", name
        assert "503" in only["error"] and "model helpdesk-model" in only["error"] and srv.base_url in only["error"]


def test_validate_loads_the_agent_as_run_does(tmp_path: Path) -> None:
    suite(tmp_path)
    env = clean_env(PYTHONPATH=str(ROOT), PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")

    def validate(*args: str):
        return run_cli("validate", "--cases", tmp_path / "cases.json", *args, cwd=tmp_path, env=env)

    assert validate("--agent", "helpdesk_pydantic_ai.py:agent").returncode == 0
    assert validate("--agent", "cmd:python helpdesk_cmd.py").returncode == 0
    missing = validate("--agent", "cmd:no-such-agent-program --fast")
    assert missing.returncode == 2 and "'no-such-agent-program' is not found on PATH" in missing.stderr
    assert "Traceback" not in missing.stderr
    absent = validate("--agent", "nowhere.py:agent")
    assert absent.returncode == 2 and "nowhere.py" in absent.stderr


def comparable(report: dict) -> tuple:
    """A report without what may differ between one process and workers (times, the provider's figures)."""
    timed = ("latency", "ttfa", "provider", "rate_limit")
    summary = {k: v for k, v in report["summary"].items() if not k.startswith(timed)}
    runs = {case["id"]: [(run["status"], run["success"], {k: v for k, v in run["metrics"].items()
                                                          if not k.startswith(timed)},
                          [(s["name"], s["args"], s["executed"], s["error"]) for s in run["trace"]["steps"]])
                         for run in case["runs"]] for case in report["cases"]}
    return summary, runs


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_workers_give_the_same_report_as_one_process(reports: dict[str, dict], framework: str,
                                                     tmp_path: Path) -> None:
    from tests.loopback import LoopbackServer

    with LoopbackServer(router(pick)) as srv:
        suite(tmp_path)
        code, report, stderr = run(tmp_path, srv.base_url, "--agent", FRAMEWORKS[framework], "--workers", "2")
    assert report, stderr
    assert (code, comparable(report)) == (reports[framework]["_code"], comparable(reports[framework]))
