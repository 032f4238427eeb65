"""A tiny judged suite for the judge and rescore tests: a refund tool, a Python agent, a judge."""
from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from rich.console import Console

from agent_eval.commands.run import run_command
from tests.builders import flags_of
from tests.loopback import router, text
from tests.builders import write_suite

TOOLS = '''
from agent_eval import tool


@tool
def refund(env: dict, order_id: str) -> dict:
    """Refund an order."""
    env["orders"][order_id]["status"] = "refunded"
    return {"order_id": order_id, "status": "refunded"}
'''

AGENT = '''
def agent(task):
    task.call_tool("refund", order_id="A")
    return "Order A refunded."
'''

# The judge's answer is chosen by a marker word in the rubric.
JUDGE_ANSWERS = {"RUBRIC_PASS": "PASS\nthe refund is stated",
                 "RUBRIC_FAIL": "**FAIL** - the amount is missing",
                 "RUBRIC_GARBAGE": "I am not sure about this one."}


def judge_script():
    """A loopback script playing the judge: 1,000 prompt and 20 completion tokens per answer."""

    def answer(messages: list[dict]) -> str:
        prompt = messages[-1]["content"]
        return next(reply for key, reply in JUDGE_ANSWERS.items() if key in prompt)

    return router(lambda messages: text(answer(messages), prompt_tokens=1000, completion_tokens=20))


def judged_suite(folder: Path, cases: list[dict], agent: str = "agent.py:agent", **suite: object) -> Path:
    """Write tools.py, agent.py and cases.json into folder; returns the case file."""
    block = {"name": "judged", "tools": "tools.py", "agent": agent,
             "initial_env": {"orders": {"A": {"status": "delivered"}}}, **suite}
    return write_suite(folder, cases, block, {"tools.py": TOOLS, "agent.py": AGENT})


def case(case_id: str, rubric: str | None, **fields: object) -> dict:
    """A refund case, with a rubric when given one."""
    out = {"id": case_id, "query": f"please refund order A ({case_id})", **fields}
    if rubric:
        out["rubric"] = rubric
    return out


def by_id(report: dict) -> dict[str, dict]:
    return {c["id"]: c for c in report["cases"]}


def isolate_judge_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Clear the LLM variables and put the judge cache in tmp_path; returns `point_at(server)`."""
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "AGENT_EVAL_MODEL", "AGENT_EVAL_JUDGE_MODEL",
                 "AGENT_EVAL_JUDGE_BASE_URL", "AGENT_EVAL_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def point_at(srv) -> None:
        monkeypatch.setenv("AGENT_EVAL_JUDGE_BASE_URL", srv.base_url)
        monkeypatch.setenv("AGENT_EVAL_JUDGE_API_KEY", "judge-key")
        monkeypatch.setenv("AGENT_EVAL_JUDGE_MODEL", "judge-m")

    return point_at


def run_in_process(tmp_path: Path, cases_file: Path, **flags: object) -> tuple[int, dict, str]:
    """`agent-eval run` through app.run_command; returns (exit code, JSON report, terminal text)."""
    out = io.StringIO()
    console = Console(file=out, width=250, no_color=True)
    out_dir = tmp_path / "reports"
    before = set(out_dir.glob("*.json")) if out_dir.exists() else set()
    flags = {"cases": cases_file, "output_dir": out_dir, "no_html": True, **flags}
    code = run_command(flags_of(**flags), console, console)
    new = sorted(set(out_dir.glob("*.json")) - before)
    return code, orjson.loads(new[-1].read_bytes()), out.getvalue()
