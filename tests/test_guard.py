"""The one guard around user code (agent_eval/tracebacks.py): what it hands back, and what it lets through.

A real stop goes through: a cancellation of the running task, or a Ctrl-C where Python raises it (the main
thread, outside an event loop, Python's own SIGINT handler in place). Everything else user code raises,
SystemExit and KeyboardInterrupt included, comes back as the call's error.
"""
from __future__ import annotations

import asyncio
import signal
import threading

import pytest

from agent_eval.tracebacks import OnError, await_user, call_user, call_user_or, is_cancelling, is_real_stop


def _raise(exc: BaseException) -> None:
    raise exc


class Hostile:
    def __str__(self) -> str:
        raise SystemExit("no str for you")


def test_a_value_or_what_was_raised_with_the_users_frames() -> None:
    assert call_user(int, "7").value == 7 and call_user(int, "7").error is None
    called = call_user(_raise, SystemExit(3))
    assert isinstance(called.error, SystemExit) and called.value is None
    assert called.traceback is not None and "in _raise" in called.traceback
    assert "tracebacks.py" not in called.traceback  # the guard's own frame is not the user's


def test_call_user_or_gives_the_fallback_when_user_code_raises() -> None:
    assert call_user_or(None, str, 5) == "5"
    assert call_user_or(None, str, Hostile()) is None


def test_an_on_error_fallback_is_made_from_what_was_raised_and_a_real_stop_goes_through() -> None:
    kind = OnError(type)
    assert call_user_or(kind, int, "7") == 7
    assert call_user_or(kind, _raise, SystemExit(3)) is SystemExit
    assert call_user_or(kind, _raise, ValueError("x")) is ValueError
    with pytest.raises(KeyboardInterrupt):  # the main thread, no loop, Python's own handler: a real Ctrl-C
        call_user_or(kind, _raise, KeyboardInterrupt())


def test_a_ctrl_c_while_loading_goes_through_but_not_in_a_thread() -> None:
    # The main thread, no loop, Python's own handler: where a real Ctrl-C (or SIGTERM's Terminated) lands.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):
        call_user(_raise, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        call_user_or(None, _raise, KeyboardInterrupt())
    seen: list[object] = []
    thread = threading.Thread(target=lambda: seen.append(call_user(_raise, KeyboardInterrupt("mine")).error))
    thread.start()
    thread.join()
    assert isinstance(seen[0], KeyboardInterrupt)  # no Ctrl-C is ever raised in a worker thread


def test_a_ctrl_c_under_another_sigint_handler_is_the_users() -> None:
    # During a run agent-eval's handler turns Ctrl-C into a cancellation; a worker process ignores SIGINT.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert isinstance(call_user(_raise, KeyboardInterrupt()).error, KeyboardInterrupt)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_in_a_loop_a_cancellation_goes_through_only_when_it_was_asked_for() -> None:
    async def user_cancels() -> None:
        raise asyncio.CancelledError("not asked for")

    async def interrupts() -> None:
        raise KeyboardInterrupt("from an async tool")

    async def main() -> list[object]:
        out: list[object] = [(await await_user(user_cancels)).error, (await await_user(interrupts)).error]
        sleeping = asyncio.ensure_future(await_user(asyncio.sleep, 60))
        await asyncio.sleep(0)
        sleeping.cancel()
        try:
            await sleeping
        except asyncio.CancelledError:
            out.append("cancelled")
        return out

    mine, interrupt, real = asyncio.run(main())
    assert isinstance(mine, asyncio.CancelledError) and isinstance(interrupt, KeyboardInterrupt)
    assert real == "cancelled"


def test_is_cancelling_and_the_rule_outside_a_loop() -> None:
    assert is_cancelling() is False  # no running loop: no task, no RuntimeError
    assert is_real_stop(asyncio.CancelledError()) is False
    assert is_real_stop(SystemExit(0)) is False  # SystemExit is always the user code's
