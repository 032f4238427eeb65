"""Exact statistics behind the metrics: pass^k, pass@k, means and percentiles."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np


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
