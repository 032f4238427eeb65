"""The verdict line: `FAIL (exit 1): 2 cases failed`, the same words in the terminal, Markdown, JUnit and HTML.

The line names what actually decided the exit code, read from the report: each cause is one row of
`CAUSES` (the exit code it explains, and a function giving its words or None when it does not apply);
every row that applies is named, in that order, so a run that both failed a case and regressed says both.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_eval.errors import EXIT_MEANINGS
from agent_eval.records import Report
from agent_eval.report.fmt import format_cost


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`1 case`, `2 cases` (`nouns` when the plural is not noun + s)."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def _summary(report: Report) -> dict[str, Any]:
    summary = report.get("summary")
    return summary if isinstance(summary, dict) else {}


def _count(report: Report, key: str) -> int:
    value = _summary(report).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def budget_line(report: Report) -> str:
    """`stopped at the budget: $4.9800 of $5.0000, 212 of 300 runs` (runs finished of the runs selected)."""
    budget = _summary(report).get("budget") or {}
    spent, limit = budget.get("spent_usd"), budget.get("limit_usd")
    repeat = (report.get("settings") or {}).get("repeat") or 1
    cases = [c for c in report.get("cases") or [] if c.get("status") != "skipped"]
    finished = sum(len(c.get("runs") or []) for c in cases)
    shown = format_cost(spent) if isinstance(spent, (int, float)) else "an unknown amount"
    of = f" of {format_cost(limit)}" if isinstance(limit, (int, float)) else ""
    return f"stopped at the budget: {shown}{of}, {finished} of {len(cases) * repeat} runs"


def _failed(report: Report) -> str | None:
    failed = _count(report, "cases_failed")
    return f"{plural(failed, 'case')} failed" if failed else None


def _stopped_early(report: Report) -> str | None:
    if not report.get("stopped_early"):
        return None
    return f"-x stopped the run after the first failed run ({plural(_count(report, 'cases_not_run'), 'case')} not run)"


def _regressed(report: Report) -> str | None:
    gate = report.get("gate")
    return "the baseline gate found a regression" if isinstance(gate, dict) and gate.get("regression") else None


def _errored(report: Report) -> str | None:
    errored = _count(report, "cases_errored")
    if not errored:
        return None
    replay = _summary(report).get("replay")
    missed = 0
    if isinstance(replay, dict):
        missed = (replay.get("misses") or 0) - (replay.get("live") or 0)
    why = f" ({plural(missed, 'replay miss', 'replay misses')})" if missed > 0 else ""
    return f"{plural(errored, 'case')} ended in an infrastructure error{why}"


def _at_budget(report: Report) -> str | None:
    if not report.get("stopped_at_budget"):
        return None
    if _count(report, "cases_failed"):
        return budget_line(report)
    return f"{budget_line(report)} (not a pass: {plural(_count(report, 'cases_not_run'), 'case')} not run)"


def _all_skipped(report: Report) -> str | None:
    total = _count(report, "cases_total")
    return "every selected case was skipped" if total and _count(report, "cases_skipped") == total else None


def _nothing_to_gate(report: Report) -> str | None:
    gate = report.get("gate")
    why = gate.get("nothing_to_gate") if isinstance(gate, dict) else None
    return f"the baseline has nothing to gate: {why}" if why else None


def _not_run(report: Report) -> str | None:
    if report.get("stopped_early") or report.get("stopped_at_budget"):
        return None  # named with what stopped them
    not_run = _count(report, "cases_not_run")
    return f"{plural(not_run, 'case')} not run" if not_run else None


_FAILED, _ERROR, _BOTH = frozenset({1}), frozenset({2}), frozenset({1, 2})
CAUSES: tuple[tuple[frozenset[int], Callable[[Report], str | None]], ...] = (
    (_FAILED, _failed),
    (_FAILED, _stopped_early),
    (_FAILED, _regressed),
    (_BOTH, _errored),
    (_BOTH, _at_budget),
    (_ERROR, _all_skipped),
    (_BOTH, _nothing_to_gate),
    (_ERROR, _not_run),
)
"""Each (exit codes, cause): the causes named, in this order, on the verdict line of a run that exited with one
of those codes."""


def verdict_parts(report: Report) -> tuple[str, int | None, str]:
    """(word, exit code, meaning): `("FAIL", 1, "2 cases failed")`."""
    code = report.get("exit_code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    word, meaning = EXIT_MEANINGS.get(code if code is not None else -1, ("EXIT", "unexpected exit code"))
    causes = [text for codes, cause in CAUSES if code in codes for text in [cause(report)] if text]
    return word, code, "; ".join(causes) or meaning


def verdict_line(report: Report) -> str:
    """The verdict as plain text: `FAIL (exit 1): 2 cases failed`."""
    word, code, meaning = verdict_parts(report)
    return f"{word} (exit {code}): {meaning}"
