"""summary.ci: a 95% case-level bootstrap interval for every suite rate (docs/metrics.md, "Intervals").

Each suite rate is a ratio of sums over cases: pass@1 is the mean of the cases' c/n, a per-run mean is
the sum of the values over the count of runs that have one. So each case is reduced once to a
(numerator, denominator) pair per metric, and a resample is its case counts times those pairs: 2,000
resamples of 100,000 runs cost a few matrix products, never a loop over runs.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agent_eval.score.metric_registry import SUITE_METRIC_TABLE, SuiteMetric

RESAMPLES = 2000
SEED = 0
CONFIDENCE_PERCENTILES = (2.5, 97.5)


@dataclass(frozen=True)
class CountedCases:
    """The cases that count in the suite figures, in report order: their runs' metrics flattened."""

    runs: list[dict[str, Any]]  # the per-run metrics of every counted run, case after case
    owner: np.ndarray  # the case index of each run
    n: list[int]  # counted runs per case
    c: list[int]  # successful runs per case

    def per_case(self, numer: Sequence[float], denom: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        """Per-run numerators and denominators summed per case."""
        cases = len(self.n)
        return (np.bincount(self.owner, weights=np.asarray(numer, dtype=float), minlength=cases),
                np.bincount(self.owner, weights=np.asarray(denom, dtype=float), minlength=cases))


CaseSums = Callable[[CountedCases, int], tuple[np.ndarray, np.ndarray]]
"""(the counted cases, K) -> each case's numerator and denominator of one suite rate."""


def _pass_at_1(d: CountedCases, k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray([c / n for n, c in zip(d.n, d.c, strict=True)]), np.ones(len(d.n))


def _binomial(term: Callable[[int, int, int], float]) -> CaseSums:
    """A mean over the cases with n >= K of a term of (n, c, K)."""
    def sums(d: CountedCases, k: int) -> tuple[np.ndarray, np.ndarray]:
        kept = [k >= 1 and n >= k for n in d.n]
        numer = [term(n, c, k) if ok else 0.0 for n, c, ok in zip(d.n, d.c, kept, strict=True)]
        return np.asarray(numer), np.asarray(kept, dtype=float)
    return sums


def _mean_of(key: str) -> CaseSums:
    """A mean over the runs where the metric is not null."""
    def sums(d: CountedCases, k: int) -> tuple[np.ndarray, np.ndarray]:
        values = [m.get(key) for m in d.runs]
        return d.per_case([0.0 if v is None else float(v) for v in values], [v is not None for v in values])
    return sums


def _share_true(key: str, among: str | None) -> CaseSums:
    """The share of true among the runs where the flag is not null, or whose `among` value is above 0."""
    def sums(d: CountedCases, k: int) -> tuple[np.ndarray, np.ndarray]:
        flags = [m.get(key) for m in d.runs]
        counted = [f is not None for f in flags] if among is None else [(m.get(among) or 0) > 0 for m in d.runs]
        return d.per_case([c and bool(f) for c, f in zip(counted, flags, strict=True)], counted)
    return sums


def _ratio_of(key: str, den: str) -> CaseSums:
    """The sum of one run value over the sum of another (a null counts 0)."""
    def sums(d: CountedCases, k: int) -> tuple[np.ndarray, np.ndarray]:
        return d.per_case([m.get(key) or 0 for m in d.runs], [m.get(den) or 0 for m in d.runs])
    return sums


_PASS_SUMS: dict[str, CaseSums] = {
    "at_1": _pass_at_1,
    # int / int is correctly rounded, as float(Fraction(...)) is in stats.py.
    "hat_k": _binomial(lambda n, c, k: math.comb(c, k) / math.comb(n, k)),
    "at_k": _binomial(lambda n, c, k: (math.comb(n, k) - math.comb(n - c, k)) / math.comb(n, k)),
}
"""The per-case sums of the pass-count estimators that have an interval."""


def _sums_of(metric: SuiteMetric) -> CaseSums:
    st = metric.statistic
    key = st.key or metric.name
    if st.kind == "pass":
        return _PASS_SUMS[key]
    if st.kind == "mean":
        return _mean_of(key)
    if st.kind == "share":
        return _share_true(key, st.among)
    if st.kind == "ratio":
        return _ratio_of(key, st.den or "")
    raise ValueError(f"the metric {metric.name!r}: a {st.kind} statistic has no interval")


def ci_metrics() -> dict[str, CaseSums]:
    """The rows of the metric table that get an interval (plugins' included), each with its per-case sums."""
    return {m.name: _sums_of(m) for m in SUITE_METRIC_TABLE if m.interval}


CI_METRICS = ci_metrics()
"""The built-in rows that get an interval, keyed by their summary names."""


def case_sums(cases: CountedCases, repeat: int, metrics: dict[str, CaseSums]) -> tuple[np.ndarray, np.ndarray]:
    """(numerators, denominators), each cases x metrics."""
    pairs = [sums(cases, repeat) for sums in metrics.values()]
    return np.column_stack([p[0] for p in pairs]), np.column_stack([p[1] for p in pairs])


def resampled_values(numer: np.ndarray, denom: np.ndarray, resamples: int = RESAMPLES,
                     seed: int = SEED) -> np.ndarray:
    """resamples x metrics: each metric on each row of idx = default_rng(seed).integers(0, c, (resamples, c));
    NaN where the metric is undefined on the row (its denominator is 0)."""
    c, m = numer.shape
    rng = np.random.default_rng(seed)
    out = np.full((resamples, m), np.nan)
    # Rows are drawn in blocks of about 4 million indices: the same stream as one (resamples, c) draw,
    # with bounded memory.
    step = max(1, min(resamples, 4_000_000 // max(c, 1)))
    sums = np.hstack([numer, denom])
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        idx = rng.integers(0, c, size=(rows, c))
        counts = np.empty((rows, c))
        for i in range(rows):  # how often each case is drawn in each row (a row-wise bincount is the fastest)
            counts[i] = np.bincount(idx[i], minlength=c)
        totals = counts @ sums
        top, bottom = totals[:, :m], totals[:, m:]
        defined = bottom > 0
        out[start:start + rows] = np.where(defined, top / np.where(defined, bottom, 1.0), np.nan)
    return out


def percentile_interval(values: np.ndarray) -> list[float] | None:
    """[low, high]: numpy's 2.5th and 97.5th percentiles of the values that are not NaN, to 4 places."""
    kept = values[~np.isnan(values)]
    if kept.size == 0:
        return None
    low, high = np.percentile(kept, CONFIDENCE_PERCENTILES)
    return [round(float(low), 4), round(float(high), 4)]


def suite_intervals(cases: CountedCases, repeat: int,
                    metrics: dict[str, CaseSums] | None = None) -> dict[str, list[float] | None]:
    """summary.ci: {metric: [low, high] or None} over the counted cases (`metrics`: every row's, by default)."""
    metrics = ci_metrics() if metrics is None else metrics
    if not cases.n:
        return dict.fromkeys(metrics)
    numer, denom = case_sums(cases, repeat, metrics)
    # A metric no case defines is null on every row: it is left out of the resampling.
    kept = [j for j in range(len(metrics)) if denom[:, j].any()]
    values = resampled_values(numer[:, kept], denom[:, kept])
    out: dict[str, list[float] | None] = dict.fromkeys(metrics)
    names = list(metrics)
    for column, j in enumerate(kept):
        out[names[j]] = percentile_interval(values[:, column])
    return out


def pass_hat_interval(cases: CountedCases, k: int) -> list[float] | None:
    """The interval of pass^k at a given k (compare's common k of two reports)."""
    return suite_intervals(cases, k, {"pass_hat_k": CI_METRICS["pass_hat_k"]})["pass_hat_k"]


def counted_cases(case_rows: Sequence[dict[str, Any]]) -> CountedCases:
    """The cases that count in the suite figures (skipped cases and errored runs left out), in report order."""
    runs: list[dict[str, Any]] = []
    owner: list[int] = []
    ns: list[int] = []
    cs: list[int] = []
    for row in case_rows:
        if row.get("status") == "skipped":
            continue
        counted = [r for r in row.get("runs") or [] if r.get("status") != "error"]
        if counted:
            owner.extend([len(ns)] * len(counted))
            runs.extend(r.get("metrics") or {} for r in counted)
            ns.append(len(counted))
            cs.append(sum(1 for r in counted if r.get("success")))
    return CountedCases(runs=runs, owner=np.asarray(owner, dtype=np.intp), n=ns, c=cs)
