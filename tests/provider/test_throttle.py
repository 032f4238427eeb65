"""The window of requests in flight, the token bucket and the union of waiting intervals."""
from __future__ import annotations

import asyncio

import pytest

from agent_eval.provider.endpoints import WindowBoard, merge_summaries
from agent_eval.provider.throttle import RateLimit, TokenBucket, Window, parse_rate_limit
from agent_eval.provider.waits import Interval, Waits


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_429_halves_the_window_at_most_once_a_second_and_never_below_one() -> None:
    clock = FakeClock()
    window = Window(50, clock)
    window.rate_limited()
    assert window.size == 25  # 50 // 2
    clock.now += 0.5
    window.rate_limited()
    assert window.size == 25  # within the second: the same overload
    clock.now += 0.6
    window.rate_limited()
    assert window.size == 12  # 25 // 2
    for _ in range(5):
        clock.now += 1.0
        window.rate_limited()
    assert window.size == 1 and window.smallest == 1  # 12 -> 6 -> 3 -> 1 -> 1 -> 1


def test_a_window_of_successes_in_a_row_raises_it_by_one_up_to_the_ceiling() -> None:
    clock = FakeClock()
    window = Window(4, clock)
    window.rate_limited()
    assert window.size == 2
    window.succeeded()
    assert window.size == 2  # one success of a window of 2
    window.succeeded()
    assert window.size == 3  # two in a row
    for _ in range(3):
        window.succeeded()
    assert window.size == 4  # three more: the window of 3
    for _ in range(10):
        window.succeeded()
    assert window.size == 4 and window.smallest == 2  # never past the ceiling


def test_a_429_restarts_the_count_of_successes() -> None:
    clock = FakeClock()
    window = Window(8, clock)
    window.rate_limited()  # 4
    for _ in range(3):
        window.succeeded()
    clock.now += 2
    window.rate_limited()  # 2, and the three successes no longer count
    window.succeeded()
    assert window.size == 2
    window.succeeded()
    assert window.size == 3


def test_requests_wait_for_a_place_in_arrival_order() -> None:
    async def scenario() -> list[str]:
        window = Window(2)
        order: list[str] = []

        async def request(name: str, hold: float) -> None:
            await window.acquire()
            order.append(name)
            await asyncio.sleep(hold)
            window.release()

        await asyncio.gather(request("a", 0.05), request("b", 0.05), request("c", 0), request("d", 0))
        assert window.in_flight == 0
        return order

    assert asyncio.run(scenario()) == ["a", "b", "c", "d"]


def test_a_cancelled_waiter_leaves_no_place_taken() -> None:
    async def scenario() -> int:
        window = Window(1)
        await window.acquire()
        waiter = asyncio.ensure_future(window.acquire())
        await asyncio.sleep(0)
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        window.release()
        return window.in_flight

    assert asyncio.run(scenario()) == 0


def test_the_bucket_spends_its_burst_then_spaces_requests_at_its_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(RateLimit(600, 2), clock=clock)  # 600/min = 10 a second, burst 2
    assert [bucket.try_take() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.1])  # the third waits 1/10 s
    assert bucket.would_wait()
    clock.now += 0.1
    assert bucket.try_take() == 0.0  # its token has come
    clock.now += 10.0  # a long stall saves up no more than the burst
    assert [bucket.try_take() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.1])


def test_requests_take_their_tokens_in_arrival_order_at_the_rate() -> None:
    async def scenario() -> list[tuple[str, float]]:
        bucket = TokenBucket(RateLimit(1200))  # 20 a second, burst 1: one every 50 ms
        loop = asyncio.get_running_loop()
        start = loop.time()
        order: list[tuple[str, float]] = []

        async def request(name: str) -> None:
            await bucket.take()
            order.append((name, loop.time() - start))

        await asyncio.gather(*(request(n) for n in "abcd"))
        return order

    order = asyncio.run(scenario())
    assert [name for name, _ in order] == ["a", "b", "c", "d"]
    assert order[-1][1] >= 0.14  # three waits of 50 ms after the first token (timer slack aside)


def test_a_workers_share_splits_the_rate_and_the_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(RateLimit(3000, 10), share=0.5, clock=clock)  # 25 a second, capacity 5
    assert (bucket.rate, bucket.capacity) == (25.0, 5.0)
    bucket.set_share(1.0)  # the other worker is done
    assert (bucket.rate, bucket.capacity) == (50.0, 10.0)
    assert TokenBucket(RateLimit(60), share=1 / 3).capacity == 1.0  # a third of a burst of 1 is still 1
    assert str(RateLimit(3000, 10)) == "3000:10" and str(RateLimit(90)) == "90"


