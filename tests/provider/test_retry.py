"""agent-eval's retry loop against the loopback server: rate limits without a cap, the budget, the counts."""
from __future__ import annotations

import asyncio

import pytest

from agent_eval import llm
from agent_eval.errors import ProviderError
from agent_eval.provider import state
from agent_eval.provider.endpoints import Settings
from agent_eval.provider.waits import Waits, recording
from tests.builders import configure_endpoints as configure
from tests.loopback import status, text

BODY = {"model": "m-test", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}


pytestmark = pytest.mark.usefixtures("command_state")


def ask(srv, waits: Waits | None = None) -> tuple[llm.Completion | ProviderError, list[dict]]:
    async def go():
        with recording(waits or Waits()):
            try:
                answer = await llm.complete(srv.base_url, "test-key", BODY)
            except ProviderError as exc:
                answer = exc
        return answer, state.current().endpoints.summary()

    return asyncio.run(go())


def test_rate_limit_answers_are_retried_past_eight_attempts(loopback) -> None:
    srv = loopback([status(429, headers={"retry-after-ms": "1"})] * 12 + [text("at last")])
    answer, summary = ask(srv)
    assert answer.content == "at last"
    (entry,) = summary
    # 13 attempts: 12 answered 429, each retried once; the last answered.
    assert (entry["requests"], entry["rate_limited"], entry["retries"]) == (13, 12, 12)
    assert entry["role"] == "agent" and entry["model"] == "m-test"
    assert entry["min_concurrency"] == 4  # 8 // 2; the later 429s came within the same second: one overload
    assert entry["retry_wait_s"] >= 12 * 0.001  # each wait is at least the 1 ms asked for


def test_a_wait_longer_than_the_budget_left_ends_the_request_at_once(loopback) -> None:
    configure(Settings(retry_budget_s=1.0))
    srv = loopback(lambda request, index: status(429, headers={"retry-after": "2"}))
    error, summary = ask(srv)
    assert isinstance(error, ProviderError) and srv.count == 1
    assert str(error).startswith("RateLimitError: Error code: 429")
    # Retry-After: 2 asks for 2 s (plus jitter): more than the 1 s budget has left, so no retry is made.
    asked = "; the provider asks to wait 2 s (Retry-After: 2), more than the "
    assert f"({srv.base_url}, model m-test){asked}" in str(error)
    assert str(error).endswith(" s left of --retry-budget 1s")
    assert summary[0]["rate_limited"] == 1 and summary[0]["retries"] == 0


def test_a_503_with_retry_after_is_a_rate_limit_answer(loopback) -> None:
    srv = loopback([status(503, headers={"retry-after": "0"})] * 10 + [text("ok")])
    answer, summary = ask(srv)
    assert answer.content == "ok" and summary[0]["rate_limited"] == 10  # no cap of 8 for it


def test_the_waiting_is_recorded_on_the_run(loopback) -> None:
    srv = loopback([status(429, headers={"retry-after-ms": "200"}), text("ok")])
    waits = Waits()
    answer, _ = ask(srv, waits)
    assert answer.content == "ok"
    assert 0.2 <= waits.within(-1e18) < 5  # the 429'd attempt and the 200 ms (+ up to 200 ms) asked for


def test_a_window_of_one_serves_requests_one_at_a_time(loopback) -> None:
    configure(Settings(ceiling=1))
    srv = loopback(lambda request, index: text(f"answer {index}"), latency_s=0.05)

    async def go() -> list[str]:
        answers = await asyncio.gather(*(llm.complete(srv.base_url, "k", BODY) for _ in range(4)))
        return [a.content for a in answers]

    assert sorted(asyncio.run(go())) == [f"answer {n}" for n in range(4)]
    assert state.current().endpoints.summary()[0]["requests"] == 4
