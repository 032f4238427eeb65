"""`agent-eval run` / `rescore` with scenario cases, end to end (in-process) against a loopback server.

One loopback server plays both the `openai` agent (model `agent-m`) and the LLM user (model `user-m`).
"""
from __future__ import annotations

import os
from pathlib import Path

import orjson

from tests.loopback import text, tool_calls
from tests.builders import write_suite
from tests.cli import run_cli


TOOLS = '''
from agent_eval import tool


@tool
def reset_password(env: dict, username: str) -> str:
    """Send a password reset link."""
    env["accounts"][username]["reset_sent"] = True
    return f"reset link sent to {username}"
'''

SIM = '''
def simulate(sim):
    if not sim.messages:
        return "I forgot my password."
    if "username" in sim.messages[-1]["content"]:
        return "My username is dana."
    return None
'''

CASES = [
    {"id": "reset", "scenario": "You are dana and you forgot your password. Give your username when asked.",
     "max_turns": 4, "expected_env_check": [{"path": ["accounts", "dana", "reset_sent"], "equals": True}],
     "expect": {"contains": "reset link"}},
    {"id": "plain", "query": "hello", "expect": {"contains": "username"}},
]


def agent_turn(messages: list[dict]):
    last = messages[-1]
    if last["role"] == "tool":
        return text("Done: a reset link is on its way.", prompt_tokens=10, completion_tokens=5)
    if "dana" in (last.get("content") or ""):
        return tool_calls([("reset_password", {"username": "dana"})], prompt_tokens=10, completion_tokens=5)
    return text("What is your username?", prompt_tokens=10, completion_tokens=5)


def user_turn(messages: list[dict]):
    last = messages[-1]["content"]
    answer = ("###STOP###" if "reset link" in last else "My username is dana." if "username" in last
              else "I forgot my password.")
    return text(answer, prompt_tokens=1000, completion_tokens=10)


def accounts_suite(folder: Path, **suite: object) -> Path:
    block = {"name": "accounts", "tools": "tools.py", "initial_env": {"accounts": {"dana": {}}},
             "pricing": {"agent-m": {"input_per_mtok": 1.0, "output_per_mtok": 1.0},
                         "user-m": {"input_per_mtok": 2.0, "output_per_mtok": 2.0}}, **suite}
    return write_suite(folder, CASES, block, {"tools.py": TOOLS, "sim.py": SIM})


def cli(tmp_path: Path, *args: str, srv=None, **env_over: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), COLUMNS="200", NO_COLOR="1")
    if srv is not None:
        env.update(OPENAI_BASE_URL=srv.base_url, OPENAI_API_KEY="k", AGENT_EVAL_MODEL="agent-m")
    env.update(env_over)
    done = run_cli(*args, cwd=tmp_path, env=env, timeout=120)
    return done.returncode, done.stdout, done.stderr


def newest_report(tmp_path: Path) -> dict:
    return orjson.loads(sorted((tmp_path / "reports").glob("*.json"))[-1].read_bytes())


def test_llm_user_and_openai_agent_then_rescore_without_the_simulator(loopback, tmp_path: Path) -> None:
    srv = loopback(lambda request, index: (user_turn if request["model"] == "user-m" else agent_turn)(
        request["messages"]))
    cases_file = accounts_suite(tmp_path)
    code, out, err = cli(tmp_path, "run", "--cases", str(cases_file), "--user-model", "user-m",
                         srv=srv)
    assert code == 0, out + err
    report = newest_report(tmp_path)
    run = next(c for c in report["cases"] if c["id"] == "reset")["runs"][0]
    assert run["trace"]["user_messages"] == ["I forgot my password.", "My username is dana."]
    assert run["trace"]["replies"] == ["What is your username?", "Done: a reset link is on its way."]
    assert run["metrics"]["turns"] == 2 and run["status"] == "passed"
    plain = next(c for c in report["cases"] if c["id"] == "plain")["runs"][0]
    assert plain["metrics"]["turns"] is None
    # The agent: 3 completions in `reset`, 1 in `plain`, 15 tokens each. The user: 3 calls of 1,010.
    assert report["summary"]["tokens_total"] == 4 * 15
    assert report["summary"]["turns_mean"] == 2.0
    assert report["summary"]["user_sim"] == {"calls": 3, "prompt_tokens": 3000, "completion_tokens": 30,
                                             "cost_usd": 3030 * 2.0 / 1e6, "errors": 0}
    assert report["settings"]["user"] == "user-m"
    assert "user simulator (user-m): 3 calls" in out

    before = srv.count
    code, out, err = cli(tmp_path, "rescore", str(sorted((tmp_path / "reports").glob("*.json"))[-1]), srv=srv)
    assert code == 0, out + err
    assert srv.count == before  # the dialogue is frozen in the trace: no agent and no simulator call
    rescored_path = out.split("Rescored report:")[1].split()[0]
    rescored = orjson.loads(Path(tmp_path, rescored_path).read_bytes())
    assert rescored["summary"]["user_sim"]["calls"] == 3  # the frozen dialogues' spend, carried over
    assert next(c for c in rescored["cases"] if c["id"] == "reset")["status"] == "passed"


def test_python_simulator_from_the_suite_block_with_a_python_agent(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(
        "def agent(task):\n"
        "    if 'dana' in task.input:\n"
        "        return task.call_tool('reset_password', username='dana') + ': a reset link is on its way'\n"
        "    return 'What is your username?'\n")
    cases_file = accounts_suite(tmp_path, agent="agent.py:agent", user={"agent": "sim.py:simulate"})
    code, out, err = cli(tmp_path, "run", "--cases", str(cases_file))
    assert code == 0, out + err
    report = newest_report(tmp_path)
    assert report["settings"]["user"] == "sim.py:simulate"
    assert report["summary"]["user_sim"] == {"calls": 3, "prompt_tokens": 0, "completion_tokens": 0,
                                             "cost_usd": 0.0, "errors": 0}


def test_a_scenario_case_without_a_simulator_exits_2(tmp_path: Path) -> None:
    cases_file = accounts_suite(tmp_path, agent="agent.py:agent")
    (tmp_path / "agent.py").write_text("def agent(task):\n    return 'hi'\n")
    code, out, err = cli(tmp_path, "run", "--cases", str(cases_file))
    assert code == 2 and "Traceback" not in err
    assert "case 'reset'" in err and "--user-model" in err and "AGENT_EVAL_USER_MODEL" in err
    code, _, err = cli(tmp_path, "run", "--cases", str(cases_file), "--filter", "plain")
    assert code == 1, err  # no scenario selected: no simulator needed (and `plain` fails its check)
