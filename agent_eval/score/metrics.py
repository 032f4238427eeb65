"""Metrics: per run, per case and for the suite. Pure functions over plain dicts.

Adding a per-run metric means one function returning its keys and one entry in `RUN_METRIC_GROUPS`;
adding a suite metric means one row of score/metric_registry.py, whose statistic `figure` reads.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_eval.plugins.calls import Raised
from agent_eval.records import Case, CaseEntry, CaseStatus, Check, RunRecord, Step, Trace
from agent_eval.score import stats
from agent_eval.score.intervals import counted_cases, suite_intervals
from agent_eval.score.metric_registry import SUITE_METRIC_TABLE, Statistic, SuiteMetric
from agent_eval.score.call_matching import max_matched_fields
from agent_eval.score.matchers import field_names, json_equal
from agent_eval.score.safety_metrics import safety_metrics, share_true
from agent_eval.score.custom_summary import summarize_scorers
from agent_eval.score.prices import token_cost
from agent_eval.provider.tokens import TOKEN_KEYS, invalid_counts, sum_tokens

if TYPE_CHECKING:
    from agent_eval.score.custom import ScorerSet

RunMetricGroup = Callable[[Case, Trace, list[Check], bool, "float | None"], dict[str, Any]]


# --- per run -------------------------------------------------------------------------------


def trajectory_metrics(case: Case, trace: Trace, checks: list[Check], success: bool, cost_usd: float | None,
                       ) -> dict[str, Any]:
    """tool_recall, tool_precision, param_accuracy, step_efficiency; all None without expected_tools."""
    if "expected_tools" not in case:
        return dict.fromkeys(("tool_recall", "tool_precision", "param_accuracy", "step_efficiency"))
    expected = case["expected_tools"] or []
    steps = trace.get("steps") or []
    e_names = Counter(call["name"] for call in expected)
    a_names = Counter(step["name"] for step in steps)
    n_e, n_a = len(expected), len(steps)
    common = sum((e_names & a_names).values())
    return {
        "tool_recall": common / n_e if n_e else 1.0,
        "tool_precision": common / n_a if n_a else (1.0 if n_e == 0 else 0.0),
        "param_accuracy": param_accuracy(expected, steps),
        "step_efficiency": min(1.0, n_e / n_a) if n_a else (1.0 if n_e == 0 else 0.0),
    }


def param_accuracy(expected: list[dict[str, Any]], steps: list[Step]) -> float:
    """Matched fields / all fields under the best one-to-one pairing of same-name calls; 1.0 if no field."""
    total = sum(len(field_names(call.get("args") or {})) for call in expected)
    if total == 0:
        return 1.0
    return max_matched_fields(expected, steps) / total


def call_metrics(case: Case, trace: Trace, checks: list[Check], success: bool, cost_usd: float | None,
                 ) -> dict[str, Any]:
    """has_loop, tool_errors, recovered, invalid_calls and tool_calls, over every recorded step."""
    steps = trace.get("steps") or []
    tool_errors = sum(1 for s in steps if s.get("error") is not None)
    return {
        "has_loop": has_loop(steps),
        "tool_errors": tool_errors,
        "recovered": tool_errors > 0 and bool(success),
        "invalid_calls": sum(1 for s in steps if s.get("invalid_args") is not None),
        "tool_calls": len(steps),
    }


def has_loop(steps: Sequence[Step]) -> bool:
    """True when two consecutive steps have the same name and JSON-equal args."""
    for prev, cur in itertools.pairwise(steps):
        if prev["name"] != cur["name"]:
            continue
        a, b = prev["args"], cur["args"]
        if isinstance(a, str) or isinstance(b, str):
            if a == b:
                return True
        elif json_equal(a, b):
            return True
    return False


def outcome_metrics(case: Case, trace: Trace, checks: list[Check], success: bool, cost_usd: float | None,
                    ) -> dict[str, Any]:
    """success, progress, latency, tokens, cost and turns."""
    calls = trace.get("llm_calls") or []
    return {
        "success": int(bool(success)),
        "progress": sum(1 for c in checks if c["passed"]) / len(checks) if checks else None,
        "latency_s": trace.get("latency_s"),
        "ttfa_s": trace.get("ttfa_s"),
        "prompt_tokens": sum_tokens(c.get("prompt_tokens") for c in calls),
        "completion_tokens": sum_tokens(c.get("completion_tokens") for c in calls),
        "usage_invalid": invalid_counts(calls),
        "cost_usd": cost_usd,
        "turns": len(trace.get("user_messages") or []) if "scenario" in case else None,
    }


RUN_METRIC_GROUPS: list[RunMetricGroup] = [trajectory_metrics, call_metrics, outcome_metrics, safety_metrics]

RUN_METRICS: list[str] = [
    "success",
    "tool_recall",
    "tool_precision",
    "param_accuracy",
    "step_efficiency",
    "has_loop",
    "tool_errors",
    "recovered",
    "invalid_calls",
    "tool_calls",
    "progress",
    "groundedness",
    "policy_violations",
    "latency_s",
    "ttfa_s",
    "prompt_tokens",
    "completion_tokens",
    "usage_invalid",
    "cost_usd",
    "turns",
]


def run_metrics(case: Case, trace: Trace, checks: list[Check], success: bool, cost_usd: float | None,
                errors: dict[str, str] | None = None) -> dict[str, Any]:
    """Every per-run metric of one run (plus `tool_calls`), keys in `RUN_METRICS` order first. A plugin's
    run value whose code raised is null, and `errors` gets its key and the message."""
    merged: dict[str, Any] = {}
    for group in RUN_METRIC_GROUPS:
        merged.update(group(case, trace, checks, success, cost_usd))
    ordered = {k: merged.pop(k) for k in RUN_METRICS if k in merged}
    ordered.update(merged)
    for metric in SUITE_METRIC_TABLE:  # a plugin's row brings its own per-run value, through the guard
        if metric.run_value is not None and metric.statistic.key is not None:
            value = metric.run_value(case, trace, checks, success, cost_usd)
            if type(value) is Raised:
                if errors is not None:
                    errors[metric.statistic.key] = value.message
                value = None
            ordered[metric.statistic.key] = value
    return ordered


def price_usage(llm_calls: list[dict[str, Any]], pricing: dict[str, Any] | None, run_model: str | None) -> float | None:
    """The run's cost in USD from its usage records (suite pricing, then genai-prices); None if a record's
    model has no price, or a token count is invalid (null) or the run's sum too large for JSON's integers."""
    if invalid_counts(llm_calls) or any(sum_tokens(c.get(k) for c in llm_calls) is None for k in TOKEN_KEYS):
        return None
    cost = 0.0
    for call in llm_calls:
        part = token_cost(call.get("model") or run_model, call.get("prompt_tokens") or 0,
                          call.get("completion_tokens") or 0, pricing)
        if part is None:
            return None
        cost += part
    return cost


# --- per case ------------------------------------------------------------------------------


def skipped_entry(case: Mapping[str, Any], reason: str | None) -> CaseEntry:
    """The report's entry of a case that was not run (`--no-judge`, `requires`, a recording that is missing)."""
    return {"id": case["id"], "tags": case.get("tags", []), "status": "skipped", "pass_rate": None,
            "skip_reason": reason, "runs": []}


