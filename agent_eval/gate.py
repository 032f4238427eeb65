"""DESIGN §8: the regression gate. Paired bootstrap per gated metric, Bonferroni one-sided bounds,
verdicts, and the cases whose successes fell by a one-sided Fisher exact test.

Every suite metric is rebuilt from per-case sufficient statistics (a numerator and a denominator per
case, or the pooled run values for a percentile), so one (resamples x cases) count matrix gives all
10,000 resampled suite figures at once, and the point estimate is the same formula with each case
counted once.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np
import orjson

SCHEMA_VERSION = 1
ALPHA = 0.05
RESAMPLES = 10_000
SEED = 0
DEFAULT_GATES = ["pass_at_1", "pass_hat_k", "param_accuracy", "tool_recall", "tool_precision"]
LOWER_IS_BETTER_PREFIXES = ("cost_", "latency_", "ttfa_", "tokens_")
LOWER_IS_BETTER = {"loop_rate", "invalid_call_rate", "turns_mean"}
SCORER_STATS = {"mean", "p50", "p95", "true_fraction", "true_count"}


class ReportError(Exception):
    """A report cannot be compared (unreadable, another schema, no cases) or a gate is unknown."""


# --- inputs ----------------------------------------------------------------------------------


def load_report(path: str | Path) -> dict:
    """Read a §7 JSON report; raise ReportError when it is unreadable or incompatible."""
    try:
        report = orjson.loads(Path(path).read_bytes())
    except OSError as exc:
        raise ReportError(f"{path}: cannot read the report ({exc.strerror or exc}); check the path.") \
            from None
    except orjson.JSONDecodeError as exc:
        raise ReportError(f"{path}: not a JSON report ({exc}); pass a <run_id>.json written by "
                          "`agent-eval run`.") from None
    if not isinstance(report, dict):
        raise ReportError(f"{path}: not an agent-eval report (the top level is not an object).")
    version = report.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ReportError(f"{path}: schema_version {version!r} is not {SCHEMA_VERSION}, the version this "
                          "agent-eval reads; re-run the suite with this version to get a comparable report.")
    if not isinstance(report.get("cases"), list):
        raise ReportError(f"{path}: the report has no `cases` list; it is incomplete or not an "
                          "agent-eval report.")
    return report


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
    if name.startswith("scorers."):
        parts = name.split(".")
        if len(parts) < 4 or parts[-1] not in SCORER_STATS:
            raise ReportError(f"--gate {name}: a scorer gate is scorers.<name>.<key>.<stat> with <stat> one "
                              f"of {', '.join(sorted(SCORER_STATS))}, e.g. scorers.budget.spent.mean.")
        return "higher"  # §8: higher is better for every scorer value
    if name not in METRICS and not _pass_hat_entry(name):
        raise ReportError(f"--gate {name}: unknown metric; gateable metrics are {', '.join(METRICS)}, "
                          "pass_hat.<k>, and scorers.<name>.<key>.<stat>.")
    if name.startswith(LOWER_IS_BETTER_PREFIXES) or name in LOWER_IS_BETTER:
        return "lower"
    return "higher"


def _pass_hat_entry(name: str) -> int | None:
    head, _, k = name.partition(".")
    return int(k) if head == "pass_hat" and k.isdigit() and int(k) >= 1 else None


# --- per-case sufficient statistics ----------------------------------------------------------


@dataclass
class Stat:
    """One metric of one report over the common cases: a ratio of per-case sums, a sum, or a percentile."""

    kind: str  # "ratio" | "sum" | "percentile"
    num: np.ndarray | None = None  # per case
    den: np.ndarray | None = None  # per case (ratio only)
    values: np.ndarray | None = None  # pooled run values (percentile only)
    owner: np.ndarray | None = None  # the case index of each pooled value
    q: float = 50.0
    is_null: bool = False  # the metric is null over the whole set (e.g. a run's cost has no price)


Runs = list[list[dict]]  # per common case, its runs that did not end in error


def _metric(run: dict, key: str) -> Any:
    return (run.get("metrics") or {}).get(key)


def _mean_of(get: Callable[[dict], Any]) -> Callable[[Runs, int], Stat]:
    """Mean over the runs where the value is not null: per case (sum, count)."""

    def build(cases: Runs, k: int) -> Stat:
        vals = [[float(v) for r in runs if (v := get(r)) is not None and not isinstance(v, str)]
                for runs in cases]
        return Stat("ratio", np.array([math.fsum(v) for v in vals]), np.array([len(v) for v in vals], float))

    return build


def _ratio_of(num: Callable[[dict], float], den: Callable[[dict], float]) -> Callable[[Runs, int], Stat]:
    def build(cases: Runs, k: int) -> Stat:
        return Stat("ratio", np.array([math.fsum(num(r) for r in runs) for runs in cases], float),
                    np.array([math.fsum(den(r) for r in runs) for runs in cases], float))

    return build


def _successes(runs: list[dict]) -> int:
    return sum(1 for r in runs if r.get("success"))


def _binomial_mean(term: Callable[[int, int, int], float], use_k: bool) -> Callable[[Runs, int], Stat]:
    """Mean over cases with n >= k of term(n, c, k): pass_at_1, pass^k, pass@k."""

    def build(cases: Runs, k: int) -> Stat:
        kk = k if use_k else 1
        nc = [(len(runs), _successes(runs)) for runs in cases]
        ok = np.array([n >= kk and n > 0 for n, _ in nc], float)
        return Stat("ratio", np.array([term(n, c, kk) if n >= kk and n > 0 else 0.0 for n, c in nc]), ok)

    return build


def _pass_hat_term(n: int, c: int, k: int) -> float:
    return math.comb(c, k) / math.comb(n, k)


def _pass_at_term(n: int, c: int, k: int) -> float:
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _percentile_of(key: str, q: float) -> Callable[[Runs, int], Stat]:
    def build(cases: Runs, k: int) -> Stat:
        pairs = [(float(v), i) for i, runs in enumerate(cases) for r in runs
                 if (v := _metric(r, key)) is not None]
        values = np.array([p[0] for p in pairs], float)
        owner = np.array([p[1] for p in pairs], np.int64)
        return Stat("percentile", values=values, owner=owner, q=q)

    return build


def _tokens(r: dict) -> float:
    return float((_metric(r, "prompt_tokens") or 0) + (_metric(r, "completion_tokens") or 0))


def _cost_build(per_success: Callable[[dict], float] | None) -> Callable[[Runs, int], Stat]:
    """Cost total (a sum) or per success (a ratio); null when any run's cost is null."""

    def build(cases: Runs, k: int) -> Stat:
        costs = [[_metric(r, "cost_usd") for r in runs] for runs in cases]
        is_null = any(c is None for cs in costs for c in cs)
        num = np.array([math.fsum(c or 0.0 for c in cs) for cs in costs], float)
        if per_success is None:
            return Stat("sum", num=num, is_null=is_null)
        return Stat("ratio", num, np.array([_successes(runs) for runs in cases], float), is_null=is_null)

    return build


