"""Exact statistics behind the metrics: assignment, pass^k, pass@k, means and percentiles."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np


def max_weight_assignment(weights: Sequence[Sequence[int]]) -> int:
    """Return the largest total weight of a one-to-one pairing of rows with columns.

    Weights are non-negative integers, so pairing every row of the smaller side is never worse than
    leaving one unpaired. Hungarian algorithm, O(n^2 m): exact, and fast for 30 x 30.
    """
    if not weights or not weights[0]:
        return 0
    rows = [list(r) for r in weights]
    if len(rows) > len(rows[0]):
        rows = [list(col) for col in zip(*rows, strict=True)]
    n, m = len(rows), len(rows[0])
    inf = math.inf
    u: list[float] = [0.0] * (n + 1)
    v: list[float] = [0.0] * (m + 1)
    owner = [0] * (m + 1)  # owner[j]: the row paired with column j (1-based), 0 = free
    way = [0] * (m + 1)
    for i in range(1, n + 1):
        owner[0] = i
        j0 = 0
        minv = [inf] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[j0] = True
            i0 = owner[j0]
            row = rows[i0 - 1]
            delta, j1 = inf, 0
            for j in range(1, m + 1):
                if not used[j]:
                    # Minimising the negated weight maximises the weight.
                    cur = -row[j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j], way[j] = cur, j0
                    if minv[j] < delta:
                        delta, j1 = minv[j], j
            for j in range(m + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if owner[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            owner[j0] = owner[j1]
            j0 = j1
    return sum(rows[owner[j] - 1][j - 1] for j in range(1, m + 1) if owner[j])


def pass_hat(counts: Sequence[tuple[int, int]], k: int) -> float | None:
    """Mean of C(c,k)/C(n,k) over the (n, c) pairs with n >= k (tau-bench's pass^k); None if none."""
    terms = [Fraction(math.comb(c, k), math.comb(n, k)) for n, c in counts if n >= k]
    return float(sum(terms) / len(terms)) if terms else None


def pass_at_k(counts: Sequence[tuple[int, int]], k: int) -> float | None:
    """Mean of 1 - C(n-c,k)/C(n,k) over the (n, c) pairs with n >= k (unbiased pass@k); None if none."""
    terms = [1 - Fraction(math.comb(n - c, k), math.comb(n, k)) for n, c in counts if n >= k]
    return float(sum(terms) / len(terms)) if terms else None


def mean_rate(counts: Sequence[tuple[int, int]]) -> float | None:
    """Mean of c/n over the (n, c) pairs with n > 0; None if none."""
    terms = [Fraction(c, n) for n, c in counts if n > 0]
    return float(sum(terms) / len(terms)) if terms else None


def mean(values: Sequence[float | None]) -> float | None:
    """Mean of the values that are not None; None if there are none."""
    present = [float(x) for x in values if x is not None]
    return math.fsum(present) / len(present) if present else None


def ratio(numerator: float, denominator: float) -> float | None:
    """numerator / denominator, or None when the denominator is 0."""
    return numerator / denominator if denominator else None


def percentile(values: Sequence[float | None], q: float) -> float | None:
    """The q-th percentile (numpy's linear interpolation) of the values that are not None."""
    present = [x for x in values if x is not None]
    return float(np.percentile(np.asarray(present, dtype=float), q)) if present else None
