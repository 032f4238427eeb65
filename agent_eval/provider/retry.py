"""agent-eval's own retry loop over one SDK request (the SDK's client is built with max_retries=0).

Each attempt waits for a place in its endpoint's window and for the token bucket, then is sent. A failed
attempt is classified (`hints.classify`): rate-limited answers are retried until `--retry-budget` is
spent, other retryable ones at most 8 times, the rest not at all; no wait may outrun what is left of the
budget. Waiting for a place, for a token, and every retried attempt (from its start to the start of the
next attempt) is recorded on the current run (`waits`): none of it is the agent's time (--timeout,
latency). `timeout_s` (--judge-timeout) bounds a judge or simulator request as a whole with its
retries, but not the time it spends waiting for the rate limit (a place, a token, a 429).
"""
from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from agent_eval.provider import hints, state
from agent_eval.provider.endpoints import Endpoint
from agent_eval.provider.waits import RequestWaits

T = TypeVar("T")
_draw = random.Random()


class RequestFailed(Exception):
    """The request's last attempt failed and is not retried: `error` is the SDK's (or transport's) exception,
    `note` says why it was not retried when that is not plain ("; ... --retry-budget ...")."""

    def __init__(self, error: BaseException, retries: int, note: str = "") -> None:
        super().__init__(str(error))
        self.error, self.retries, self.note = error, retries, note


class RequestTimedOut(Exception):
    """The request outran its timeout (time spent waiting for the limit not counted)."""

    def __init__(self, retries: int) -> None:
        super().__init__("timed out")
        self.retries = retries


def failure_of(exc: BaseException) -> tuple[int | None, Mapping[str, str], str | None]:
    """(status or None for no answer, lower-case headers, error code) of a failed attempt."""
    response = getattr(exc, "response", None)
    status = getattr(exc, "status_code", None)
    headers = {k.lower(): v for k, v in response.headers.items()} if response is not None else {}
    code = getattr(exc, "code", None)
    return status, headers, code if isinstance(code, str) else None


def is_retryable_error(exc: BaseException) -> bool:
    """An SDK error (or a transport error) at all: anything else is a bug and propagates."""
    import openai

    return isinstance(exc, openai.APIStatusError | openai.APIConnectionError)


async def send(ep: Endpoint, attempt: Callable[[], Awaitable[T]], timeout_s: float | None = None,
               shown: str = "") -> T:
    """Send one request through the window, the bucket and the retry loop; the answer of the attempt that
    succeeded, or RequestFailed / RequestTimedOut. `shown` is the endpoint as the progress line names it."""
    command = state.current()
    cfg = command.endpoints.settings
    waits = RequestWaits()
    retries, counted = 0, 0.0  # counted: towards `timeout_s` (--judge-timeout): retried attempts but not a 429's
    first_at: float | None = None
    mark = time.perf_counter()  # from here, a wait for a place or a token is waiting for the limit
    try:
        while True:
            # Waiting for a place or a token is opened before the wait, so that --timeout never counts it
            # (an interval already open since a rate-limited attempt simply goes on).
            if ep.window.is_full():
                waits.begin(mark)
            await ep.window.acquire()
            try:
                if ep.bucket is not None:
                    if ep.bucket.would_wait():
                        waits.begin(mark)
                    await ep.bucket.take()
                sent_at = time.perf_counter()
                waits.end()
                first_at = sent_at if first_at is None else first_at
                ep.requests += 1
                try:
                    answer = await _bounded(attempt(), None if timeout_s is None else timeout_s - counted)
                except TimeoutError:
                    raise RequestTimedOut(retries) from None
                except Exception as exc:
                    if not is_retryable_error(exc):
                        raise
                    failed = exc
                else:
                    ep.window.succeeded()
                    return answer
            finally:
                ep.window.release()  # a request sleeping before a retry gives its place up
            status, headers, code = failure_of(failed)
            kind = hints.classify(status, headers, code)
            if kind == "rate_limited":
                ep.rate_limited += 1
                ep.window.rate_limited()
            else:
                counted += time.perf_counter() - sent_at
            if kind == "final":
                raise RequestFailed(failed, retries, _not_retried(status, headers, code))
            if kind == "retry" and retries >= _most_retries(ep, failed):
                raise RequestFailed(failed, retries)
            # A retried attempt, of any kind, is waiting: from its start to the start of the next one.
            waits.begin(sent_at)
            hint = hints.provider_hint(headers, time.time())
            wait = hints.retry_wait(kind, hint, retries, _draw.random())
            left = cfg.retry_budget_s - (time.perf_counter() - first_at)
            if wait > left:
                raise RequestFailed(failed, retries, _over_budget(hint, wait, left, cfg.retry_budget_s))
            if kind == "retry" and timeout_s is not None and counted + wait >= timeout_s:
                await asyncio.sleep(max(0.0, timeout_s - counted))
                raise RequestTimedOut(retries)
            retries += 1
            ep.retries += 1
            command.listeners.retrying(shown or ep.base_url, retries, _most_retries(ep, failed))
            await asyncio.sleep(wait)
            ep.retry_wait_s += wait
            if kind == "retry":
                counted += wait
            mark = time.perf_counter()
    finally:
        waits.end()


LOOPBACK_REFUSED_RETRIES = 2
"""A refused connection to a loopback base URL (a local server that is not running) is retried this often:
it will not start by itself within the backoff of eight retries (87 s of waiting, then the same error)."""


def _is_refused(exc: BaseException) -> bool:
    """True when the attempt's connection was refused (nothing listens on the port)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, ConnectionRefusedError) or "connection refused" in str(cause).lower():
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _most_retries(ep: Endpoint, failed: BaseException) -> int:
    """How many retries a failed request gets: MAX_RETRIES, or LOOPBACK_REFUSED_RETRIES for a refused
    connection to a loopback address."""
    from agent_eval.provider.keying import is_loopback

    if is_loopback(ep.base_url) and _is_refused(failed):
        return LOOPBACK_REFUSED_RETRIES
    return hints.MAX_RETRIES


async def _bounded(awaitable: Awaitable[T], left: float | None) -> T:
    if left is None:
        return await awaitable
    if left <= 0:
        raise TimeoutError
    return await asyncio.wait_for(awaitable, left)  # wait_for, not asyncio.timeout: the SDK's task is cut


def _not_retried(status: int | None, headers: Mapping[str, str], code: str | None) -> str:
    if headers.get("x-should-retry", "").strip().lower() == "false" and status == 429:
        return "; not retried: the provider sent x-should-retry: false"
    if code in hints.NEVER_RETRIED_CODES and status == 429:
        return f"; not retried: error code {code} (the quota is spent, waiting will not help)"
    return ""


def _over_budget(hint: hints.Hint | None, wait: float, left: float, budget: float) -> str:
    asked = (f"the provider asks to wait {hint.seconds:.3g} s ({hint.source})" if hint is not None
             else f"the next wait is {wait:.3g} s (the provider gave no hint)")
    return f"; {asked}, more than the {max(0.0, left):.3g} s left of --retry-budget {budget:g}s"