def case_entry(case: Mapping[str, Any], runs: list[RunRecord], threshold: float, no_runs: CaseStatus = "error",
               ) -> CaseEntry:
    """The report's entry of one case: its status and pass rate over `runs` (`no_runs` is its status when
    it has none, e.g. `not_run` after Ctrl-C)."""
    status, pass_rate = case_status(runs, threshold) if runs else (no_runs, None)
    return {"id": case["id"], "tags": case.get("tags", []), "status": status, "pass_rate": pass_rate,
            "skip_reason": None, "runs": runs}


def case_status(runs: list[RunRecord], threshold: float) -> tuple[CaseStatus, float | None]:
    """(status, pass_rate) of a case from its runs, per docs/metrics.md."""
    counted = [r for r in runs if r["status"] != "error"]
    if not counted:
        return "error", None
    pass_rate = sum(1 for r in counted if r["success"]) / len(counted)
    if pass_rate < threshold:
        return "failed", pass_rate
    if len(counted) < len(runs):
        return "error", pass_rate
    return "passed", pass_rate


def is_flaky(runs: Sequence[Mapping[str, Any]]) -> bool:
    """True when the case has 2 or more runs that did not end in error, at least one passing and one failing."""
    outcomes = [bool(r.get("success")) for r in runs if r.get("status") != "error"]
    return len(outcomes) >= 2 and any(outcomes) and not all(outcomes)


# --- suite ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Counted:
    """What the suite figures are computed from: skipped cases and errored runs already left out."""

    counts: list[tuple[int, int]]  # (n, c) per counted case
    runs: list[dict[str, Any]]  # the per-run metrics of every counted run
    successes: int
    repeat: int

    def column(self, key: str) -> list[Any]:
        """The values of one per-run metric, None where a run lacks it."""
        return [m.get(key) for m in self.runs]


def _pass_hat(d: Counted) -> dict[str, float | None]:
    return {str(k): stats.pass_hat(d.counts, k) for k in range(1, d.repeat + 1)}


