"""`cmd:` agents: a program started per user message, its environment, its state folder, its failures."""
from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import pytest

from agent_eval.errors import ConfigError
from agent_eval.run.agents import load_agent
from agent_eval.run.episode import play_run
from agent_eval.run.world import EnvTemplate
from agent_eval.suite.tools import ToolSet


def noop(env: dict) -> str:
    """Do nothing."""
    return "ok"


TOOLS = ToolSet.from_functions([noop])

SCRIPT = '''
import json, os, pathlib, sys
message = sys.stdin.readline().rstrip("\\n")
state = pathlib.Path(os.environ["AGENT_EVAL_STATE_DIR"])
count = int((state / "n").read_text()) + 1 if (state / "n").exists() else 1
(state / "n").write_text(str(count))
keys = sorted(k for k in os.environ if k.startswith("AGENT_EVAL_") and k.endswith("_API_KEY"))
messages = json.load(open(os.environ["AGENT_EVAL_MESSAGES_FILE"]))
print(json.dumps({"message": message, "turn": count, "cwd": os.getcwd(), "keys": keys,
                  "roles": [m["role"] for m in messages], "state": str(state),
                  "base_url": os.environ["OPENAI_BASE_URL"], "token": os.environ["OPENAI_API_KEY"],
                  "model": os.environ["AGENT_EVAL_MODEL"], "mcp": os.environ["AGENT_EVAL_MCP_URL"],
                  "case": os.environ["AGENT_EVAL_CASE_ID"], "trial": os.environ["AGENT_EVAL_TRIAL"]}))
if message == "fail":
    print("line one\\nthe last line", file=sys.stderr)
    sys.exit(3)
if message == "daemon":  # a child in the background that keeps stdout and stderr open after we exit
    import subprocess
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)  # daemon-child"])
    print("left a daemon")
    sys.exit(0)
if message == "flood":  # 80 MiB on stdout
    chunk = "y" * 2**20
    for _ in range(80):
        sys.stdout.write(chunk)
    sys.exit(0)
if message == "noisy":  # 40 MiB on stderr, then a failure
    for n in range(400_000):
        print(f"noise line {n} " + "z" * 90, file=sys.stderr)
    sys.exit(5)
if message == "hang":
    import subprocess, time
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # a child in its group
    time.sleep(60)
'''


def play(folder: Path, case: dict, timeout: float | None = None):
    agent = load_agent(f"cmd:{sys.executable} agent_script.py", folder, {"model": "m1", "cases_dir": str(folder)})
    return asyncio.run(play_run(case, 1, agent, TOOLS, EnvTemplate({}), "be brief", timeout))


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "agent_script.py").write_text(SCRIPT)
    monkeypatch.setenv("AGENT_EVAL_JUDGE_API_KEY", "secret")
    monkeypatch.setenv("AGENT_EVAL_USER_API_KEY", "secret")
    return tmp_path


def test_the_program_gets_each_message_and_the_runs_variables(folder: Path) -> None:
    played = play(folder, {"id": "c9", "messages": ["hi", "again"]})
    first, second = (json.loads(reply) for reply in played.trace["replies"])
    assert (first["message"], first["turn"], second["message"], second["turn"]) == ("hi", 1, "again", 2)
    assert first["cwd"] == str(folder) and first["keys"] == []  # no provider key is handed on
    assert first["roles"] == ["system", "user"] and second["roles"] == ["system", "user", "assistant", "user"]
    assert first["base_url"].startswith("http://127.0.0.1:") and first["base_url"].endswith("/v1")
    assert first["token"].startswith("ae-") and first["model"] == "m1" and first["mcp"].endswith("/mcp")
    assert (first["case"], first["trial"]) == ("c9", "1")
    assert first["state"] == second["state"] and not Path(first["state"]).exists()  # removed after the run


def test_a_non_zero_exit_is_the_agents_error_with_its_stderr(folder: Path) -> None:
    played = play(folder, {"id": "c1", "query": "fail"})
    trace = played.trace
    assert played.error is None
    assert trace["stop_reason"] == "agent_error"
    assert trace["agent_error"] == "the agent command exited with status 3"
    assert trace["agent_error_traceback"] == "line one\nthe last line"


