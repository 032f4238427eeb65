"""What a provider's answer says about retrying it: its kind, the wait it hints at, and the wait chosen.

Pure functions of the status, the headers and a uniform draw, so each rule is tested with hand-computed
numbers (tests/provider/test_hints.py).
"""
from __future__ import annotations

import email.utils
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

MAX_RETRIES = 8
"""Connection errors, 408, 409 and 5xx: at most this many retries of one request."""
RETRY_AFTER_CAP_S = 60.0
"""A capped retry honours the provider's Retry-After only up to this many seconds."""
BACKOFF_FLOOR_S = 0.5
BACKOFF_CAP_S = 8.0
RATE_LIMIT_BACKOFF_CAP_S = 30.0
JITTER_CAP_S = 1.0
NEVER_RETRIED_CODES = ("insufficient_quota",)

Kind = Literal["rate_limited", "retry", "final"]


@dataclass(frozen=True)
class Hint:
    """The wait a provider asked for, and the header it came from (named in the error message)."""

    seconds: float
    source: str  # "retry-after-ms: 1500", "Retry-After: 2", "x-ratelimit-reset-requests: 6m0s"


_GO_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|us|µs|μs|ns|m|s)")
_GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9}


def parse_go_duration(text: str) -> float | None:
    """A Go duration ("1s", "20ms", "6m0s", "1h2m3.5s") in seconds; a bare number is seconds; None if neither."""
    value = text.strip()
    if not value:
        return None
    number = _number(value)
    if number is not None:
        return number
    total, at = 0.0, 0
    for match in _GO_PART.finditer(value):
        if match.start() != at:
            return None
        total += float(match.group(1)) * _GO_UNITS[match.group(2)]
        at = match.end()
    return total if at == len(value) else None


def parse_retry_after(text: str, now_unix: float) -> float | None:
    """`Retry-After` in seconds from now: a number of seconds, or an HTTP date (a past date is 0)."""
    number = _number(text.strip())
    if number is not None:
        return number
    try:
        when = email.utils.parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now_unix)


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def provider_hint(headers: Mapping[str, str], now_unix: float) -> Hint | None:
    """The provider's wait: `retry-after-ms`, else `Retry-After`, else the `x-ratelimit-reset-*` whose
    `x-ratelimit-remaining-*` is 0 (the longer of the two when both are spent). `headers` has lower-case names."""
    raw = headers.get("retry-after-ms")
    if raw is not None and (ms := _number(raw.strip())) is not None:
        return Hint(ms / 1000.0, f"retry-after-ms: {raw.strip()}")
    raw = headers.get("retry-after")
    if raw is not None and (seconds := parse_retry_after(raw, now_unix)) is not None:
        return Hint(seconds, f"Retry-After: {raw.strip()}")
    best: Hint | None = None
    for what in ("requests", "tokens"):
        remaining = headers.get(f"x-ratelimit-remaining-{what}")
        reset = headers.get(f"x-ratelimit-reset-{what}")
        if remaining is None or reset is None or _number(remaining.strip()) != 0:
            continue
        seconds = parse_go_duration(reset)
        if seconds is not None and (best is None or seconds > best.seconds):
            best = Hint(seconds, f"x-ratelimit-reset-{what}: {reset.strip()}")
    return best


def classify(status: int | None, headers: Mapping[str, str], error_code: str | None) -> Kind:
    """How a failed attempt is retried. `status` None: no answer (a connection error or a timeout).

    A 429, or a 503 with `Retry-After`, is `rate_limited` (retried until the budget is spent), unless its
    code is `insufficient_quota` or it carries `x-should-retry: false`; connection errors, 408, 409 and
    5xx are `retry` (at most MAX_RETRIES); anything else is `final`.
    """
    if headers.get("x-should-retry", "").strip().lower() == "false":
        return "final"
    if status == 429 or (status == 503 and "retry-after" in headers):
        return "final" if error_code in NEVER_RETRIED_CODES else "rate_limited"
    if status is None or status in (408, 409) or status >= 500:
        return "retry"
    return "final"


def hinted_wait(hint_s: float, draw: float) -> float:
    """The wait for a provider's hint: `hint + uniform(0, min(hint, 1 s))`, `draw` being uniform in [0, 1)."""
    return hint_s + draw * min(hint_s, JITTER_CAP_S)


def backoff(retries_before: int, cap_s: float, draw: float) -> float:
    """Exponential backoff with full jitter: uniform in [0.5 s, ceiling), the ceiling doubling from
    0.5 s with each retry already made and held at `cap_s`; `draw` is uniform in [0, 1)."""
    ceiling = min(cap_s, BACKOFF_FLOOR_S * 2.0 ** min(retries_before, 30))
    return BACKOFF_FLOOR_S + draw * max(0.0, ceiling - BACKOFF_FLOOR_S) if ceiling > BACKOFF_FLOOR_S else ceiling


def retry_wait(kind: Kind, hint: Hint | None, retries_before: int, draw: float) -> float:
    """Seconds to sleep before the next attempt of a `rate_limited` or `retry` answer."""
    if kind == "rate_limited":
        if hint is not None:
            return hinted_wait(hint.seconds, draw)
        return backoff(retries_before, RATE_LIMIT_BACKOFF_CAP_S, draw)
    if hint is not None and hint.seconds <= RETRY_AFTER_CAP_S:
        return hint.seconds
    return backoff(retries_before, BACKOFF_CAP_S, draw)
