"""`summary.scorers`: each scorer's summary and error count over the counted runs.

The counted runs are the suite figures' runs: skipped cases and runs that ended in `error` are left
out, and every other run counts, including those where the scorer raised (as a missing value).
The gate (agent_eval.report.gate.build_stat) recomputes the same automatic figures from stored run values.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from agent_eval.records import RunRecord
from agent_eval.tracebacks import call_user, describe

if TYPE_CHECKING:
    from agent_eval.score.custom import ScorerSet


def is_number(value: Any) -> bool:
    """A finite int or float that is not a bool: what the number summaries count."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def summarize_values(values: list[Any]) -> dict[str, Any] | None:
    """One key's summary over all rows: numbers, bools, or dicts key by key; None for strings/nothing."""
    numbers = [float(v) for v in values if is_number(v)]
    if numbers:
        from agent_eval.score import stats  # numpy: here, not when a scorer module is loaded (validate, --help)

        return {"mean": stats.mean(numbers), "p50": stats.percentile(numbers, 50),
                "p95": stats.percentile(numbers, 95)}
    if any(isinstance(v, bool) for v in values):
        # Over all rows: a run where the scorer raised or left the key out counts as false.
        true_count = sum(1 for v in values if v is True)
        return {"true_count": true_count, "true_fraction": true_count / len(values)}
    if any(isinstance(v, dict) for v in values):
        return summarize_rows([v if isinstance(v, dict) else None for v in values]) or None
    return None


def summarize_rows(rows: list[dict[str, Any] | None]) -> dict[str, Any]:
    """The automatic summary of one scorer's rows (None where it raised), key by key in first-seen order."""
    keys: dict[str, None] = {}
    for row in rows:
        if isinstance(row, dict):
            keys.update(dict.fromkeys(row))
    out = {}
    for key in keys:
        summary = summarize_values([row.get(key) if isinstance(row, dict) else None for row in rows])
        if summary is not None:
            out[key] = summary
    return out


def summarize_scorers(runs: list[RunRecord], scorers: ScorerSet | None = None) -> dict[str, dict[str, Any]]:
    """{name: summary + {"errors": n}} over the counted `runs`, for each scorer of the set (or of the runs).

    `scorers` is the suite's scorers; without it (a stored report), the names are
    those found in the runs and every summary is automatic.
    """
    if scorers:
        entries = [(s.name, s.summarize) for s in scorers.scorers]
    else:
        names: dict[str, None] = {}
        for run in runs:
            names.update(dict.fromkeys(run.get("scorers") or {}))
            names.update(dict.fromkeys(run.get("scorer_errors") or {}))
        entries = [(name, None) for name in names]
    out: dict[str, dict[str, Any]] = {}
    for name, custom in entries:
        rows = [(run.get("scorers") or {}).get(name) for run in runs]
        errors = sum(1 for run in runs if name in (run.get("scorer_errors") or {}))
        summary = summarize_rows(rows) if custom is None else _custom_summary(name, custom, rows)
        out[name] = {**summary, "errors": errors}
    return out


def _custom_summary(name: str, summarize: Any, rows: list[dict[str, Any] | None]) -> dict[str, Any]:
    called = call_user(_summarized, summarize, rows)  # a bug in the user's summarize must not lose the report
    if called.error is not None:
        return {"summarize_error": describe(called.error)}
    result = called.value
    if isinstance(result, dict):
        return dict(result)
    return {} if result is None else {name: result}


def _summarized(summarize: Callable[[list[dict[str, Any] | None]], Any], rows: list[dict[str, Any] | None]) -> Any:
    result = summarize(rows)
    orjson.dumps(result)  # it goes into the JSON report as it is
    return result
