"""Daemon worker threads for user code that blocks (sync agents, sync tools, sync simulators).

Never asyncio's default executor: its threads are joined at exit, so one stuck tool would keep the
process alive after the report is written. These threads are daemons that nobody joins; idle ones are
reused, and a stuck one simply stays behind.
"""
from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any

from agent_eval.tracebacks import Outcome, call_user, describe

IDLE_S = 30.0


class UserBaseException(Exception):
    """A BaseException (SystemExit, KeyboardInterrupt, ...) raised by user code in a worker thread.

    Wrapped so that it reaches the awaiting coroutine as an ordinary error: handed to the event loop
    as it is, SystemExit or KeyboardInterrupt would end the whole process.
    """

    def __init__(self, original: BaseException) -> None:
        super().__init__(describe(original))
        self.original = original


class _Pool:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle = 0  # threads waiting for a job that no submitter has claimed yet
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1
        self._jobs.put(job)
        if spawn:
            threading.Thread(target=self._work, name="agent-eval-worker", daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=IDLE_S)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # nobody is counting on this thread: let it go
                        self._idle -= 1
                        return
                continue  # a submitter claimed this thread; its job is on the way
            job()
            threading.current_thread().name = "agent-eval-worker"
            with self._lock:
                self._idle += 1


_POOL = _Pool()


def run_in_thread(fn: Callable[..., Any], *args: Any, name: str = "agent-eval-worker") -> asyncio.Future[Any]:
    """fn(*args) in a daemon worker thread named `name` while it runs, as a future of the running loop.

    A BaseException that is not an Exception arrives wrapped in UserBaseException.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, exc: BaseException | None) -> None:
        if future.done():
            return
        if exc is None:
            future.set_result(value)
        else:
            future.set_exception(exc)

    def job() -> None:
        threading.current_thread().name = name
        called = call_user(fn, *args)  # an Exception is handed to the event loop, which decides
        exc = called.error
        if exc is not None and not isinstance(exc, Exception):
            exc = UserBaseException(exc)  # as it is, user code's SystemExit would end the process
        try:
            loop.call_soon_threadsafe(settle, called.value, exc)
        except RuntimeError:
            pass  # the loop is gone: the run was abandoned long ago

    _POOL.submit(job)
    return future


def describe_user_error(exc: BaseException) -> str:
    """`Type: message` of an error from user code, with a wrapped BaseException shown as itself."""
    return str(exc) if isinstance(exc, UserBaseException) else describe(exc)


async def awaited(awaitable: Any) -> Any:
    """The value of `awaitable`, as a coroutine (what run_coroutine_threadsafe and asyncio.run take)."""
    return await awaitable


def run_apart(awaitable: Any) -> Any:
    """Await `awaitable` on a fresh event loop in a helper thread, and wait for it (from sync code)."""
    box: list[Outcome[Any]] = []

    def work() -> None:
        box.append(call_user(asyncio.run, awaited(awaitable)))  # what it raised goes back to the caller

    thread = threading.Thread(target=work, name="agent-eval-tool", daemon=True)
    thread.start()
    thread.join()
    called = box[0]
    if called.error is not None:
        raise called.error
    return called.value