_ONE: Callable[[dict], float] = lambda r: 1.0  # noqa: E731

METRICS: dict[str, Callable[[Runs, int], Stat]] = {
    "pass_at_1": _binomial_mean(lambda n, c, k: c / n, use_k=False),
    "pass_hat_k": _binomial_mean(_pass_hat_term, use_k=True),
    "pass_at_k": _binomial_mean(_pass_at_term, use_k=True),
    **{m: _mean_of(lambda r, m=m: _metric(r, m)) for m in
       ("tool_recall", "tool_precision", "param_accuracy", "step_efficiency", "progress", "groundedness")},
    "loop_rate": _ratio_of(lambda r: float(bool(_metric(r, "has_loop"))), _ONE),
    "recovery_rate": _ratio_of(lambda r: float(bool(_metric(r, "recovered"))),
                               lambda r: float((_metric(r, "tool_errors") or 0) > 0)),
    "invalid_call_rate": _ratio_of(lambda r: float(_metric(r, "invalid_calls") or 0),
                                   lambda r: float(_metric(r, "tool_calls") or 0)),
    # The safety rates are shares of True among the runs where the flag is not null (§6).
    **{m: _mean_of(lambda r, key=key: _metric(r, key)) for m, key in (
        ("unauthorized_block_rate", "blocked_correctly"), ("policy_compliance", "policy_compliant"),
        ("injection_resistance", "injection_resisted"))},
    "latency_mean_s": _mean_of(lambda r: _metric(r, "latency_s")),
    "latency_p50_s": _percentile_of("latency_s", 50),
    "latency_p95_s": _percentile_of("latency_s", 95),
    "latency_p99_s": _percentile_of("latency_s", 99),
    "ttfa_mean_s": _mean_of(lambda r: _metric(r, "ttfa_s")),
    "tokens_total": lambda cases, k: Stat("sum", num=np.array([math.fsum(map(_tokens, rs)) for rs in cases])),
    "cost_total_usd": _cost_build(None),
    "cost_per_success_usd": _cost_build(_ONE),
    "tokens_per_success": _ratio_of(_tokens, lambda r: float(bool(r.get("success")))),
    "turns_mean": _mean_of(lambda r: _metric(r, "turns")),
}


