"""A rate-limited loopback provider: a token bucket in front of the loopback server, 429s with hints.

Shared by the e2e tests (in a thread) and bench/rate_limits.py (in a process of its own)::

    from tests.ratelimited import RateLimitedServer
    with RateLimitedServer(script, rate=50, burst=10, latency_s=0.05, hint="retry-after") as srv:
        ...
        assert srv.rate_limited == ...   # the 429s it sent

Each request takes a token when it arrives; with none left it is answered at once with 429 and the
hint of `hint`, the time until the next token:
- "retry-after": `Retry-After` in whole seconds (rounded up, as RFC 9110 writes it)
- "retry-after-ms": `retry-after-ms` alone
- "http-date": `Retry-After` as an HTTP date (one-second resolution, rounded up)
- "reset-requests": `x-ratelimit-remaining-requests: 0` and `x-ratelimit-reset-requests` (a Go duration)
- "always-429": every request is a 429 with `Retry-After: 2`
- "insufficient-quota": every request is a 429 whose error code is `insufficient_quota`
A served request takes `latency_s` before its answer.
"""
from __future__ import annotations

import asyncio
import email.utils
import math
import threading
import time
from typing import Any

from tests.loopback import LoopbackServer, Script

HINTS = ("retry-after", "retry-after-ms", "http-date", "reset-requests", "always-429", "insufficient-quota")


class RateLimitedServer(LoopbackServer):
    """LoopbackServer behind a token bucket of `rate` requests a second and `burst` at once."""

    def __init__(self, script: Script, rate: float = 50.0, burst: int = 10, latency_s: float = 0.05,
                 hint: str = "retry-after", keep_requests: bool = False) -> None:
        if hint not in HINTS:
            raise ValueError(f"hint must be one of {HINTS}, not {hint!r}")
        super().__init__(script, latency_s=0.0, keep_requests=keep_requests)
        self.rate, self.burst, self.serve_s, self.hint = rate, burst, latency_s, hint
        self._tokens, self._at = float(burst), time.monotonic()
        self._bucket = threading.Lock()
        self.served = 0
        self.rate_limited = 0
        self.first_at: float | None = None
        self.last_at: float | None = None

    def _take(self) -> float:
        """Take a token: 0 when one was there, else the seconds until the next one (nothing taken)."""
        with self._bucket:
            now = time.monotonic()
            self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.rate)
            self._at = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return 0.0
            return (1.0 - self._tokens) / self.rate

    async def _reply_to(self, request: dict, number: int, responses: bool = False) -> tuple[int, Any, dict]:
        now = time.monotonic()
        self.first_at = self.first_at if self.first_at is not None else now
        self.last_at = now
        if self.hint == "always-429":
            return self._limited(2.0, {"retry-after": "2"})
        if self.hint == "insufficient-quota":
            self.rate_limited += 1
            body = {"error": {"message": "You exceeded your current quota, please check your plan and billing "
                              "details.", "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}}
            return 429, body, {}
        wait = self._take()
        if wait > 0:
            return self._limited(wait, self._headers_for(wait))
        if self.serve_s > 0:
            await asyncio.sleep(self.serve_s)
        self.served += 1
        return await super()._reply_to(request, number, responses)

    def _limited(self, wait: float, headers: dict[str, str]) -> tuple[int, Any, dict]:
        self.rate_limited += 1
        body = {"error": {"message": f"Rate limit reached: {self.rate:g} requests a second. Please try again "
                          f"in {wait * 1000:.0f}ms.", "type": "requests", "param": None,
                          "code": "rate_limit_exceeded"}}
        return 429, body, headers

    def _headers_for(self, wait: float) -> dict[str, str]:
        if self.hint == "retry-after":
            return {"retry-after": str(max(1, math.ceil(wait)))}
        if self.hint == "retry-after-ms":
            return {"retry-after-ms": str(max(1, math.ceil(wait * 1000)))}
        if self.hint == "http-date":
            return {"retry-after": email.utils.formatdate(math.ceil(time.time() + wait), usegmt=True)}
        return {"x-ratelimit-remaining-requests": "0", "x-ratelimit-limit-requests": f"{self.rate * 60:g}",
                "x-ratelimit-reset-requests": f"{max(1, math.ceil(wait * 1000))}ms"}

    def stats(self) -> dict[str, Any]:
        """What the server saw: requests served and 429s sent, and the first and last arrival."""
        return {"served": self.served, "rate_limited": self.rate_limited,
                "span_s": (self.last_at - self.first_at) if self.first_at and self.last_at else 0.0}


def serve_in_process(conn: Any, kwargs: dict[str, Any], script: Script) -> None:
    """A process's main: serve until told to stop; "stats" answers `stats()`, "reset" starts counting anew."""
    with RateLimitedServer(script, **kwargs) as srv:
        conn.send(srv.base_url)
        while True:
            command = conn.recv()
            if command == "stats":
                conn.send(srv.stats())
            elif command == "reset":
                srv.served = srv.rate_limited = 0
                srv.first_at = srv.last_at = None
                conn.send(None)
            else:
                return