def test_waiting_is_the_length_of_the_union_of_the_intervals() -> None:
    waits = Waits()
    for start, end in ((1.0, 3.0), (2.0, 4.0), (6.0, 7.0)):
        interval = Interval(start)
        interval.end = end
        waits.intervals.append(interval)
    assert waits.within(0.0, 10.0) == 4.0  # [1, 4] and [6, 7]: 3 + 1
    assert waits.within(2.5, 6.5) == 2.0  # [2.5, 4] and [6, 6.5]: 1.5 + 0.5
    assert waits.within(4.0, 6.0) == 0.0


def test_provider_entries_of_workers_add_up_their_smallest_windows() -> None:
    one = [{"role": "agent", "base_url": "u", "model": "m", "requests": 10, "rate_limited": 2, "retries": 3,
            "retry_wait_s": 1.5, "min_concurrency": 3}]
    two = [{"role": "agent", "base_url": "u", "model": "m", "requests": 5, "rate_limited": 1, "retries": 1,
            "retry_wait_s": 0.25, "min_concurrency": 2},
           {"role": "judge", "base_url": "u", "model": "m", "requests": 1, "rate_limited": 0, "retries": 0,
            "retry_wait_s": 0.0, "min_concurrency": 4}]
    merged = merge_summaries([one, two])
    assert merged[0] == {"role": "agent", "base_url": "u", "model": "m", "requests": 15, "rate_limited": 3,
                         "retries": 4, "retry_wait_s": 1.75, "min_concurrency": 5}  # 3 + 2
    assert merged[1]["role"] == "judge"


@pytest.mark.parametrize(("text", "limit"), [
    ("3000", RateLimit(3000.0, 1)), ("3000:10", RateLimit(3000.0, 10)), ("0.5", RateLimit(0.5, 1)),
    (" 90:2 ", RateLimit(90.0, 2)),
])
def test_a_rate_limit_is_rpm_then_an_optional_burst(text: str, limit: RateLimit) -> None:
    assert parse_rate_limit(text) == limit


@pytest.mark.parametrize("text", ["", "0", "-1", "nan", "inf", "fast", "60:", "60:0", "60:1.5", "60:x", ":5",
                                  "60:5:5", "1e10"])
def test_a_rate_limit_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_rate_limit(text)


def test_the_board_shows_the_windows_below_their_ceiling_summed_over_workers() -> None:
    board = WindowBoard()
    board.window_changed(0, "http://h/v1", 25, 25)
    assert board.line() is None  # at the ceiling: nothing to say
    board.window_changed(1, "http://h/v1", 4, 25)
    assert board.line() == "rate limited: 29 of 50 in flight"  # 25 + 4 of 25 + 25
    board.window_changed(0, "http://h/v1 (judge)", 2, 8)
    assert board.line() == ("rate limited: 29 of 50 in flight (http://h/v1); "
                            "2 of 8 in flight (http://h/v1 (judge))")
    board.forget(0)
    board.forget(1)
    assert board.line() is None


def test_a_waiter_cancelled_after_the_wake_up_skipped_it_raises_only_its_cancellation() -> None:
    # The waiter's future is cancelled at once by task.cancel(); a release before the task resumes pops it
    # (it is done, so it is skipped): the task must see its CancelledError, never "not in deque".
    async def scenario() -> tuple[BaseException | None, int]:
        window = Window(1)
        await window.acquire()
        waiter = asyncio.ensure_future(window.acquire())
        await asyncio.sleep(0)
        waiter.cancel()
        window.release()  # wakes nobody: the only waiter is cancelled
        outcome = (await asyncio.gather(waiter, return_exceptions=True))[0]
        return outcome, window.in_flight

    outcome, in_flight = asyncio.run(scenario())
    assert isinstance(outcome, asyncio.CancelledError) and in_flight == 0


def test_a_bucket_waiter_cancelled_while_it_sleeps_leaves_the_bucket_usable() -> None:
    async def scenario() -> BaseException | None:
        bucket = TokenBucket(RateLimit(60.0))  # one token a second, one saved up
        await bucket.take()
        waiter = asyncio.ensure_future(bucket.take())
        await asyncio.sleep(0.01)
        waiter.cancel()
        outcome = (await asyncio.gather(waiter, return_exceptions=True))[0]
        await asyncio.wait_for(bucket.take(), 2.0)  # the lock was given back
        return outcome

    assert isinstance(asyncio.run(scenario()), asyncio.CancelledError)
