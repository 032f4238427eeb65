"""Time a run spends waiting for the provider's limit: `trace.rate_limit_wait_s`, and what --timeout skips.

A run sets a `Waits` as the current one (a context variable, so concurrent runs never mix); every
request made inside it records its waiting intervals there: for a place in the window, for the token
bucket, and on rate-limited attempts (from such an attempt's start to the start of the next attempt).
Intervals of concurrent requests overlap, so the run's figure is the length of their union.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any


class Interval:
    """One waiting interval; `end` None while it is still open (counted up to now)."""

    __slots__ = ("start", "end")

    def __init__(self, start: float) -> None:
        self.start = start
        self.end: float | None = None


class Waits:
    """The waiting intervals of one run, on the `time.perf_counter` clock."""

    def __init__(self) -> None:
        self.intervals: list[Interval] = []

    def within(self, start: float, end: float | None = None) -> float:
        """Seconds of waiting between `start` and `end` (now when None): the union, clipped."""
        now = time.perf_counter()
        end = now if end is None else end
        spans = sorted((max(i.start, start), min(now if i.end is None else i.end, end)) for i in self.intervals)
        total, reach = 0.0, start
        for low, high in spans:
            low = max(low, reach)
            if high > low:
                total += high - low
                reach = high
        return total


_current: ContextVar[Waits | None] = ContextVar("agent_eval_rate_limit_waits", default=None)


def current() -> Waits | None:
    """The running run's waits, if a run is running in this context."""
    return _current.get()


@contextmanager
def recording(waits: Waits | None) -> Iterator[Waits | None]:
    """Make `waits` the current run's for the requests made inside the block (None: no run's)."""
    token = _current.set(waits)
    try:
        yield waits
    finally:
        _current.reset(token)


class RequestWaits:
    """One request's side of it: opens and closes its intervals on the current run's `Waits`, if any."""

    def __init__(self) -> None:
        self._waits = current()
        self._open: Interval | None = None
        self.total = 0.0  # this request's own waiting, closed intervals only

    def begin(self, start: float | None = None) -> None:
        """Waiting from `start` (now when None) on, until `end`."""
        if self._open is None:
            self._open = Interval(time.perf_counter() if start is None else start)
            if self._waits is not None:
                self._waits.intervals.append(self._open)

    def end(self) -> None:
        if self._open is not None:
            self._open.end = time.perf_counter()
            self.total += self._open.end - self._open.start
            self._open = None

    def __enter__(self) -> RequestWaits:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.end()
