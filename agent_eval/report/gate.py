"""The regression gate. Paired bootstrap per gated metric, a one-sided bootstrap p-value per metric decided
with Holm's step-down procedure over the m tests, one-sided bounds at level alpha/m, verdicts, and the
cases whose successes fell by a one-sided Fisher exact test.

Every suite metric is rebuilt from per-case sufficient statistics (a numerator and a denominator per
case, or the pooled run values for a percentile), so one (resamples x cases) count matrix gives all
10,000 resampled suite figures at once, and the point estimate is the same formula with each case
counted once.
"""
from __future__ import annotations

from typing import Any

import math
from fractions import Fraction

import numpy as np

from agent_eval.records import UNCOMPARED, CaseEntry, Report, RunRecord
from agent_eval.report.gate_stats import (
    gate_metrics,
    RESAMPLES,
    SEED,
    pass_hat_entry,
    scorer_value,
    successes,
    build_stat,
    evaluate,
    evaluate_resamples,
    fisher_fell_p,
)
from agent_eval.score.metric_registry import SUITE_METRIC_BY_NAME, default_gates
from agent_eval.report.model import ReportError, load_report  # noqa: F401  (load_report: the gate's API)

ALPHA = 0.05
SCORER_STATS = {"mean", "p50", "p95", "true_fraction", "true_count"}


# --- inputs ----------------------------------------------------------------------------------


def parse_gate_spec(spec: str) -> tuple[str, float]:
    """'cost_per_success_usd=0.01' -> ('cost_per_success_usd', 0.01); no '=' means MAX_DROP 0."""
    name, _, drop = spec.partition("=")
    name = name.strip()
    try:
        max_drop = float(drop) if drop.strip() else 0.0
    except ValueError:
        max_drop = math.nan
    if not name or not math.isfinite(max_drop) or max_drop < 0:
        raise ReportError(f"--gate {spec!r}: expected METRIC or METRIC=MAX_DROP with MAX_DROP a number >= 0 "
                          "in the metric's own units, e.g. --gate cost_per_success_usd=0.01.")
    metric_direction(name)  # an unknown metric fails here, before any report is read
    return name, max_drop


def metric_direction(name: str) -> str:
    """'lower' or 'higher' (is better); raise ReportError for a metric that cannot be gated."""
    if name == "pairwise":
        raise ReportError("--gate pairwise gates the judge's pairwise comparison of two reports: use it with "
                          "`agent-eval compare BASE NEW --gate pairwise` (run --baseline gates metrics only).")
    if name.startswith("scorers."):
        parts = name.split(".")
        if len(parts) < 4 or parts[-1] not in SCORER_STATS:
            raise ReportError(f"--gate {name}: a scorer gate is scorers.<name>.<key>.<stat> with <stat> one "
                              f"of {', '.join(sorted(SCORER_STATS))}, e.g. scorers.budget.spent.mean.")
        return "higher"  # higher is better for every scorer value
    if name not in (gateable := gate_metrics()) and not pass_hat_entry(name):
        raise ReportError(f"--gate {name}: unknown metric; gateable metrics are {', '.join(gateable)}, "
                          "pass_hat.<k>, and scorers.<name>.<key>.<stat> (a plugin's metric, with its plugin "
                          "loaded: its package, or AGENT_EVAL_PLUGINS).")
    metric = SUITE_METRIC_BY_NAME.get(name)
    return metric.direction if metric else "higher"


# --- the comparison --------------------------------------------------------------------------


def _repeat(report: Report) -> int:
    repeat = (report.get("settings") or {}).get("repeat")
    if isinstance(repeat, int) and not isinstance(repeat, bool) and repeat >= 1:
        return repeat
    return max((len(c.get("runs") or []) for c in report["cases"]), default=1) or 1


def _cases_by_id(report: Report, side: str) -> dict[str, CaseEntry]:
    cases = {}
    for case in report["cases"]:
        if not isinstance(case, dict) or "id" not in case or not isinstance(case.get("runs") or [], list):
            raise ReportError(f"{side} report: a `cases` entry has no `id` or a malformed `runs`; the report "
                              "is damaged, re-run the suite to regenerate it.")
        cases[str(case["id"])] = case
    return cases


def _counted_runs(case: CaseEntry) -> list[RunRecord]:
    return [r for r in case.get("runs") or [] if r.get("status") != "error"]