def _scorer_value(run: dict, keys: list[str]) -> Any:
    value: Any = run.get("scorers") or {}
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def build_stat(name: str, cases: Runs, k: int) -> Stat:
    """The sufficient statistics of gated metric `name` over `cases` (runs per case)."""
    if (j := _pass_hat_entry(name)) is not None:
        return _binomial_mean(_pass_hat_term, use_k=True)(cases, j)
    if not name.startswith("scorers."):
        return METRICS[name](cases, k)
    *keys, stat = name.split(".")[1:]
    if stat in ("true_fraction", "true_count"):
        hit = lambda r: float(_scorer_value(r, keys) is True)  # noqa: E731  # missing counts as false
        if stat == "true_count":
            return Stat("sum", num=np.array([math.fsum(map(hit, runs)) for runs in cases], float))
        return _ratio_of(hit, _ONE)(cases, k)
    def number(r: dict) -> float | None:
        v = _scorer_value(r, keys)
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    if stat == "mean":
        return _mean_of(number)(cases, k)
    pooled = [(float(v), i) for i, runs in enumerate(cases) for r in runs if (v := number(r)) is not None]
    return Stat("percentile", values=np.array([p[0] for p in pooled], float),
                owner=np.array([p[1] for p in pooled], np.int64), q=float(stat[1:]))


# --- vectorized evaluation -------------------------------------------------------------------


def evaluate(stats: list[Stat], weights: np.ndarray) -> list[np.ndarray]:
    """Each metric for every row of `weights` (rows x cases: how often each case counts); NaN = null."""
    columns: list[np.ndarray] = []
    slots: list[tuple[int, ...]] = []
    for stat in stats:
        if stat.kind != "percentile":
            slots.append((len(columns),) if stat.kind == "sum" else (len(columns), len(columns) + 1))
            columns += [stat.num] if stat.kind == "sum" else [stat.num, stat.den]
        else:
            slots.append(())
    # One matrix product reads the (10,000 x cases) weights once for every sum and ratio.
    sums = weights @ np.column_stack(columns) if columns else np.empty((len(weights), 0))
    out = []
    for stat, slot in zip(stats, slots, strict=True):
        if not slot:
            out.append(_weighted_percentile(stat, weights))
        elif len(slot) == 1:
            out.append(sums[:, slot[0]])
        else:
            num, den = sums[:, slot[0]], sums[:, slot[1]]
            with np.errstate(divide="ignore", invalid="ignore"):
                out.append(np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan))
    return out


def _weighted_percentile(stat: Stat, weights: np.ndarray, chunk: int = 1000) -> np.ndarray:
    """numpy's linear-interpolation percentile of the pooled values, each repeated by its case's weight."""
    order = np.argsort(stat.values, kind="stable")
    values, owner = stat.values[order], stat.owner[order]
    out = np.full(weights.shape[0], np.nan)
    if values.size == 0:
        return out
    for start in range(0, weights.shape[0], chunk):
        cum = np.cumsum(weights[start:start + chunk][:, owner], axis=1)  # exact: small integer counts
        total = cum[:, -1]
        h = (total - 1) * stat.q / 100.0
        lo = np.floor(h)
        hi = np.minimum(lo + 1, total - 1)
        # The sorted value at 0-based rank r is the first whose cumulative count exceeds r.
        v_lo = values[np.minimum((cum <= lo[:, None]).sum(axis=1), values.size - 1)]
        v_hi = values[np.minimum((cum <= hi[:, None]).sum(axis=1), values.size - 1)]
        out[start:start + chunk] = np.where(total > 0, v_lo + (h - lo) * (v_hi - v_lo), np.nan)
    return out


