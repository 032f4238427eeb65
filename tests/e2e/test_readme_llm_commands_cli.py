"""The README's real-model commands, run as written against the loopback server.

Each command is read from README.md itself, so a README edit that breaks one fails here. Only the
endpoint changes: `OPENAI_BASE_URL` points at the loopback server, and so does the command's own
`--base-url`. The example suite is copied to a temporary folder, which is the working directory. The
command runs in-process (the words after `agent-eval` are its arguments).
"""
from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

import orjson
import pytest

from tests.cli import run_cli
from tests.loopback import router, text

ROOT = Path(__file__).resolve().parents[2]


def readme_command(starts_with: str) -> list[str]:
    """The README's first command line that starts with `starts_with` (after an optional VAR=... prefix)."""
    for line in (ROOT / "README.md").read_text().splitlines():
        if "agent-eval " not in line:
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError:  # prose with an apostrophe
            continue
        while words and "=" in words[0] and not words[0].startswith("-"):
            words = words[1:]
        if words and " ".join(words).startswith(starts_with):
            return words
    raise AssertionError(f"README.md has no command starting with {starts_with!r}")


def answer(messages: list[dict]):
    """The judge says PASS, a simulated user says one line and then stops (a user who stops before speaking
    is an error, not the agent's failure), and the agent answers without tools."""
    system = messages[0].get("content", "") if messages else ""
    if "evaluator" in system:
        return text("PASS\nfine")
    if "playing the USER" in system:
        spoken = any(m.get("role") == "assistant" for m in messages[1:])  # roles swapped: its own lines
        return text("###STOP###" if spoken else "Hi, I need help with my order.")
    return text("I am sorry, I cannot help with that.")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "cases", tmp_path / "cases")
    return tmp_path


def run(words: list[str], cwd: Path, **env_over: str) -> tuple[int, str, dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    env.update(XDG_CACHE_HOME=str(cwd / "cache"), COLUMNS="200", NO_COLOR="1", **env_over)
    assert words[0].endswith("agent-eval")
    done = run_cli(*words[1:], cwd=cwd, env=env, timeout=300)
    reports = sorted((cwd / "reports").glob("*.json"))
    return done.returncode, done.stderr, orjson.loads(reports[-1].read_bytes()) if reports else {}


def test_the_openai_agent_command_runs_with_the_judge_on_the_agents_model(loopback, workdir: Path) -> None:
    srv = loopback(router(answer))
    words = readme_command(".venv/bin/agent-eval run --cases cases/test_cases.json --agent openai")
    code, err, report = run(words, workdir, OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=srv.base_url)
    assert code in (0, 1), err  # cases may fail against a canned answer; nothing is a configuration error
    assert "Traceback" not in err and report["settings"]["judge_model"] == "gpt-4o-mini"
    assert report["settings"]["sources"]["judge_model"] == "agent"
    assert {r["model"] for r in srv.requests} == {"gpt-4o-mini"}


def test_the_local_server_command_needs_no_key(loopback, workdir: Path) -> None:
    srv = loopback(router(answer))
    words = readme_command(".venv/bin/agent-eval run --agent openai --model llama3.1 --base-url")
    words = [srv.base_url if w.startswith("http://localhost") else w for w in words]
    code, err, report = run(words, workdir)
    assert code in (0, 1), err
    assert report["settings"]["repeat"] == 3 and report["summary"]["runs_errored"] == 0
    assert {h["authorization"] for h in srv.request_headers} == {"Bearer unused"}


def test_the_judge_command_and_the_simulator_command(loopback, workdir: Path) -> None:
    srv = loopback(router(answer))
    words = readme_command("agent-eval run --cases cases/test_cases.json")
    code, err, report = run(words, workdir, OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=srv.base_url,
                            AGENT_EVAL_JUDGE_MODEL="gpt-4o-mini")
    assert code in (0, 1), err
    assert report["summary"]["judge"]["calls"] > 0 and report["summary"]["judge"]["errors"] == 0
    words = readme_command("agent-eval run --user-model gpt-4o-mini")
    code, err, report = run(words, workdir, OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=srv.base_url)
    assert code in (0, 1), err
    assert report["summary"]["user_sim"]["calls"] > 0 and report["summary"]["user_sim"]["errors"] == 0