_PASS_FIGURES: dict[str, Callable[[Counted], Any]] = {
    "at_1": lambda d: stats.mean_rate(d.counts),
    "hat": _pass_hat,
    "hat_k": lambda d: stats.pass_hat(d.counts, d.repeat) if d.repeat >= 1 else None,
    "at_k": lambda d: stats.pass_at_k(d.counts, d.repeat) if d.repeat >= 1 else None,
}
"""The pass-count estimators (a `pass` statistic's key) over the counted cases' (n, c)."""


def _share(d: Counted, st: Statistic) -> float | None:
    if st.among is None:
        return share_true(d.runs, st.key or "")
    among = [m for m in d.runs if (m.get(st.among) or 0) > 0]
    return stats.ratio(sum(1 for m in among if m.get(st.key or "")), len(among))


def _total(d: Counted, st: Statistic, exact: bool) -> float | None:
    """The sum of the runs' values of key (+ also); None when one is null (or a run's `null_with` is).
    `exact`: integer counts, summed exactly, and None past 2**53 - 1 (JSON's largest exact integer)."""
    keys = (st.key or "", *st.also)
    checked = (*keys, st.null_with) if st.null_with else keys
    if any(m.get(k) is None for m in d.runs for k in checked):
        return None
    per_run = [m[keys[0]] if len(keys) == 1 else sum(m[k] for k in keys) for m in d.runs]
    return sum_tokens(per_run) if exact else math.fsum(per_run)


def figure(metric: SuiteMetric, d: Counted) -> Any:
    """The summary figure of one row: its statistic (docs/metrics.md) over the counted runs."""
    st, key = metric.statistic, metric.statistic.key or metric.name
    if st.kind == "pass":
        return _PASS_FIGURES[key](d)
    if st.kind == "mean":
        return stats.mean(d.column(key))
    if st.kind == "share":
        return _share(d, st)
    if st.kind == "ratio":
        return stats.ratio(sum(m.get(key) or 0 for m in d.runs), sum(m.get(st.den or "") or 0 for m in d.runs))
    if st.kind == "percentile":
        return stats.percentile(d.column(key), st.q)
    summed = _total(d, st, exact=metric.fmt == "count")
    if st.kind == "sum":
        return summed
    return None if summed is None or d.successes == 0 else summed / d.successes


def suite_figures() -> dict[str, Callable[[Counted], Any]]:
    """Each row of the metric table (plugins' included) with the function of its summary figure, in order."""
    return {m.name: functools.partial(figure, m) for m in SUITE_METRIC_TABLE}


SUITE_METRICS: list[str] = [m.name for m in SUITE_METRIC_TABLE]
"""The suite metric names in report order. `pass_hat` is a dict {"1": .., "K": ..}; the rest are numbers."""


def summarize(case_rows: list[dict[str, Any]], repeat: int, scorers: ScorerSet | None = None) -> dict[str, Any]:
    """The suite metrics plus the case and run counts and `scorers`, from the cases' small run rows.

    `scorers` is the suite's scorers (for names and custom summarize); optional.
    """
    counts: list[tuple[int, int]] = []
    runs: list[dict[str, Any]] = []
    counted_runs: list[RunRecord] = []
    successes = runs_errored = 0
    statuses = Counter(row["status"] for row in case_rows)
    for row in case_rows:
        if row["status"] == "skipped":
            continue
        counted = [r for r in row.get("runs") or [] if r["status"] != "error"]
        runs_errored += len(row.get("runs") or []) - len(counted)
        if not counted:
            continue
        c = sum(1 for r in counted if r["success"])
        counts.append((len(counted), c))
        successes += c
        runs.extend(r.get("metrics") or {} for r in counted)
        counted_runs.extend(counted)
    data = Counted(counts=counts, runs=runs, successes=successes, repeat=repeat)
    summary = {name: figure(data) for name, figure in suite_figures().items()}
    summary.update(
        cases_total=len(case_rows),
        cases_passed=statuses["passed"],
        cases_failed=statuses["failed"],
        cases_skipped=statuses["skipped"],
        cases_errored=statuses["error"],
        cases_not_run=statuses["not_run"],
        cases_flaky=sum(1 for row in case_rows if row["status"] != "skipped" and is_flaky(row.get("runs") or [])),
        runs=len(runs),
        runs_errored=runs_errored,
        runs_judge_skipped=sum(1 for r in counted_runs if r.get("judge_skipped")),
        scorers=summarize_scorers(counted_runs, scorers),
        ci=suite_intervals(counted_cases(case_rows), repeat),
    )
    return summary
