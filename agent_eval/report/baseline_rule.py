"""Which earlier run `--baseline last` may gate against: a run that could itself be gated.

Each rule is one row of `RULES`: a function from a history row (report/history.py earlier_runs: the
`runs` columns, its `summary` and its case `statuses`) to why that run is no baseline, or None. The first
rule that answers is the reason given. A run's own gate outcome (a regression, nothing to gate) is never
one of them: what the run did is comparable whatever its baseline was.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_eval.report.verdict import plural

Row = dict[str, Any]


def _interrupted(row: Row) -> str | None:
    return "it was interrupted" if row.get("interrupted") else None


def _stopped_early(row: Row) -> str | None:
    return "-x stopped it early" if row.get("stopped_early") else None


def _at_budget(row: Row) -> str | None:
    return "it stopped at its --max-cost budget" if row.get("stopped_at_budget") else None


def _rescored(row: Row) -> str | None:
    return f"it is a rescore of {row['rescored_from']}" if row.get("rescored_from") else None


def _last_failed(row: Row) -> str | None:
    return "it ran only the cases --lf selected" if row.get("last_failed") else None


def _errored(row: Row) -> str | None:
    errored = sum(1 for status in (row.get("statuses") or {}).values() if status == "error")
    return f"{plural(errored, 'case')} ended in error" if errored else None


def _replay_missed(row: Row) -> str | None:
    replay = (row.get("summary") or {}).get("replay")
    if not isinstance(replay, dict):
        return None
    missed = (replay.get("misses") or 0) - (replay.get("live") or 0)
    return f"it had {plural(missed, 'replay miss', 'replay misses')}" if missed > 0 else None


def _all_skipped(row: Row) -> str | None:
    statuses = list((row.get("statuses") or {}).values())
    if not statuses:
        return "it selected no case"
    return "every case was skipped" if all(s == "skipped" for s in statuses) else None


RULES: tuple[Callable[[Row], str | None], ...] = (
    _interrupted, _stopped_early, _at_budget, _rescored, _last_failed, _errored, _replay_missed, _all_skipped,
)


def why_not_baseline(row: Row, wanted: set[str]) -> str | None:
    """Why the history row cannot be the baseline of a run selecting the case ids `wanted`; None if it can."""
    for rule in RULES:
        why = rule(row)
        if why:
            return why
    missing = sorted(wanted - set(row.get("statuses") or {}))
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        return f"it did not select {plural(len(missing), 'case')} selected now ({shown})"
    return None
