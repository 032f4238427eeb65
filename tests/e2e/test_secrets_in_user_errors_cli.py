"""An exception of user code that quotes a configured key (an agent, a tool, a scorer, a Python user
simulator) is stored and shown with the key as `***`: in the report, the journal, the HTML page, stdout and
stderr, in one process and under --workers (docs/reference.md, "No secret is written")."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.builders import write_suite
from tests.e2e.hardening import agent_eval, all_runs

AGENT_KEY = "agent-key-7f3a9c1d2e"  # no sk- form: only a configured key of 8+ characters is redacted
JUDGE_KEY = "judge-key-0b1c2d3e4f"

TOOLS = '''
import os

from agent_eval import tool


@tool
def leak(env: dict) -> str:
    """Fail, quoting the key."""
    raise PermissionError(f"refused with key {os.environ['OPENAI_API_KEY']}")
'''

AGENT = '''
import os


def agent(task):
    if task.case_id == "tool":
        try:
            task.call_tool("leak")
        except Exception as exc:
            return f"the tool said {exc}"
    if task.case_id == "agent":
        raise RuntimeError(f"cannot go on with {os.environ['OPENAI_API_KEY']} and "
                           f"{os.environ['AGENT_EVAL_JUDGE_API_KEY']}")
    return "fine"
'''

SCORERS = '''
import os


def leaky(output):
    raise ValueError(f"scored with {os.environ['OPENAI_API_KEY']}")
'''

SIM = '''
import os


def simulate(sim):
    raise RuntimeError(f"the user knows {os.environ['OPENAI_API_KEY']}")
'''


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_key_quoted_by_user_code_is_never_stored_or_shown(tmp_path: Path, workers: str) -> None:
    cases = [{"id": "agent", "query": "q", "expect": {"contains": "fine"}},
             {"id": "tool", "query": "q", "expect": {"contains": "fine"}},
             {"id": "scored", "query": "q", "expect": {"contains": "fine"}},
             {"id": "talk", "scenario": "You want help.", "max_turns": 2, "expect": {"contains": "fine"}}]
    path = write_suite(tmp_path, cases, {"name": "leaks", "tools": "tools.py", "agent": "agent.py:agent",
                                         "scorers": ["scorers.py:leaky"], "user": {"agent": "sim.py:simulate"}},
                       {"tools.py": TOOLS, "agent.py": AGENT, "scorers.py": SCORERS, "sim.py": SIM})
    done = agent_eval(tmp_path, "run", "--cases", path, "--workers", workers, "-v", secrets=(AGENT_KEY, JUDGE_KEY),
                      OPENAI_API_KEY=AGENT_KEY, AGENT_EVAL_JUDGE_API_KEY=JUDGE_KEY)
    assert done.code == 1, done.err  # two cases failed (rule 2 comes before the error of rule 3)
    runs = {case: found[0] for case, found in all_runs(done.report).items()}
    assert runs["agent"]["status"] == "failed"
    assert runs["agent"]["trace"]["agent_error"] == "RuntimeError: cannot go on with *** and ***"
    assert "RuntimeError: cannot go on with *** and ***" in runs["agent"]["trace"]["agent_error_traceback"]
    (step,) = runs["tool"]["trace"]["steps"]
    assert step["error"] == "PermissionError: refused with key ***"
    assert "PermissionError: refused with key ***" in step["error_traceback"]
    assert runs["tool"]["trace"]["final_answer"] == "the tool said PermissionError: refused with key ***"
    assert runs["scored"]["scorer_errors"]["leaky"].startswith("ValueError: scored with ***")
    assert runs["talk"]["status"] == "error" and "the user knows ***" in runs["talk"]["error"]
    assert (tmp_path / "reports" / f"{done.report['run_id']}.html").exists()  # scanned for the keys too
