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


def require_prices(models: Iterable[tuple[str, str | None]], pricing: Mapping[str, Any] | None,
                   cases_file: object) -> None:
    """Exit 2 before anything runs when a model whose spend --max-cost bounds has no price.

    `models` is (who, model) pairs: the agent's, the judge's and the simulator's models that will be used."""
    for who, model in models:
        if model and price_source(model, pricing) is None:
            raise ConfigError(f"--max-cost cannot bound the spend of the {who}: {price_hint(model)} in the suite "
                              f"block of {cases_file}.")


NO_PRICE = "a run's cost is unknown: a model it called has no price"


def unknown_cost_cause(metrics: Mapping[str, Any]) -> str:
    """Why a run's cost is unknown: the provider's invalid token counts (metrics.usage_invalid), a recorded
    cost that is impossible (a hostile journal), or a model with no price."""
    invalid = metrics.get("usage_invalid")
    if isinstance(invalid, int) and not isinstance(invalid, bool) and invalid > 0:
        return (f"a run's cost is unknown: the provider reported {invalid} token count(s) that are not whole "
                "numbers from 0 to 2**53 - 1 (the run's metrics.usage_invalid), so its tokens cannot be priced")
    cost = metrics.get("cost_usd")
    if cost is not None:
        return f"a run's recorded cost is impossible ({str(cost)[:40]}, not a finite amount of at least 0)"
    return NO_PRICE


def budget_warning(cause: str, models_used: Iterable[str], pricing: Mapping[str, Any] | None,
                   cases_file: object) -> str:
    """Why --max-cost stopped taking runs, and the fix: the models with no price, named, when that is why."""
    fix = ""
    if cause == NO_PRICE:
        missing = sorted(m for m in models_used if price_source(m, pricing) is None)
        fix = (f" ({', '.join(map(repr, missing))}); add it to the suite block's pricing in {cases_file}" if missing
               else "; add it to the suite block's pricing (the report's header names it)")
    return f"warning: --max-cost stopped taking runs because {cause}{fix}, so the spend can no longer be bounded."


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

    def add_run(self, metrics: Mapping[str, Any]) -> None:
        """A run finished (or was restored by --resume): its agent cost (from its metrics), and the helpers'
        spend now. A run whose cost is unknown records why in `unpriced`."""
        self.finished += 1
        cost_usd = metrics.get("cost_usd")
        if (isinstance(cost_usd, (int, float)) and not isinstance(cost_usd, bool) and math.isfinite(cost_usd)
                and cost_usd >= 0):
            self.runs_usd += float(cost_usd)
        elif self.unpriced is None:  # never more room once the spend is unknown
            self.unpriced = unknown_cost_cause(metrics)
        self.refresh()

    def refresh(self) -> None:
        helper = self._helper_cost()
        if helper is None:
            if self.unpriced is None:
                self.unpriced = ("the judge's or the simulator's cost is unknown (a model with no price, or "
                                 "invalid token counts: the report's summary.judge and summary.user_sim say which)")
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