@lru_cache(maxsize=2)
def resample_weights(n_cases: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """(resamples x n_cases) counts of each case in each paired resample; identical for base and new."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_cases, size=(resamples, n_cases))
    flat = (idx + (np.arange(resamples) * n_cases)[:, None]).ravel()
    weights = np.bincount(flat, minlength=resamples * n_cases).reshape(resamples, n_cases).astype(float)
    weights.flags.writeable = False  # cached and shared between calls
    return weights


# --- per-case listing ------------------------------------------------------------------------


def fisher_fell_p(base_successes: int, base_runs: int, new_successes: int, new_runs: int) -> Fraction:
    """Exact one-sided Fisher p that successes fell: P(X <= new_successes), X hypergeometric."""
    s, total = base_successes + new_successes, base_runs + new_runs
    tail = sum(math.comb(s, x) * math.comb(total - s, new_runs - x)
               for x in range(max(0, s - base_runs), new_successes + 1))
    return Fraction(tail, math.comb(total, new_runs))


# --- the comparison --------------------------------------------------------------------------


def _repeat(report: dict) -> int:
    repeat = (report.get("settings") or {}).get("repeat")
    if isinstance(repeat, int) and not isinstance(repeat, bool) and repeat >= 1:
        return repeat
    return max((len(c.get("runs") or []) for c in report["cases"]), default=1) or 1


def _cases_by_id(report: dict, side: str) -> dict[str, dict]:
    cases = {}
    for case in report["cases"]:
        if not isinstance(case, dict) or "id" not in case or not isinstance(case.get("runs") or [], list):
            raise ReportError(f"{side} report: a `cases` entry has no `id` or a malformed `runs`; the report "
                              "is damaged, re-run the suite to regenerate it.")
        cases[str(case["id"])] = case
    return cases


def _counted_runs(case: dict) -> list[dict]:
    return [r for r in case.get("runs") or [] if r.get("status") != "error"]


def _number(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def compare_reports(base: dict, new: dict, gates: list[tuple[str, float]] | None = None) -> dict:
    """The §8 `gate` object: common cases, per-metric bootstrap verdicts, regressed cases, exit flag."""
    gates = gates or [(name, 0.0) for name in DEFAULT_GATES]
    b_cases, n_cases = _cases_by_id(base, "base"), _cases_by_id(new, "new")
    both = [i for i in b_cases if i in n_cases]
    is_counted = lambda c: c.get("status") not in ("skipped", "error")  # noqa: E731
    common = [i for i in both if is_counted(b_cases[i]) and is_counted(n_cases[i])]
    b_runs = [_counted_runs(b_cases[i]) for i in common]
    n_runs = [_counted_runs(n_cases[i]) for i in common]
    k = min(_repeat(base), _repeat(new))  # §8: pass^k uses the smaller k
    for name, _ in gates:
        metric_direction(name)
        if name.startswith("scorers.") and not any(
            _scorer_value(r, name.split(".")[1:-1]) is not None
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
        if None not in point:
            row["delta"] = point[1] - point[0]
            pending.append((row, stats))
        rows.append(row)

    m = len(pending)
    if m:
        values = evaluate([s for _, pair in pending for s in pair], resample_weights(len(common)))
        for j, (row, _) in enumerate(pending):
            deltas = values[2 * j + 1] - values[2 * j]
            _decide(row, deltas[~np.isnan(deltas)], ALPHA / m)

    regressed_cases, can_qualify = [], False
    for i, bs, ns in zip(common, b_runs, n_runs, strict=True):
        if not bs or not ns:
            continue
        can_qualify |= Fraction(1, math.comb(len(bs) + len(ns), len(ns))) <= Fraction(1, 20)
        p = fisher_fell_p(_successes(bs), len(bs), _successes(ns), len(ns))
        if p <= Fraction(1, 20):
            regressed_cases.append({"id": i, "base_successes": _successes(bs), "base_runs": len(bs),
                                    "new_successes": _successes(ns), "new_runs": len(ns),
                                    "p_value": float(p)})
    note = None
    if common and not can_qualify:
        note = (f"with k={k} no case can reach p<=0.05 (one-sided Fisher exact test); "
                "use --repeat 3 or more to list regressed cases")
    return {
        "base_run_id": base.get("run_id"), "new_run_id": new.get("run_id"),
        "metrics": rows, "m": m, "alpha": ALPHA, "resamples": RESAMPLES, "seed": SEED, "k": k,
        "cases_common": len(common),
        "only_in_base": [i for i in b_cases if i not in n_cases],
        "only_in_new": [i for i in n_cases if i not in b_cases],
        "excluded_cases": [i for i in both if i not in set(common)],
        "regressed_cases": regressed_cases, "note": note,
        "regression": any(r["verdict"] == "regressed" for r in rows),
    }


def _decide(row: dict, deltas: np.ndarray, level: float) -> None:
    """Fill ci and verdict: one-sided bounds at 1 - level on each side (Bonferroni level = alpha/m)."""
    if deltas.size == 0:
        row["verdict"] = "no significant change"
        return
    lo, hi = (float(x) for x in np.quantile(deltas, [level, 1.0 - level]))
    row["ci"] = [lo, hi]
    # Regressed only when even the optimistic bound is worse than the tolerance, so that with no real
    # change the gate fires with probability <= level per metric.
    if row["direction"] == "higher":
        regressed, improved = hi < -row["max_drop"], lo > 0
    else:
        regressed, improved = lo > row["max_drop"], hi < 0
    row["verdict"] = "regressed" if regressed else "improved" if improved else "no significant change"


def compare_main(base_path: str | Path, new_path: str | Path, gate_specs: list[str], console: Any) -> int:
    """`agent-eval compare`: print the gate table; 1 on a regression, 2 on a bad report or gate, else 0."""
    try:
        gates = [parse_gate_spec(spec) for spec in gate_specs] or None
        gate = compare_reports(load_report(base_path), load_report(new_path), gates)
    except ReportError as exc:
        print(f"agent-eval compare: {exc}", file=sys.stderr)
        return 2
    from agent_eval.report.gate_table import render_gate

    render_gate(gate, console)
    return 1 if gate["regression"] else 0
