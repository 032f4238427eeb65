"""The two gates a request passes before it is sent: the endpoint's adaptive window of requests in flight,
and the client-side token bucket of `--rate-limit`. Both live on one event loop (no locks)."""
from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

_EPSILON = 1e-9
HALVE_EVERY_S = 1.0
"""A window is halved at most once a second: a burst of 429s from one overload halves it once."""


class Window:
    """Adaptive concurrency: at most `size` requests in flight; halved on a 429, +1 per window of successes.

    Starts at its ceiling (--concurrency, or a worker's slots). `size` never drops below 1 and never passes
    the ceiling. Waiters are served in arrival order.
    """

    def __init__(self, ceiling: int, clock: Callable[[], float] = time.monotonic,
                 on_change: Callable[[Window], None] | None = None) -> None:
        self.ceiling = max(1, ceiling)
        self.size = self.ceiling
        self.smallest = self.ceiling
        self.in_flight = 0
        self._successes = 0
        self._halved_at: float | None = None
        self._clock = clock
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._on_change = on_change or (lambda window: None)

    async def acquire(self) -> bool:
        """Wait for a place in the window, then take it; True when it had to wait."""
        if self.in_flight < self.size and not self._waiters:
            self.in_flight += 1
            return False
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # the place was given just as the request was cancelled: hand it on
            elif waiter in self._waiters:  # a wake-up may have dropped it already (it was done)
                self._waiters.remove(waiter)
            raise
        return True

    def is_full(self) -> bool:
        """True when a request asking now would wait for a place."""
        return self.in_flight >= self.size or bool(self._waiters)

    def release(self) -> None:
        """Give a place back (the request ended, or sleeps before a retry)."""
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.size:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_flight += 1
                waiter.set_result(None)

    def succeeded(self) -> None:
        """An answered request: a whole window of them in a row raises the size by 1, up to the ceiling."""
        self._successes += 1
        if self._successes >= self.size and self.size < self.ceiling:
            self._successes = 0
            self.size += 1
            self._on_change(self)
            self._wake()

    def rate_limited(self) -> None:
        """A 429: halve the window, unless it was halved less than a second ago."""
        self._successes = 0
        now = self._clock()
        if self._halved_at is not None and now - self._halved_at < HALVE_EVERY_S:
            return
        self._halved_at = now
        if self.size > 1:
            self.size = max(1, self.size // 2)
            self.smallest = min(self.smallest, self.size)
            self._on_change(self)

    def set_ceiling(self, ceiling: int) -> None:
        """A new ceiling (a worker's slots); the window keeps its size where it still fits."""
        self.ceiling = max(1, ceiling)
        self.size = min(self.size, self.ceiling)
        self.smallest = min(self.smallest, self.size)
        self._wake()


@dataclass(frozen=True)
class RateLimit:
    """`--rate-limit RPM[:BURST]`: at most `rpm` requests a minute, `burst` of them at once."""

    rpm: float
    burst: int = 1

    def __str__(self) -> str:
        rpm = f"{self.rpm:g}"
        return rpm if self.burst == 1 else f"{rpm}:{self.burst}"


MAX_RPM = 10**9


def parse_rate_limit(text: str) -> RateLimit:
    """`RPM[:BURST]` as a RateLimit; ValueError saying what is wrong (the caller names the flag or key)."""
    rpm_text, _, burst_text = str(text).strip().partition(":")
    try:
        rpm = float(rpm_text)
    except ValueError:
        raise ValueError(f"{text!r} is not RPM[:BURST] (requests a minute, then optionally a burst size, "
                         "such as 3000 or 3000:10)") from None
    if not math.isfinite(rpm) or not 0 < rpm <= MAX_RPM:
        raise ValueError(f"the requests a minute must be a positive number of at most {MAX_RPM} (got {rpm_text!r})")
    burst = 1
    if burst_text or text.strip().endswith(":"):
        if not burst_text.strip().isdigit() or not 1 <= int(burst_text) <= 2**31 - 1:
            raise ValueError(f"the burst must be a whole number of at least 1 (got {burst_text!r}), as in 3000:10")
        burst = int(burst_text)
    return RateLimit(rpm, burst)


class TokenBucket:
    """A client-side token bucket: `rate` tokens a second, at most `capacity` saved up.

    Requests take tokens one at a time, in arrival order (a FIFO lock): the one at the head sleeps until
    its token has come. A stall of the event loop saves up no more than `capacity` tokens, so it never
    turns into a burst the provider would answer with 429s.
    """

    def __init__(self, limit: RateLimit, share: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self._clock = clock
        self.rate = self.capacity = 0.0
        self.set_share(share)
        self.tokens = self.capacity
        self._at = clock()
        self._lock: asyncio.Lock | None = None

    def set_share(self, share: float) -> None:
        """This process's part of the limit (1/N of it among N workers that still have runs to play)."""
        self.rate = self.limit.rpm / 60.0 * share
        self.capacity = max(1.0, self.limit.burst * share)

    def _refill(self) -> None:
        now = self._clock()
        self.tokens = min(self.capacity, self.tokens + (now - self._at) * self.rate)
        self._at = now

    def try_take(self) -> float:
        """Take a token when one is there (0.0); else the seconds until one will be (nothing is taken)."""
        self._refill()
        if self.tokens >= 1.0 - _EPSILON:  # a token that has come, give or take the clock's rounding
            self.tokens = max(0.0, self.tokens - 1.0)
            return 0.0
        return (1.0 - self.tokens) / self.rate

    def would_wait(self) -> bool:
        """True when a request asking now would wait for its token."""
        if self._lock is not None and self._lock.locked():
            return True
        self._refill()
        return self.tokens < 1.0 - _EPSILON

    async def take(self) -> None:
        """Wait for a token, in arrival order, and take it."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            while (wait := self.try_take()) > 0:
                await asyncio.sleep(wait)
