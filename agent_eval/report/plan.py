"""`agent-eval plan REPORT`: how many repeats and cases the regression gate needs to see a drop.

From a report's per-case pass rates, each design (repeats k, the case count scaled x1, x2, x4) is
simulated: 1,000 pairs of runs (seeded), a base and a new one, where each case's runs succeed with its
pass rate in the base and with that rate minus the drop (not below 0) in the new one. The added cases
of a scaled design are drawn, for each simulated pair, from the report's pass rates. Each pair is decided
as the gate decides pass_at_1 (docs/ci.md): the paired case bootstrap of the new-minus-base delta, its
one-sided p-value, held to ALPHA / m with m the default gated metrics, the report's safety rates
included (the first step of Holm's procedure when pass_at_1 is the metric that moved). The same random
draws serve every drop, so the detection rate grows with the drop and the smallest drop detected with
probability P is found by bisection.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from agent_eval.records import UNCOMPARED, Report
from agent_eval.report.gate import ALPHA
from agent_eval.report.gate_stats import SEED, resample_weights
from agent_eval.score.metric_registry import DEFAULT_GATES

REPEATS = (1, 2, 3, 5, 8, 13)
SCALES = (1, 2, 4)
PAIRS = 1000
PLAN_RESAMPLES = 2000  # per simulated pair (the gate takes 10,000; 2,000 keep 18 designs within seconds)
BISECTION_STEPS = 6
LARGEST_DROP = 0.5  # the search's end: a gate that cannot see half the pass rate go is not a plan
MIN_CASES = 5
MAX_CASES = 1000  # x4 and k=13 over 1,000 pairs: about 200 MiB of draws for the largest design


@dataclass(frozen=True)
class Design:
    repeat: int
    scale: int
    cases: int

    @property
    def runs(self) -> int:
        return self.repeat * self.cases


class DesignSimulation:
    """The seeded draws of one design, decided for any drop as the gate decides pass_at_1."""

    def __init__(self, rates: np.ndarray, design: Design, pairs: int = PAIRS, resamples: int = PLAN_RESAMPLES,
                 m: int = len(DEFAULT_GATES)) -> None:
        rng = np.random.default_rng([SEED, design.repeat, design.scale])
        c, n, k = len(rates), design.cases, design.repeat
        self.p = np.empty((pairs, n))
        self.p[:, :c] = rates
        self.p[:, c:] = rng.choice(rates, size=(pairs, n - c))  # new cases drawn like the current ones
        self.base = (rng.random((pairs, n, k)) < self.p[..., None]).sum(axis=2, dtype=np.int32)  # each case's c
        # A new run succeeds while the drop is below its threshold p - u (u uniform): the same draws for every
        # drop, so a larger drop never turns a failure into a success.
        self.thresholds = (self.p[..., None] - rng.random((pairs, n, k))).astype(np.float32)
        # The gate's paired case resamples, as counts. pass_at_1's delta on a resample is the counts times
        # (c_new - c_base) / (k n): integers below 2**24 until the one positive factor, so float32 holds them
        # exactly and the sign, all the p-value reads, is the gate's.
        self.weights = resample_weights(n, resamples, SEED).astype(np.float32)
        self.scale = 1.0 / (k * n)
        self.level = ALPHA / m

    def flagged(self, drop: float) -> np.ndarray:
        """Per simulated pair: would the gate flag pass_at_1 as regressed?"""
        new = (self.thresholds > drop).sum(axis=2, dtype=np.int32)
        # Row j, column r: pass_at_1's new - base on resample r of pair j, times k n > 0 (the p-value reads
        # only its sign, so the exact integer is kept: `self.scale` would give the delta itself).
        deltas = (new - self.base).astype(np.float32) @ self.weights.T
        return pair_p_values(deltas) <= self.level

    def power(self, drop: float) -> float:
        return float(self.flagged(drop).mean())

    def min_drop(self, power: float, most: float) -> float | None:
        """The smallest drop (to BISECTION_STEPS halvings of [0, most]) detected with probability `power`;
        None when even `most` is not."""
        if self.power(most) < power:
            return None
        low, high = 0.0, most
        for _ in range(BISECTION_STEPS):
            mid = (low + high) / 2
            low, high = (low, mid) if self.power(mid) >= power else (mid, high)
        return high


def pair_p_values(deltas: np.ndarray) -> np.ndarray:
    """The gate's one-sided p-value (report/gate.py `p_value`, MAX_DROP 0, higher is better) of each row of
    bootstrap deltas at once: (1 + the resamples not worse than 0) / (1 + the resamples).
    tests/report/test_plan.py checks it against `p_value` row by row, so a change of the gate shows."""
    return (1 + np.count_nonzero(deltas >= 0, axis=1)) / (1 + deltas.shape[1])


def case_rates(report: Report) -> np.ndarray:
    """The per-case pass rates of the cases that count (not skipped, errored or not run); a rate outside
    0..1 (a damaged report) is no rate."""
    rates = [c.get("pass_rate") for c in report.get("cases") or []
             if isinstance(c, dict) and c.get("status") not in UNCOMPARED]
    return np.array([float(r) for r in rates
                     if isinstance(r, (int, float)) and not isinstance(r, bool) and 0 <= r <= 1])


def cost_per_run(report: Report) -> float | None:
    """The mean cost of the report's runs (the agent's, plus the judge's and the simulator's shared out)."""
    runs = [r for c in report.get("cases") or [] for r in (c.get("runs") or []) if isinstance(r, dict)]
    found: list[Any] = [(r.get("metrics") or {}).get("cost_usd") for r in runs]
    costs = [float(x) for x in found if _is_amount(x)]
    if not runs or len(costs) < len(runs):
        return None
    summary = report.get("summary") or {}
    helpers: list[Any] = [(summary.get(key) or {}).get("cost_usd") or 0.0 for key in ("judge", "user_sim")]
    if not all(_is_amount(h) for h in helpers):
        return None
    per_run = (sum(costs) + sum(float(h) for h in helpers)) / len(runs)  # past the largest float: inf, no error
    return per_run if math.isfinite(per_run) else None


def _is_amount(value: Any) -> bool:
    """A cost a report can hold: a finite, non-negative number of dollars (a damaged report's are unknown)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def plan(rates: np.ndarray, detect: float, power: float, per_run: float | None,
         pairs: int = PAIRS, m: int = len(DEFAULT_GATES)) -> dict[str, Any]:
    """Every design's false-alarm rate, detection rate at `detect`, minimum drop detected with probability
    `power` (searched up to `largest_drop`: LARGEST_DROP, or the highest pass rate when it is lower), runs
    and expected cost; and the cheapest design that detects `detect`."""
    designs: list[dict[str, Any]] = []
    most = min(LARGEST_DROP, float(rates.max()) if rates.size else 0.0)
    for scale in SCALES:
        for k in REPEATS:
            design = Design(k, scale, len(rates) * scale)
            sim = DesignSimulation(rates, design, pairs, m=m)
            designs.append({"repeat": k, "scale": scale, "cases": design.cases, "runs": design.runs,
                            "cost_usd": None if per_run is None or not math.isfinite(per_run * design.runs)
                            else per_run * design.runs,
                            "false_alarm": sim.power(0.0), "power_at_detect": sim.power(detect),
                            "min_drop": sim.min_drop(power, most)})
    able = [d for d in designs if d["power_at_detect"] >= power]
    cheapest = min(able, key=lambda d: (d["runs"], d["repeat"])) if able else None
    return {"cases": int(rates.size), "mean_pass_rate": float(rates.mean()) if rates.size else None,
            "detect": detect, "power": power, "pairs": pairs, "m": m, "alpha": ALPHA,
            "largest_drop": most,
            "cost_per_run_usd": per_run, "designs": designs, "cheapest": cheapest}
