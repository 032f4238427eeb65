"""Ctrl-C (or SIGTERM) during a run: the first stops the run cleanly, a second exits at once."""
from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # asyncio is imported by the run, not by every start of the command (main imports this module)
    import asyncio

from agent_eval.errors import EXIT_INTERRUPTED, EXIT_TERMINATED

_STOPS = (signal.SIGINT, signal.SIGTERM)
# Tasks still alive after the run (an agent that ignores cancellation) get this long, then are left.
LEFTOVER_GRACE_S = 1.0


def exit_code_of(signum: int) -> int:
    """The exit code of a run that `signum` stopped: 143 for SIGTERM, else 130."""
    return EXIT_TERMINATED if signum == signal.SIGTERM else EXIT_INTERRUPTED


class Terminated(KeyboardInterrupt):
    """SIGTERM outside a run (loading, validating): handled as a Ctrl-C there, with exit 143."""


def terminate_as_interrupt() -> None:
    """From now on SIGTERM raises Terminated (a KeyboardInterrupt) in the main thread."""
    if threading.current_thread() is threading.main_thread():
        def raise_terminated(signum: int, frame: FrameType | None) -> None:
            raise Terminated()

        signal.signal(signal.SIGTERM, raise_terminated)


class Interrupts:
    """Owns SIGINT and SIGTERM while a run and its report are under way (use as a context manager).

    The first of them cancels the coroutine given to `run`, so the runner stops starting runs,
    cancels those in flight and flushes the journal; the caller then writes the partial report, and
    exits with `exit_code` (130, or 143 for SIGTERM). A second exits at once, without waiting.
    """

    def __init__(self) -> None:
        self.count = 0
        self.signum: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._previous: dict[int, Any] = {}
        self.after_run: list[Callable[[], None]] = []  # told of a first signal that comes once the run is over

    @property
    def exit_code(self) -> int:
        return exit_code_of(self.signum) if self.signum is not None else EXIT_INTERRUPTED

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            for signum in _STOPS:
                self._previous[signum] = signal.signal(signum, self._on_sigint)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous = {}

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        self.signum = self.signum or signum
        if self.count > 1:
            os.write(2, b"\ninterrupted again: exiting now\n")
            kill_servers()
            os._exit(exit_code_of(signum))
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not task.done():
            # A signal handler runs between bytecodes of the loop's thread: wake the loop safely.
            loop.call_soon_threadsafe(task.cancel)
        else:  # the report is being written: what still waits (the OTLP sender) stops waiting
            for stop in self.after_run:
                stop()

    def stop(self) -> None:
        """Stop the run as a first Ctrl-C does, from any thread (the library's caller was interrupted);
        a second stop does nothing."""
        if not self.count:
            self._on_sigint(signal.SIGINT, None)

    def run(self, coro: Coroutine[Any, Any, None]) -> bool:
        """Run `coro` on a fresh event loop; True when a Ctrl-C cut it short."""
        if self.count:
            coro.close()
            return True
        import asyncio

        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            self._loop = loop
            self._task = loop.create_task(coro)
            try:
                loop.run_until_complete(self._task)
            except asyncio.CancelledError:
                if not self.count:
                    raise
            finally:
                self._task = None
            _wind_down(loop)
            return self.count > 0
        finally:
            self._loop = None
            asyncio.set_event_loop(None)
            loop.close()


@contextmanager
def sigint_held() -> Iterator[None]:
    """Hold a Ctrl-C until the block ends, then deliver it as usual; a second one exits with 130 at once.

    For a step that must not be cut in half: a local Ray instance interrupted while it starts or stops
    leaves processes behind that nobody can stop any more.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(signum)
        if len(held) > 1:
            os.write(2, b"\ninterrupted again: exiting now\n")
            kill_servers()
            os._exit(exit_code_of(signum))

    previous = {signum: signal.signal(signum, hold) for signum in _STOPS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if held:
            signal.raise_signal(held[0])  # to the handler the block found: KeyboardInterrupt, or a run's


def kill_servers() -> None:
    """Kill every MCP server process, and every other descendant, still alive: an exit that skips the
    run's own cleanup must not leak one."""
    import sys

    client = sys.modules.get("agent_eval.suite.mcp_client")
    if client is not None:
        client.kill_live_servers()
    from agent_eval.suite.reaper import end_descendants

    end_descendants()


def _wind_down(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what the run left behind and give it a moment; unlike asyncio.run, never wait forever."""
    import asyncio

    leftovers = asyncio.all_tasks(loop)
    for task in leftovers:
        task.cancel()
    if leftovers:
        loop.run_until_complete(asyncio.wait(leftovers, timeout=LEFTOVER_GRACE_S))
    loop.run_until_complete(loop.shutdown_asyncgens())
