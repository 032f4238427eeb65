"""The statistics behind the gate: per-case sufficient statistics of every gateable
metric, their vectorized evaluation over bootstrap resamples, and the exact Fisher test.

Every suite metric is rebuilt from per-case sums (a numerator and a denominator per case, or the
pooled run values for a percentile), so one (resamples x cases) count matrix gives all resampled
suite figures at once, and the point estimate is the same formula with each case counted once.
"""
from __future__ import annotations

from agent_eval.records import RunRecord
from agent_eval.score.metric_registry import SUITE_METRIC_TABLE, Statistic, SuiteMetric

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from collections.abc import Iterator
from typing import Any, Callable, Literal

import numpy as np

RESAMPLES = 10_000
SEED = 0

def pass_hat_entry(name: str) -> int | None:
    head, _, k = name.partition(".")
    return int(k) if head == "pass_hat" and k.isdigit() and int(k) >= 1 else None


# --- per-case sufficient statistics ----------------------------------------------------------


@dataclass
class Stat:
    """One metric of one report over the common cases: a ratio of per-case sums, a sum, or a percentile."""

    kind: Literal["ratio", "sum", "percentile"]
    num: np.ndarray | None = None  # per case
    den: np.ndarray | None = None  # per case (ratio only)
    values: np.ndarray | None = None  # pooled run values (percentile only)
    owner: np.ndarray | None = None  # the case index of each pooled value
    q: float = 50.0
    is_null: bool = False  # the metric is null over the whole set (e.g. a run's cost has no price)


Runs = list[list[RunRecord]]  # per common case, its runs that did not end in error


def _metric(run: RunRecord, key: str) -> Any:
    return (run.get("metrics") or {}).get(key)


def _metric_getter(key: str) -> Callable[[RunRecord], Any]:
    return lambda run: _metric(run, key)


def _mean_of(get: Callable[[RunRecord], Any]) -> Callable[[Runs, int], Stat]:
    """Mean over the runs where the value is not null: per case (sum, count)."""

    def build(cases: Runs, k: int) -> Stat:
        vals = [[float(v) for r in runs if (v := get(r)) is not None and not isinstance(v, str)]
                for runs in cases]
        return Stat("ratio", np.array([math.fsum(v) for v in vals]), np.array([len(v) for v in vals], float))

    return build


def _ratio_of(num: Callable[[RunRecord], float], den: Callable[[RunRecord], float]) -> Callable[[Runs, int], Stat]:
    def build(cases: Runs, k: int) -> Stat:
        return Stat("ratio", np.array([math.fsum(num(r) for r in runs) for runs in cases], float),
                    np.array([math.fsum(den(r) for r in runs) for runs in cases], float))

    return build


def successes(runs: list[RunRecord]) -> int:
    return sum(1 for r in runs if r.get("success"))


def _binomial_mean(term: Callable[[int, int, int], float], use_k: bool) -> Callable[[Runs, int], Stat]:
    """Mean over cases with n >= k of term(n, c, k): pass_at_1, pass^k, pass@k."""

    def build(cases: Runs, k: int) -> Stat:
        kk = k if use_k else 1
        nc = [(len(runs), successes(runs)) for runs in cases]
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


def _flag(key: str, among: str | None) -> tuple[Callable[[RunRecord], float], Callable[[RunRecord], float]]:
    """A share's (numerator, denominator) per run: the flag is true, and the run counts (its flag is not
    null, or its `among` value is above 0)."""
    if among is None:
        counts: Callable[[RunRecord], bool] = lambda r: _metric(r, key) is not None
    else:
        counts = lambda r: (_metric(r, among) or 0) > 0
    return (lambda r: float(counts(r) and bool(_metric(r, key)))), (lambda r: float(counts(r)))


def _total_of(st: Statistic) -> Callable[[Runs, int], Stat]:
    """A sum (or, per success, a ratio over the successful runs) of the run values key + also; null when a
    run's value of one of them, or of `null_with`, is null."""
    keys = (st.key or "", *st.also)
    checked = (*keys, st.null_with) if st.null_with else keys

    def build(cases: Runs, k: int) -> Stat:
        is_null = any(_metric(r, key) is None for runs in cases for r in runs for key in checked)
        num = np.array([math.fsum(float(sum(_metric(r, key) or 0 for key in keys)) for r in runs)
                        for runs in cases], float)
        if st.kind == "sum":
            return Stat("sum", num=num, is_null=is_null)
        return Stat("ratio", num, np.array([successes(runs) for runs in cases], float), is_null=is_null)

    return build


_ONE: Callable[[RunRecord], float] = lambda r: 1.0

