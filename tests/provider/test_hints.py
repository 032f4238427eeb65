"""The pure rules of retrying: the provider's hint, the kind of answer, and the wait (hand-computed)."""
from __future__ import annotations

import pytest

from agent_eval.provider import hints
from agent_eval.provider.hints import Hint, backoff, classify, hinted_wait, parse_go_duration, parse_retry_after
from agent_eval.provider.hints import provider_hint, retry_wait

NOW = 1_700_000_000.0  # Tue, 14 Nov 2023 22:13:20 GMT


@pytest.mark.parametrize(("text", "seconds"), [
    ("1s", 1.0), ("20ms", 0.02), ("6m0s", 360.0), ("1h2m3.5s", 3723.5), ("0.5s", 0.5), ("1.5m", 90.0),
    ("250us", 0.00025), ("2", 2.0), ("0", 0.0), (" 3s ", 3.0),
])
def test_go_durations_are_read_in_seconds(text: str, seconds: float) -> None:
    # 1h2m3.5s = 3600 + 120 + 3.5 = 3723.5; 1.5m = 90; 250us = 250e-6
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "1x", "1s2", "m1", "-1s", "1 s"])
def test_a_go_duration_that_is_not_one_is_none(text: str) -> None:
    assert parse_go_duration(text) is None


def test_retry_after_is_seconds_or_an_http_date() -> None:
    assert parse_retry_after("2", NOW) == 2.0
    assert parse_retry_after("1.5", NOW) == 1.5
    assert parse_retry_after("Tue, 14 Nov 2023 22:13:27 GMT", NOW) == pytest.approx(7.0)  # 22:13:27 - 22:13:20
    assert parse_retry_after("Tue, 14 Nov 2023 22:13:00 GMT", NOW) == 0.0  # in the past: no wait
    assert parse_retry_after("soon", NOW) is None
    assert parse_retry_after("-3", NOW) is None


def test_the_hint_prefers_retry_after_ms_then_retry_after_then_a_spent_reset() -> None:
    every = {"retry-after-ms": "1500", "retry-after": "2", "x-ratelimit-remaining-requests": "0",
             "x-ratelimit-reset-requests": "6m0s"}
    assert provider_hint(every, NOW) == Hint(1.5, "retry-after-ms: 1500")
    del every["retry-after-ms"]
    assert provider_hint(every, NOW) == Hint(2.0, "Retry-After: 2")
    del every["retry-after"]
    assert provider_hint(every, NOW) == Hint(360.0, "x-ratelimit-reset-requests: 6m0s")


def test_a_reset_counts_only_when_its_remaining_count_is_zero() -> None:
    left = {"x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "20ms",
            "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "1s"}
    assert provider_hint(left, NOW) == Hint(1.0, "x-ratelimit-reset-tokens: 1s")
    left["x-ratelimit-remaining-tokens"] = "10"
    assert provider_hint(left, NOW) is None
    both = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20ms",
            "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "1s"}
    assert provider_hint(both, NOW) == Hint(1.0, "x-ratelimit-reset-tokens: 1s")  # the longer of the two


def test_an_unreadable_header_falls_through_to_the_next() -> None:
    assert provider_hint({"retry-after-ms": "soon", "retry-after": "3"}, NOW) == Hint(3.0, "Retry-After: 3")
    assert provider_hint({}, NOW) is None


@pytest.mark.parametrize(("status", "headers", "code", "kind"), [
    (429, {}, "rate_limit_exceeded", "rate_limited"),
    (429, {}, "insufficient_quota", "final"),
    (429, {"x-should-retry": "false"}, None, "final"),
    (503, {"retry-after": "1"}, None, "rate_limited"),
    (503, {"retry-after-ms": "1"}, None, "retry"),  # only Retry-After makes a 503 a rate-limit answer
    (503, {}, None, "retry"),
    (500, {}, None, "retry"),
    (500, {"x-should-retry": "false"}, None, "final"),
    (408, {}, None, "retry"),
    (409, {}, None, "retry"),
    (None, {}, None, "retry"),  # no answer: a connection error or a timeout
    (400, {}, None, "final"),
    (401, {}, None, "final"),
    (404, {}, None, "final"),
])
def test_each_answer_has_its_kind(status, headers, code, kind) -> None:
    assert classify(status, headers, code) == kind


def test_the_wait_for_a_hint_adds_up_to_a_second_of_jitter() -> None:
    assert hinted_wait(2.0, 0.0) == 2.0
    assert hinted_wait(2.0, 0.5) == 2.5  # 2 + 0.5 * min(2, 1)
    assert hinted_wait(0.2, 0.5) == pytest.approx(0.3)  # 0.2 + 0.5 * min(0.2, 1)
    assert hinted_wait(0.0, 0.9) == 0.0


def test_backoff_doubles_from_half_a_second_up_to_its_cap_with_full_jitter() -> None:
    assert backoff(0, 8.0, 0.7) == 0.5  # the ceiling 0.5 * 2**0 is the floor: no room for jitter
    assert backoff(1, 8.0, 0.0) == 0.5
    assert backoff(1, 8.0, 0.5) == 0.75  # 0.5 + 0.5 * (1.0 - 0.5)
    assert backoff(3, 8.0, 1.0) == 4.0  # ceiling 0.5 * 2**3 = 4
    assert backoff(7, 8.0, 1.0) == 8.0  # 0.5 * 2**7 = 64, held at 8
    assert backoff(7, 30.0, 0.5) == 15.25  # 0.5 + 0.5 * (30 - 0.5)
    assert backoff(10_000, 30.0, 1.0) == 30.0


def test_the_retry_wait_of_each_kind() -> None:
    two = Hint(2.0, "Retry-After: 2")
    assert retry_wait("rate_limited", two, 5, 0.25) == 2.25  # 2 + 0.25 * 1
    assert retry_wait("rate_limited", None, 2, 0.5) == 1.25  # ceiling 2: 0.5 + 0.5 * 1.5
    assert retry_wait("retry", two, 5, 0.9) == 2.0  # a capped retry takes Retry-After as given
    assert retry_wait("retry", Hint(61.0, "Retry-After: 61"), 1, 0.5) == 0.75  # past 60 s: backoff instead
    assert hints.MAX_RETRIES == 8
