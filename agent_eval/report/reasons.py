"""Why a run or a case did not succeed: the one place that the terminal, Markdown, JUnit and the HTML page
read it from, so a case's reason is the same string everywhere.

A case's reason is its first failed run's first cause, in one order: the infrastructure error, the agent's
error or stop reason, the checks in their family order (the judge's entries come last), then the judge's
verdict. When that run's tool calls raised something other than ToolError (a bug in a tool, not an error
the tool meant to report), the first such exception is added: `tool KeyError: 'accounts' (tools.py:12 in
reset_password)`.
"""
from __future__ import annotations

from typing import Any

from agent_eval.records import CaseEntry, RunRecord, Trace, field_of
from agent_eval.report.fmt import one_line
from agent_eval.score.judge import CRITERIA
from agent_eval.tracebacks import innermost_frame, user_frames

LITE_KEY = "tool_exceptions"
"""A run kept in memory without its steps (run/runner.lite_run) carries its raised tool calls here."""


def _raised_type(text: str) -> str:
    """The exception's type name on a traceback's last line (`agent_eval.errors.ToolError: x` -> `ToolError`)."""
    last = text.rstrip().rsplit("\n", 1)[-1]
    return last.split(":", 1)[0].strip().rsplit(".", 1)[-1]


def is_raised_tool_call(step: Any) -> bool:
    """True for a tool call whose function raised something other than ToolError (it has the user's traceback)."""
    if not isinstance(step, dict):
        return False
    error, text = step.get("error"), step.get("error_traceback")
    return bool(error) and isinstance(text, str) and bool(text) and not _raised_type(text).endswith("ToolError")


def raised_tool_calls(trace: Trace | None) -> list[dict[str, Any]]:
    """The tool calls of a run that raised (see is_raised_tool_call): [{step, name, error, error_traceback}]."""
    trace = trace or {}
    if LITE_KEY in trace:
        return [s for s in field_of(trace, LITE_KEY) or [] if isinstance(s, dict)]
    return [{k: s.get(k) for k in ("step", "name", "error", "error_traceback")}
            for s in trace.get("steps") or [] if is_raised_tool_call(s)]


def tool_exception_text(call: dict[str, Any]) -> str:
    """`tool KeyError: 'accounts' (tools.py:12 in reset_password)`."""
    where = innermost_frame(call.get("error_traceback"))
    return f"tool {call.get('error')}" + (f" ({where})" if where else "")


def _first_cause(run: RunRecord) -> str:
    trace = run.get("trace") or {}
    stop_reason = trace.get("stop_reason")
    # A run that did not complete failed whatever its checks say, so the stop reason comes first.
    if stop_reason and stop_reason != "completed":
        agent_error = agent_error_text(trace)
        return f"{stop_reason}: {agent_error}" if agent_error else str(stop_reason)
    for check in run.get("checks") or []:
        if not check.get("passed"):
            detail = check.get("detail")
            return f"{check.get('name')}: {detail}" if detail else str(check.get("name"))
    judged = _judge_failures(run)
    if judged:
        return judged[0]
    return "did not complete (stop reason not kept without the trace)"


def run_failure_reason(run: RunRecord) -> str | None:
    """Why one run did not succeed, in one line; None for a successful run."""
    if run.get("status") not in ("failed", "error") and run.get("success"):
        return None
    if run.get("error"):
        return f"error: {run['error']}"
    cause = _first_cause(run)
    raised = raised_tool_calls(run.get("trace"))
    return f"{cause}; {tool_exception_text(raised[0])}" if raised else cause


def case_reason(case: CaseEntry) -> str:
    """The reason shown for a case everywhere: the skip reason, or its first unsuccessful run's reason
    (an error case's first errored run, a failed case's first failed run); "" for a case that passed."""
    status = case.get("status")
    if status == "skipped":
        return str(case.get("skip_reason") or "")
    if status not in ("failed", "error"):
        return ""
    runs = case.get("runs") or []
    wanted = "error" if status == "error" else "failed"
    ordered = [r for r in runs if r.get("status") == wanted] + runs
    for run in ordered:
        reason = run_failure_reason(run)
        if reason:
            return one_line(reason)  # never cut: the terminal wraps it, a CI log keeps all of it
    return "every run errored" if status == "error" else "pass rate below the threshold"


def judge_off_note(case: CaseEntry) -> str:
    """` (judge off)`, shown beside the case's status in every case table, when --no-judge left its rubric or
    expected outcome unasked (a run of it has judge_skipped); "" otherwise."""
    return " (judge off)" if any(run.get("judge_skipped") for run in case.get("runs") or []) else ""


def agent_error_text(trace: Trace) -> str | None:
    """The agent's error with the innermost frame of the user's code beside it:
    `KeyError: 'missing' (demo_agent.py:57 in agent)`."""
    agent_error = trace.get("agent_error")
    where = innermost_frame(trace.get("agent_error_traceback"))
    return f"{agent_error} ({where})" if agent_error and where else agent_error


def _judge_failures(run: RunRecord) -> list[str]:
    lines = []
    for criterion in CRITERIA:
        verdict = field_of(run, criterion.record) or {}
        if str(verdict.get("verdict", "")).upper() == "FAIL":
            lines.append(f"{criterion.check}: FAIL: {verdict.get('reason') or '(no reason given)'}")
    return lines


def failure_lines(run: RunRecord) -> list[str]:
    """Every reason a run failed: its stop reason, its failed checks (name: detail), the judge's reason,
    and each tool call that raised."""
    lines = []
    trace = run.get("trace") or {}
    stop = trace.get("stop_reason")
    if stop and stop != "completed":
        agent_error = agent_error_text(trace)
        lines.append(f"stop_reason: {stop}" + (f" ({agent_error})" if agent_error else ""))
    failed = [c for c in run.get("checks") or [] if not c.get("passed")]
    lines += [f"{c.get('name')}: {c.get('detail', '')}" for c in failed]
    names = {c.get("name") for c in failed}
    # The judge's own check entry already carries its reason; add the reason only where it has none.
    lines += [line for line in _judge_failures(run) if line.split(": FAIL", 1)[0] not in names]
    lines += [tool_exception_text(call) for call in raised_tool_calls(trace)]
    return lines or ["run did not succeed"]


def frames_lines(run: RunRecord) -> list[str]:
    """-v: the user's frames of the agent's exception and of each tool call that raised, innermost last."""
    trace = run.get("trace") or {}
    lines = []
    if trace.get("agent_error") and user_frames(trace.get("agent_error_traceback")):
        lines.append(f"the agent raised {trace['agent_error']}")
        lines += [f"  at {frame}" for frame in user_frames(trace.get("agent_error_traceback"))]
    for call in raised_tool_calls(trace):
        lines.append(f"tool {call.get('name')} (step {call.get('step')}) raised {call.get('error')}")
        lines += [f"  at {frame}" for frame in user_frames(call.get("error_traceback"))]
    return lines