_PASS_STATS: dict[str, Callable[[Runs, int], Stat]] = {
    "at_1": _binomial_mean(lambda n, c, k: c / n, use_k=False),
    "hat_k": _binomial_mean(_pass_hat_term, use_k=True),
    "at_k": _binomial_mean(_pass_at_term, use_k=True),
}
"""The statistics of the pass-count estimators that can be gated."""


def _stat_of(metric: SuiteMetric) -> Callable[[Runs, int], Stat]:
    st = metric.statistic
    key = st.key or metric.name
    if st.kind == "pass":
        return _PASS_STATS[key]
    if st.kind == "mean":
        return _mean_of(_metric_getter(key))
    if st.kind == "share":
        return _ratio_of(*_flag(key, st.among))
    if st.kind == "ratio":
        den = st.den or ""
        return _ratio_of(lambda r: float(_metric(r, key) or 0), lambda r: float(_metric(r, den) or 0))
    if st.kind == "percentile":
        return _percentile_of(key, st.q)
    return _total_of(st)


def gate_metrics() -> dict[str, Callable[[Runs, int], Stat]]:
    """Every gateable row of the metric table (plugins' included) with its sufficient statistic."""
    return {m.name: _stat_of(m) for m in SUITE_METRIC_TABLE if m.gateable}


def scorer_value(run: RunRecord, keys: list[str]) -> Any:
    value: Any = run.get("scorers") or {}
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def build_stat(name: str, cases: Runs, k: int) -> Stat:
    """The sufficient statistics of gated metric `name` over `cases` (runs per case)."""
    if (j := pass_hat_entry(name)) is not None:
        return _binomial_mean(_pass_hat_term, use_k=True)(cases, j)
    if not name.startswith("scorers."):
        return gate_metrics()[name](cases, k)
    *keys, stat = name.split(".")[1:]
    if stat in ("true_fraction", "true_count"):
        hit = lambda r: float(scorer_value(r, keys) is True)  # missing counts as false
        if stat == "true_count":
            return Stat("sum", num=np.array([math.fsum(map(hit, runs)) for runs in cases], float))
        return _ratio_of(hit, _ONE)(cases, k)
    def number(r: RunRecord) -> float | None:
        v = scorer_value(r, keys)
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
            assert stat.num is not None and (stat.kind == "sum" or stat.den is not None)
            slots.append((len(columns),) if stat.kind == "sum" else (len(columns), len(columns) + 1))
            columns += [stat.num] if stat.kind == "sum" or stat.den is None else [stat.num, stat.den]
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
    assert stat.values is not None and stat.owner is not None  # a percentile Stat holds both
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


BLOCK_CELLS = 1 << 23  # cells of one block of resample rows (64 MiB as floats): what is held at once
_CACHED_CELLS = 1 << 24  # weights up to this size are kept whole and shared between calls


def weight_blocks(n_cases: int, resamples: int = RESAMPLES, seed: int = SEED) -> Iterator[np.ndarray]:
    """The rows of `resample_weights`, a block at a time (the same seeded draws, in the same order), so that
    a report of 20,000 cases never holds its 10,000 x 20,000 weights at once."""
    rng = np.random.default_rng(seed)
    rows = max(1, BLOCK_CELLS // max(1, n_cases))
    for start in range(0, resamples, rows):
        count = min(rows, resamples - start)
        idx = rng.integers(0, n_cases, size=(count, n_cases))
        flat = (idx + (np.arange(count) * n_cases)[:, None]).ravel()
        yield np.bincount(flat, minlength=count * n_cases).reshape(count, n_cases).astype(float)


@lru_cache(maxsize=2)
def resample_weights(n_cases: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """(resamples x n_cases) counts of each case in each paired resample; identical for base and new."""
    weights = np.vstack(list(weight_blocks(n_cases, resamples, seed)))
    weights.flags.writeable = False  # cached and shared between calls
    return weights


def evaluate_resamples(stats: list[Stat], n_cases: int) -> list[np.ndarray]:
    """`evaluate` over the paired resamples of n_cases cases: whole (cached) for a usual suite, block by
    block for a large one, so memory stays bounded whatever the number of cases."""
    if n_cases * RESAMPLES <= _CACHED_CELLS:
        return evaluate(stats, resample_weights(n_cases))
    parts = [evaluate(stats, block) for block in weight_blocks(n_cases)]
    return [np.concatenate(column) for column in zip(*parts, strict=True)] if parts else []


# --- per-case listing ------------------------------------------------------------------------


def fisher_fell_p(base_successes: int, base_runs: int, new_successes: int, new_runs: int) -> Fraction:
    """Exact one-sided Fisher p that successes fell: P(X <= new_successes), X hypergeometric."""
    s, total = base_successes + new_successes, base_runs + new_runs
    tail = sum(math.comb(s, x) * math.comb(total - s, new_runs - x)
               for x in range(max(0, s - base_runs), new_successes + 1))
    return Fraction(tail, math.comb(total, new_runs))
