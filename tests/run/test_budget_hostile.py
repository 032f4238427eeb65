"""--max-cost against a hostile journal: a run whose recorded cost is impossible (negative, as an agent
that rewrote the journal before a --resume could leave it) never gives the budget more room."""
from __future__ import annotations

import pytest

from agent_eval.run.budget import Budget


@pytest.mark.parametrize("cost", [-1e9, -0.01, float("nan"), float("inf"), "1.0", True])
def test_an_impossible_run_cost_stops_taking_runs(cost: object) -> None:
    budget = Budget(5.0, lambda: 0.0)
    budget.add_run({"cost_usd": 1.0})
    assert budget.room(0) == 4  # $1 a run, $4 left
    budget.add_run({"cost_usd": cost})
    assert budget.room(0) == 0 and budget.unpriced is not None and "impossible" in budget.unpriced
