"""The gate on a large suite holds its resamples a block at a time: the same seeded draws and the same
figures as the whole weights matrix, without its memory (a 20,000-case compare held 6.5 GB, now 0.6)."""
from __future__ import annotations

import numpy as np

from agent_eval.report import gate_stats
from agent_eval.report.gate_stats import Stat, evaluate, evaluate_resamples, resample_weights, weight_blocks


def test_the_blocks_are_the_rows_of_the_whole_weights(monkeypatch) -> None:
    monkeypatch.setattr(gate_stats, "BLOCK_CELLS", 7 * 300)  # 300 rows of 7 cases a block
    blocks = list(weight_blocks(7))
    assert len(blocks) > 1 and sum(len(b) for b in blocks) == gate_stats.RESAMPLES
    np.testing.assert_array_equal(np.vstack(blocks), resample_weights.__wrapped__(7))


def test_block_by_block_evaluation_gives_the_whole_matrix_figures(monkeypatch) -> None:
    rng = np.random.default_rng(3)
    n = 40
    stats = [Stat("sum", num=rng.random(n)), Stat("ratio", num=rng.random(n), den=rng.random(n) + 0.5),
             Stat("percentile", values=rng.random(3 * n), owner=np.repeat(np.arange(n), 3), q=95.0)]
    whole = evaluate(stats, resample_weights(n))
    monkeypatch.setattr(gate_stats, "_CACHED_CELLS", 0)
    monkeypatch.setattr(gate_stats, "BLOCK_CELLS", n * 999)
    blocked = evaluate_resamples(stats, n)
    for a, b in zip(whole, blocked, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, equal_nan=True)
