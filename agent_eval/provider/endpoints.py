"""Each endpoint's state in a command: its window, its share of a token bucket, and what it met
(`summary.provider`). An endpoint is a role (agent, judge, user), a base URL and a model.

A command's `EndpointTable` (in its provider.state) has its settings: the ceiling is --concurrency (a
worker's slots under --workers), the limits --rate-limit and --judge-rate-limit, the budget --retry-budget.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agent_eval.limits import RETRY_BUDGET_S
from agent_eval.provider import events
from agent_eval.provider.throttle import RateLimit, TokenBucket, Window


ROLES = ("agent", "judge", "user")


@dataclass
class Settings:
    """What the command sets for every endpoint of this process."""

    ceiling: int = 8
    rate_limit: RateLimit | None = None
    judge_rate_limit: RateLimit | None = None  # the judge's and the simulator's endpoints
    retry_budget_s: float = RETRY_BUDGET_S
    share: float = 1.0  # this process's part of each rate limit (1/N among N workers with runs left)

    def limit_for(self, role: str) -> RateLimit | None:
        return self.rate_limit if role == "agent" else self.judge_rate_limit


@dataclass
class Endpoint:
    """One (role, base URL, model): its window, its bucket (shared with the other roles of the same URL
    and model) and its counts."""

    role: str
    base_url: str  # secrets removed
    model: str | None
    window: Window
    bucket: TokenBucket | None
    requests: int = 0  # HTTP attempts sent
    rate_limited: int = 0  # 429s (and 503s with Retry-After) received
    retries: int = 0  # attempts after a request's first, of any kind
    retry_wait_s: float = 0.0  # seconds slept before retries
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """This endpoint's entry of `summary.provider`."""
        return {"role": self.role, "base_url": self.base_url, "model": self.model, "requests": self.requests,
                "rate_limited": self.rate_limited, "retries": self.retries,
                "retry_wait_s": round(self.retry_wait_s, 3), "min_concurrency": self.window.smallest}


class EndpointTable:
    """A command's endpoints in this process, made on first use with its settings, and their buckets: an
    agent and a judge on the same URL and model share one. Window changes go to `listeners`."""

    def __init__(self, settings: Settings | None = None, listeners: events.Listeners | None = None) -> None:
        self.settings = settings or Settings()
        self.listeners = listeners if listeners is not None else events.Listeners()
        self._endpoints: dict[tuple[str, str, str | None], Endpoint] = {}
        self._buckets: dict[tuple[str, str | None], TokenBucket] = {}

    def set_share(self, share: float) -> None:
        """This process's new part of every rate limit (the driver re-splits when a worker is done)."""
        self.settings.share = share
        for bucket in self._buckets.values():
            bucket.set_share(share)

    def set_limits(self, ceiling: int, share: float) -> None:
        """A worker's slots (its windows' ceiling) and its part of every rate limit, as the driver says."""
        self.settings.ceiling = max(1, ceiling)
        self.set_share(share)
        for found in self._endpoints.values():
            found.window.set_ceiling(self.settings.ceiling)

    def endpoint(self, role: str, base_url: str, model: str | None) -> Endpoint:
        """The endpoint's state, made on first use."""
        key = (role, base_url, model)
        found = self._endpoints.get(key)
        if found is None:
            shown = f"{base_url}" if role == "agent" else f"{base_url} ({role})"
            window = Window(self.settings.ceiling, on_change=lambda window: self.listeners.window_changed(
                None, shown, window.size, window.ceiling))
            found = self._endpoints[key] = Endpoint(role, base_url, model, window, self._bucket(role, base_url, model))
        return found

    def _bucket(self, role: str, base_url: str, model: str | None) -> TokenBucket | None:
        """Made with the smaller of the limits that apply to the roles that use it (the agent's, the judge's)."""
        key = (base_url, model)
        bucket = self._buckets.get(key)
        limit = self.settings.limit_for(role)
        if bucket is None:
            if limit is None:
                return None
            bucket = self._buckets[key] = TokenBucket(limit, self.settings.share)
        elif limit is not None and limit.rpm < bucket.limit.rpm:
            bucket.limit = limit
            bucket.set_share(self.settings.share)
        return bucket

    def summary(self) -> list[dict[str, Any]]:
        """`summary.provider` of this process: one entry per endpoint that was asked anything."""
        return [e.summary() for e in self._endpoints.values() if e.requests]


def merge_summaries(parts: Iterable[list[dict[str, Any]] | None], concurrent: bool = True) -> list[dict[str, Any]]:
    """`summary.provider` over several processes: counts and waits add up; the smallest windows add up
    too for processes that ran at once (workers), and the smallest is kept for ones that ran one after
    the other (the processes of a resumed run)."""
    merged: dict[tuple[Any, Any, Any], dict[str, Any]] = {}
    for part in parts:
        for entry in part or ():
            key = (entry.get("role"), entry.get("base_url"), entry.get("model"))
            into = merged.get(key)
            if into is None:
                merged[key] = dict(entry)
                continue
            for name in ("requests", "rate_limited", "retries"):
                into[name] = (into.get(name) or 0) + (entry.get(name) or 0)
            low, other = into.get("min_concurrency") or 0, entry.get("min_concurrency") or 0
            into["min_concurrency"] = low + other if concurrent else min(low, other) if low and other else low or other
            into["retry_wait_s"] = round((into.get("retry_wait_s") or 0.0) + (entry.get("retry_wait_s") or 0.0), 3)
    return list(merged.values())


class WindowBoard(events.RunListener):
    """Every process's windows (this one's, each worker's), for the progress line: per endpoint, the sum
    of the sizes and of the ceilings, shown while it is below the ceiling. It listens to window changes."""

    def __init__(self) -> None:
        self._windows: dict[tuple[Any, str], tuple[int, int]] = {}

    def window_changed(self, where: int | None, endpoint: str, size: int, ceiling: int) -> None:
        self._windows[(where, endpoint)] = (size, ceiling)

    def forget(self, where: Any) -> None:
        """A worker that is done (or gone) holds no window any more."""
        for key in [k for k in self._windows if k[0] == where]:
            del self._windows[key]

    def in_flight(self) -> int:
        """The sum of every window's size (what may be in flight at once, over all processes)."""
        return sum(size for size, _ in self._windows.values())

    def line(self) -> str | None:
        """"rate limited: 9 of 50 in flight" (one part per endpoint below its ceiling), or None."""
        totals: dict[str, list[int]] = {}
        for (_, endpoint), (size, ceiling) in self._windows.items():
            total = totals.setdefault(endpoint, [0, 0])
            total[0] += size
            total[1] += ceiling
        parts = [f"{size} of {ceiling} in flight" + ("" if len(totals) == 1 else f" ({endpoint})")
                 for endpoint, (size, ceiling) in totals.items() if size < ceiling]
        return "rate limited: " + "; ".join(parts) if parts else None
