"""`run --max-cost USD`: the spend of the whole command (agent, judge, simulator), and when to stop taking runs.

Before a run starts, the spend so far plus the expected spend of the runs in flight (the mean cost of
the finished runs, per run) must leave room for one more run; when it does not, the scheduler stops
taking new runs as -x does. Until a first run has finished there is no mean: one run plays alone, as a
probe, so that a run at --concurrency 50 cannot start 50 runs on a budget worth 3.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.score.prices import price_hint, price_source

UNLIMITED = 2**31 - 1  # the room left when finished runs cost nothing


def check_max_cost(value: float | None) -> None:
    """ConfigError unless --max-cost is a positive, finite number of US dollars."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise ConfigError(f"--max-cost must be a positive, finite number of US dollars (got {value}), such as "
                          "--max-cost 5 for $5.00.")


def require_prices(models: Iterable[tuple[str, str | None]], pricing: Mapping[str, Any] | None,
                   cases_file: object) -> None:
    """Exit 2 before anything runs when a model whose spend --max-cost bounds has no price.

    `models` is (who, model) pairs: the agent's, the judge's and the simulator's models that will be used."""
    for who, model in models:
        if model and price_source(model, pricing) is None:
            raise ConfigError(f"--max-cost cannot bound the spend of the {who}: {price_hint(model)} in the suite "
                              f"block of {cases_file}.")


class Budget:
    """The budget of one command: what was spent, what finished, and how many more runs may start."""

    def __init__(self, limit_usd: float, helper_cost: Callable[[], float | None]) -> None:
        self.limit_usd = limit_usd
        self._helper_cost = helper_cost  # this process's judge and simulator spend so far (workers' included)
        self.earlier_usd = 0.0  # earlier processes' judge and simulator spend (--resume)
        self.runs_usd = 0.0  # the agent's cost of every finished run, restored ones included
        self.finished = 0
        self.helper_usd = 0.0
        self.unpriced: str | None = None  # why the spend is no longer known, if it is not

    def add_run(self, cost_usd: Any) -> None:
        """A run finished (or was restored by --resume): its agent cost, and the helpers' spend now."""
        self.finished += 1
        if (isinstance(cost_usd, (int, float)) and not isinstance(cost_usd, bool) and math.isfinite(cost_usd)
                and cost_usd >= 0):
            self.runs_usd += float(cost_usd)
        elif self.unpriced is None:  # no price, or a journal's impossible (negative) cost: never more room
            self.unpriced = "a run's cost is unknown (a model it called has no price)"
        self.refresh()

    def refresh(self) -> None:
        helper = self._helper_cost()
        if helper is None:
            if self.unpriced is None:
                self.unpriced = "the judge's or the simulator's cost is unknown"
        else:
            self.helper_usd = helper

    @property
    def spent_usd(self) -> float:
        return self.earlier_usd + self.runs_usd + self.helper_usd

    def room(self, in_flight: int) -> int | None:
        """How many more runs may start now; 0 means stop taking runs, None means wait for the probe run."""
        if self.unpriced is not None or self.spent_usd >= self.limit_usd:
            return 0
        if self.finished == 0:
            return 1 if in_flight == 0 else None
        mean = self.spent_usd / self.finished
        if mean <= 0:
            return UNLIMITED
        # Starting one more must not cross the budget: spent + (in_flight + 1) * mean <= limit.
        fits = math.floor((self.limit_usd - self.spent_usd) / mean + 1e-9) - in_flight
        return max(0, min(fits, UNLIMITED))


def report_spend(report: Mapping[str, Any]) -> float | None:
    """summary.budget.spent_usd: every run's cost (errored runs included) plus the judge's and the
    simulator's; null when any part has no price."""
    parts: list[Any] = [(run.get("metrics") or {}).get("cost_usd")
                        for case in report.get("cases") or [] for run in case.get("runs") or []]
    summary = report.get("summary") or {}
    parts += [(summary.get(key) or {}).get("cost_usd", 0.0) for key in ("judge", "user_sim")]
    if any(not isinstance(p, (int, float)) or isinstance(p, bool) for p in parts):
        return None
    return math.fsum(parts)
