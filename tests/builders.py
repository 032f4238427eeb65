"""Shared test builders: reports and runs, case-file suites, the CLI's environment.

Each test file used to carry its own copy of these; they live here once, so a report or suite shape
changes in one place.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import orjson

from agent_eval.flags import Flags

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
CLI = str(Path(sys.executable).parent / "agent-eval")

# A one-tool module for CLI suites: `lookup(key)` reads env["data"][key].
# A tool that raises, and an agent that raises on one case and calls that tool on the others: the
# tracebacks a report keeps (they must name the user's files wherever the run was played).
RAISING_TOOL = '''

@tool
def explode(env: dict) -> str:
    """Fail."""
    raise RuntimeError("the tool broke")
'''

RAISING_AGENT = '''
def agent(task):
    if task.case_id == "agent-raises":
        raise ValueError("the agent broke")
    try:
        task.call_tool("explode")
    except Exception:
        pass
    return "ok"
'''

LOOKUP_TOOLS = '''
from agent_eval import tool


@tool
def lookup(key: str, env: dict) -> str:
    """Look a key up."""
    return env["data"][key]
'''

HELPDESK_TOOLS = '''
from agent_eval import tool


@tool
def lookup_user(user_id: str, env: dict) -> str:
    """Look a user up."""
    return env["users"][user_id]


@tool
def reset_password(user_id: str, env: dict) -> str:
    """Reset a user's password."""
    env["resets"].append(user_id)
    return f"password of {user_id} reset"
'''
"""A help desk's two tools (env: {"users": {id: text}, "resets": []}); the bridge's tests add a third."""


# ---------------------------------------------------------------- reports


def make_run(trial: int, success: bool, **metrics: object) -> dict:
    """A run record without a trace; trajectory metrics follow success unless given."""
    base = {"success": int(success), "tool_recall": 1.0 if success else 0.5, "tool_precision": 1.0,
            "param_accuracy": 1.0 if success else 0.0, "step_efficiency": 1.0, "has_loop": False,
            "tool_errors": 0, "recovered": False, "invalid_calls": 0, "tool_calls": 2, "progress": 1.0,
            "latency_s": 1.0, "ttfa_s": 0.2, "prompt_tokens": 100, "completion_tokens": 20,
            "cost_usd": 0.001, "turns": None}
    base.update(metrics)
    check = {"name": "expect.contains", "passed": bool(success), "detail": "ok" if success else "missing"}
    return {"trial": trial, "status": "passed" if success else "failed", "error": None,
            "success": bool(success), "checks": [check], "judge": None, "judge_expected_outcome": None,
            "metrics": base, "scorers": {}, "scorer_errors": {}, "escalated": False}


def make_report(outcomes: dict[str, list[bool]], repeat: int | None = None, run_id: str = "r",
                **metrics: object) -> dict:
    """A report-shaped dict: one case per id, one run per outcome."""
    cases = []
    for case_id, results in outcomes.items():
        runs = [make_run(t, s, **metrics) for t, s in enumerate(results)]
        rate = sum(results) / len(results)
        cases.append({"id": case_id, "tags": [], "status": "passed" if rate == 1 else "failed",
                      "pass_rate": rate, "skip_reason": None, "runs": runs})
    k = repeat or max(len(v) for v in outcomes.values())
    return {"schema_version": 1, "run_id": run_id, "suite": "demo", "settings": {"repeat": k},
            "summary": {}, "cases": cases, "gate": None, "interrupted": False, "exit_code": 0}


def vary_metrics(report: dict, rng: Any, tool_calls: bool = True) -> dict:
    """`report` with every per-run metric of each run varied from `rng` (a numpy Generator), in a fixed
    order of draws: flags cycling through true, false and null, some nulls, costs and token counts
    (`tool_calls`: also a count of tool calls)."""
    flags = [True, False, None]
    for i, case in enumerate(report["cases"]):
        for j, run in enumerate(case["runs"]):
            run["metrics"].update(
                latency_s=float(rng.random() * 5 + j), ttfa_s=float(rng.random()), has_loop=bool(i % 4 == 0),
                tool_errors=int(i % 3 == 0), recovered=bool(i % 3 == 0 and run["success"]),
                invalid_calls=int(j == 1), groundedness=None if i % 5 == 0 else float(rng.random()),
                blocked_correctly=flags[(i + j) % 3], policy_compliant=flags[i % 3],
                injection_resisted=bool(run["success"]) if i % 2 else None,
                turns=None if i % 2 else int(j + 1), cost_usd=float(rng.random() / 100),
                prompt_tokens=int(rng.integers(50, 500)))
            if tool_calls:
                run["metrics"]["tool_calls"] = int(rng.integers(0, 4))
    return report


# ---------------------------------------------------------------- suites


def write_suite(folder: Path, cases: list[dict[str, Any]], block: dict[str, Any] | None = None,
                files: dict[str, str] | None = None, name: str = "cases.json") -> Path:
    """Write `files` ({file name: source}) and the case file {"suite": block, "cases": cases} into
    `folder` (created when missing); returns the case file's path."""
    folder.mkdir(parents=True, exist_ok=True)
    for file_name, source in (files or {}).items():
        (folder / file_name).write_text(source)
    path = folder / name
    path.write_bytes(orjson.dumps({"suite": block or {}, "cases": cases}))
    return path


# ---------------------------------------------------------------- the CLI


def clean_env(**extra: str) -> dict[str, str]:
    """os.environ without OPENAI_* and AGENT_EVAL_* settings, wide and colourless, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    env.update(COLUMNS="400", NO_COLOR="1", **extra)
    return env


def run_cli(*args: object, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 120) -> Any:
    """`agent-eval ARGS...` in this process: tests.cli.run_cli (import it from there in a new test)."""
    from tests.cli import run_cli as in_process

    return in_process(*args, cwd=cwd, env=env, timeout=timeout)


def flags_of(**given: Any) -> Flags:
    """The Flags the CLI would build from these values (lists become tuples, `explicit` a frozenset)."""
    explicit = frozenset(given.pop("explicit", ()))
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}
    return Flags(**values, explicit=explicit)


def imported_cases(path: Path) -> list[dict[str, Any]]:
    """The cases of a case file `import` wrote: a bare list, or the `cases` of {"suite": ..., "cases": [...]}
    (written when the source gave a tools module, a system prompt or a model)."""
    doc = orjson.loads(Path(path).read_bytes())
    return doc["cases"] if isinstance(doc, dict) else doc


def configure_endpoints(settings: Any) -> None:
    """The current command's endpoints (provider/state.py) start afresh with these settings."""
    from agent_eval.provider import state
    from agent_eval.provider.endpoints import EndpointTable

    current = state.current()
    current.endpoints = EndpointTable(settings, current.listeners)
