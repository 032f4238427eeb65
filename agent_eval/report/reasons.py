"""Why a run or a case did not succeed: one place that the terminal, JUnit and Markdown read it from."""
from __future__ import annotations

from typing import Any

from agent_eval.report.fmt import one_line
from agent_eval.tracebacks import innermost_frame


def run_failure_reason(run: dict[str, Any]) -> str | None:
    """Why one run did not succeed, in one line; None for a successful run."""
    if run.get("status") != "error" and run.get("success"):
        return None
    if run.get("error"):
        return f"error: {run['error']}"
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
    return "did not complete (stop reason not kept without the trace)"


def case_reason(case: dict[str, Any]) -> str:
    """The reason shown for a case: the skip reason, or the first unsuccessful run's reason."""
    status = case.get("status")
    if status == "skipped":
        return str(case.get("skip_reason") or "")
    if status not in ("failed", "error"):
        return ""
    runs = case.get("runs") or []
    # An error case is explained by its errored run; a failed case by its first failed run.
    wanted = "error" if status == "error" else "failed"
    ordered = [r for r in runs if r.get("status") == wanted] + runs
    for run in ordered:
        reason = run_failure_reason(run)
        if reason:
            return one_line(reason)  # never cut: the terminal wraps it, a CI log keeps all of it
    return ""


def agent_error_text(trace: dict[str, Any]) -> str | None:
    """The agent's error with the innermost frame of the user's code beside it:
    `KeyError: 'missing' (demo_agent.py:57 in agent)`."""
    agent_error = trace.get("agent_error")
    where = innermost_frame(trace.get("agent_error_traceback"))
    return f"{agent_error} ({where})" if agent_error and where else agent_error


def _judge_failures(run: dict) -> list[str]:
    lines = []
    for key, label in (("judge", "judge"), ("judge_expected_outcome", "judge:expected_outcome")):
        verdict = run.get(key) or {}
        if str(verdict.get("verdict", "")).upper() == "FAIL":
            lines.append(f"{label}: FAIL: {verdict.get('reason') or '(no reason given)'}")
    return lines


def failure_lines(run: dict) -> list[str]:
    """Why a run failed: its failed checks (name: detail), the judge's reason, or its stop reason."""
    failed = [c for c in run.get("checks") or [] if not c.get("passed")]
    lines = [f"{c.get('name')}: {c.get('detail', '')}" for c in failed]
    names = {c.get("name") for c in failed}
    # The judge's own check entry already carries its reason; add the reason only where it has none.
    lines += [line for line in _judge_failures(run) if line.split(": FAIL", 1)[0] not in names]
    stop = (run.get("trace") or {}).get("stop_reason")
    if stop and stop != "completed":
        agent_error = agent_error_text(run.get("trace") or {})
        lines.append(f"stop_reason: {stop}" + (f" ({agent_error})" if agent_error else ""))
    return lines or ["run did not succeed"]


def first_failure(case: dict) -> str:
    """A failed or errored case's first reason in one line: its first error, or its first failed run's first line."""
    runs = case.get("runs") or []
    if case.get("status") == "error":
        errored = [r for r in runs if r.get("status") == "error"]
        return f"error: {errored[0].get('error')}" if errored else "error: every run errored"
    failed = [r for r in runs if r.get("status") == "failed"]
    return failure_lines(failed[0])[0] if failed else "pass rate below the threshold"