def _number(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def compare_reports(base: Report, new: Report, gates: list[tuple[str, float]] | None = None) -> dict[str, Any]:
    """The `gate` object: common cases, per-metric bootstrap verdicts, regressed cases, exit flag."""
    gate, pending = paired_gate(base, new, gates)
    decide_gate(gate, pending, len(pending))
    return gate


def compare_many(base: Report, news: list[Report], gates: list[tuple[str, float]] | None = None,
                 ) -> list[dict[str, Any]]:
    """One gate per new report against base, decided together: Holm's procedure runs over the m tests of
    every pair, so the whole matrix keeps the 5% false-alarm bound. Each gate also gets `alone`, the
    verdicts ({metric: verdict}) its pair would get compared by itself."""
    pairs = [paired_gate(base, new, gates) for new in news]
    for gate, pending in pairs:
        alone = [({**row}, deltas) for row, deltas in pending]
        holm_decide(alone, len(alone))
        gate["alone"] = {row["metric"]: row["verdict"] for row, _ in alone}
    family = [item for _, pending in pairs for item in pending]
    holm_decide(family, len(family))
    for gate, _ in pairs:
        gate["m"] = len(family)
        gate["regression"] = any(r["verdict"] == "regressed" for r in gate["metrics"])
        gate["alone"] = {**{r["metric"]: r["verdict"] for r in gate["metrics"]}, **gate["alone"]}
    return [gate for gate, _ in pairs]


def decide_gate(gate: dict[str, Any], pending: list[tuple[dict[str, Any], np.ndarray]], m: int) -> None:
    """Decide the m bootstrapped rows with Holm's procedure (bounds at level alpha/m), then the gate's verdict."""
    gate["m"] = m
    holm_decide(pending, m)
    gate["regression"] = any(r["verdict"] == "regressed" for r in gate["metrics"])


def p_value(row: dict[str, Any], deltas: np.ndarray) -> float:
    """The one-sided bootstrap p-value that the metric did not get worse than its tolerance:
    (1 + the resamples whose delta is not worse than -MAX_DROP) / (1 + the resamples), 10,001 with all."""
    if row["direction"] == "higher":
        not_worse = int(np.count_nonzero(deltas >= -row["max_drop"]))
    else:
        not_worse = int(np.count_nonzero(deltas <= row["max_drop"]))
    return (1 + not_worse) / (1 + deltas.size)


def holm_decide(tests: list[tuple[dict[str, Any], np.ndarray]], m: int) -> None:
    """Fill each row's interval (one-sided bounds at level alpha/m), p-value and verdict. Holm's step-down:
    sort the p-values; the i-th smallest (from 0) is rejected, and its metric regressed, while every one
    before it was and it is <= alpha/(m - i). That keeps the family-wise false-alarm rate at alpha and
    rejects at least what Bonferroni (every p <= alpha/m) rejects; a row whose alpha/m bound already
    lies past the tolerance is regressed too, as it was under Bonferroni."""
    for row, deltas in tests:
        _decide(row, deltas, ALPHA / max(m, 1))
        row["p_value"] = p_value(row, deltas)
    order = sorted(range(len(tests)), key=lambda i: tests[i][0]["p_value"])
    for rank, i in enumerate(order):
        row = tests[i][0]
        if row["p_value"] > ALPHA / (m - rank):
            break
        row["verdict"] = "regressed"


def paired_gate(base: Report, new: Report, gates: list[tuple[str, float]] | None = None,
                ) -> tuple[dict[str, Any], list[tuple[dict[str, Any], np.ndarray]]]:
    """The gate object before its verdicts, and (row, bootstrap deltas) of each metric not null in either."""
    gates = gates or [(name, 0.0) for name in default_gates(base.get("summary") or {}, new.get("summary") or {})]
    b_cases, n_cases = _cases_by_id(base, "base"), _cases_by_id(new, "new")
    both = [i for i in b_cases if i in n_cases]
    is_counted = lambda c: c.get("status") not in UNCOMPARED
    common = [i for i in both if is_counted(b_cases[i]) and is_counted(n_cases[i])]
    b_runs = [_counted_runs(b_cases[i]) for i in common]
    n_runs = [_counted_runs(n_cases[i]) for i in common]
    k = min(_repeat(base), _repeat(new))  # pass^k uses the smaller k
    for name, _ in gates:
        metric_direction(name)
        if name.startswith("scorers.") and not any(
            scorer_value(r, name.split(".")[1:-1]) is not None
            for report in (base, new) for c in report["cases"] for r in c.get("runs") or []
        ):
            raise ReportError(f"--gate {name}: no run in either report has scorer value "
                              f"{'.'.join(name.split('.')[1:-1])}; check the scorer name and key.")

    identity = np.ones((1, len(common)))
    rows, pending = [], []
    for name, max_drop in gates:
        stats = [build_stat(name, runs, k) for runs in (b_runs, n_runs)]
        point = [None if s.is_null or not common else _number(v[0])
                 for s, v in zip(stats, evaluate(stats, identity), strict=True)]
        row = {"metric": name, "direction": metric_direction(name), "max_drop": max_drop,
               "base": point[0], "new": point[1], "delta": None, "ci": None, "verdict": "n/a"}
        if point[0] is not None and point[1] is not None:
            row["delta"] = point[1] - point[0]
            pending.append((row, stats))
        rows.append(row)

    bootstrapped = []
    if pending:
        values = evaluate_resamples([s for _, pair in pending for s in pair], len(common))
        for j, (row, _) in enumerate(pending):
            deltas = values[2 * j + 1] - values[2 * j]
            bootstrapped.append((row, deltas[~np.isnan(deltas)]))

    regressed_cases, can_qualify = [], False
    for i, bs, ns in zip(common, b_runs, n_runs, strict=True):
        if not bs or not ns:
            continue
        can_qualify |= Fraction(1, math.comb(len(bs) + len(ns), len(ns))) <= Fraction(1, 20)
        p = fisher_fell_p(successes(bs), len(bs), successes(ns), len(ns))
        if p <= Fraction(1, 20):
            regressed_cases.append({"id": i, "base_successes": successes(bs), "base_runs": len(bs),
                                    "new_successes": successes(ns), "new_runs": len(ns),
                                    "p_value": float(p)})
    note, counted = None, set(common)
    if common and not can_qualify:
        note = (f"with k={k} no case can reach p<=0.05 (one-sided Fisher exact test); "
                "use --repeat 3 or more to list regressed cases")
    return {
        "base_run_id": base.get("run_id"), "new_run_id": new.get("run_id"),
        "nothing_to_gate": _why_nothing_to_gate(b_cases, n_cases, both, common, rows, bootstrapped),
        "metrics": rows, "m": len(bootstrapped), "alpha": ALPHA, "resamples": RESAMPLES, "seed": SEED, "k": k,
        "cases_common": len(common),
        "only_in_base": [i for i in b_cases if i not in n_cases],
        "only_in_new": [i for i in n_cases if i not in b_cases],
        "excluded_cases": [i for i in both if i not in counted],
        "regressed_cases": regressed_cases, "note": note, "regression": False,
    }, bootstrapped


def _why_nothing_to_gate(b_cases: dict[str, CaseEntry], n_cases: dict[str, CaseEntry], both: list[str],
                         common: list[str], rows: list[dict[str, Any]],
                         bootstrapped: list[Any]) -> str | None:
    """Why this pair gates nothing (no shared case id, or no gated metric with a value on both sides),
    or None when it gates something: a gate that compares nothing must never read as "no regression"."""
    if not both:
        return (f"the reports share no case id (the base has {len(b_cases)} case(s), the new report "
                f"{len(n_cases)}); cases are paired by id")
    if bootstrapped:
        return None
    if not common:
        return (f"none of the {len(both)} shared case(s) is counted in both reports (each was skipped, errored "
                "or not run in one of them)")
    names = ", ".join(row["metric"] for row in rows)
    return f"no gated metric ({names}) has a value in both reports over the {len(common)} common case(s)"


def _decide(row: dict[str, Any], deltas: np.ndarray, level: float) -> None:
    """Fill ci and verdict: one-sided bounds at 1 - level on each side (level = alpha/m)."""
    if deltas.size == 0:
        row["verdict"] = "no significant change"
        return
    lo, hi = (float(x) for x in np.quantile(deltas, [level, 1.0 - level]))
    row["ci"] = [lo, hi]
    # How far the metric would have had to move the bad way to be flagged: the distance from the
    # observed delta to its favourable bound (with MAX_DROP 0).
    row["min_detectable_drop"] = (hi - row["delta"]) if row["direction"] == "higher" else (row["delta"] - lo)
    # Regressed only when even the optimistic bound is worse than the tolerance, so that with no real
    # change the gate fires with probability <= level per metric.
    if row["direction"] == "higher":
        regressed, improved = hi < -row["max_drop"], lo > 0
    else:
        regressed, improved = lo > row["max_drop"], hi < 0
    row["verdict"] = "regressed" if regressed else "improved" if improved else "no significant change"