def test_timeout_kills_the_process_group(folder: Path) -> None:
    played = play(folder, {"id": "c1", "query": "hang"}, timeout=2.0)
    assert played.trace["stop_reason"] == "timeout"
    time.sleep(0.5)  # the kill is sent at once; let the processes be reaped
    sleepers = [line for line in os.popen("ps -eo args").read().splitlines() if "time.sleep(60)" in line
                and "python" in line and "-c" in line]
    assert sleepers == []


def test_a_program_that_is_not_found_is_a_clear_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found on PATH"):
        load_agent("cmd:no-such-program-here --x", tmp_path, {"cases_dir": str(tmp_path)})
    with pytest.raises(ConfigError, match="not an executable file"):
        load_agent("cmd:./missing.sh", tmp_path, {"cases_dir": str(tmp_path)})
    with pytest.raises(ConfigError, match="names no command"):
        load_agent("cmd:  ", tmp_path, {"cases_dir": str(tmp_path)})


def test_a_child_left_holding_the_pipes_does_not_hold_the_reply(folder: Path) -> None:
    started = time.monotonic()
    played = play(folder, {"id": "c1", "query": "daemon"}, timeout=30.0)
    assert played.trace["stop_reason"] == "completed", played.trace["agent_error"]
    assert played.trace["final_answer"].endswith("left a daemon")
    assert time.monotonic() - started < 25  # a hang guard: it would otherwise wait for the 30 s timeout
    time.sleep(0.5)
    assert [line for line in os.popen("ps -eo args").read().splitlines() if "daemon-child" in line] == []


def test_a_reply_over_64_mib_is_the_agents_error(folder: Path) -> None:
    played = play(folder, {"id": "c1", "query": "flood"})
    assert played.trace["stop_reason"] == "agent_error"
    assert played.trace["agent_error"].startswith("the agent command wrote more than 64 MiB to stdout")
    assert played.trace["final_answer"] is None


def test_a_flood_on_stderr_keeps_its_last_lines_only(folder: Path) -> None:
    played = play(folder, {"id": "c1", "query": "noisy"})
    assert played.trace["agent_error"] == "the agent command exited with status 5"
    lines = played.trace["agent_error_traceback"].splitlines()
    assert len(lines) == 20 and lines[-1].startswith("noise line 399999 ")


def test_the_child_sees_no_other_endpoint_nor_any_url_with_a_secret(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "env_script.py").write_text("import json, os, sys\nsys.stdin.readline()\n"
                                            "print(json.dumps(dict(os.environ)))\n")
    monkeypatch.setenv("AGENT_EVAL_JUDGE_BASE_URL", "https://judge.example/v1")
    monkeypatch.setenv("AGENT_EVAL_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("AGENT_EVAL_USER_BASE_URL", "https://sim.example/v1")
    monkeypatch.setenv("AGENT_EVAL_USER_MODEL", "sim-model")
    monkeypatch.setenv("HTTPS_PROXY", "http://alice:hunter2@proxy.example:3128")
    monkeypatch.setenv("HOOK_URL", "https://hooks.example/in?sig=abcdef&x=1")
    monkeypatch.setenv("PLAIN_URL", "https://docs.example/page?x=1")
    agent = load_agent(f"cmd:{sys.executable} env_script.py", tmp_path, {"model": "m1", "cases_dir": str(tmp_path)})
    played = asyncio.run(play_run({"id": "c1", "query": "hi"}, 0, agent, TOOLS, EnvTemplate({}), None, None))
    seen = json.loads(played.trace["final_answer"])
    assert not [k for k in seen if k.startswith(("AGENT_EVAL_JUDGE_", "AGENT_EVAL_USER_"))]
    assert "HTTPS_PROXY" not in seen and "HOOK_URL" not in seen
    assert seen["PLAIN_URL"] == "https://docs.example/page?x=1"  # a URL with no secret is the user's business
    assert seen["OPENAI_BASE_URL"].startswith("http://127.0.0.1:") and seen["OPENAI_API_KEY"].startswith("ae-")
