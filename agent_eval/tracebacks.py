"""The user's part of a traceback, and the one guard around a call of user code.

The traceback text (computed only when user code raised: the slow path) keeps the user's frames in the usual
"Traceback (most recent call last)" form; frames of agent-eval itself, asyncio, threading and
concurrent.futures are left out, because they say nothing about the user's bug.

The guard (`call_user`, `await_user`, `call_user_or`) is the one place that catches
whatever user code raises (an agent, a tool, a scorer, a simulator, a plugin or user module being imported,
a plugin row's callables, a user object's `__str__`), and `is_real_stop` is the one rule for what it lets
through: a real cancellation or Ctrl-C.
`except BaseException` appears only here and at process boundaries (tests/test_architecture.py).
"""
from __future__ import annotations

import functools
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

_FRAME_LINE = re.compile(r'^  File "(?P<file>.*)", line (?P<line>\d+), in (?P<name>.*)$', re.MULTILINE)


@functools.cache
def _hidden() -> tuple[tuple[str, ...], frozenset[str]]:
    """(the folders, the files) whose frames are not the user's; asyncio is imported only when user code raised."""
    import asyncio
    import concurrent.futures

    folders = tuple(os.path.dirname(os.path.abspath(path)) + os.sep
                    for path in (__file__, asyncio.__file__, concurrent.futures.__file__))
    return folders, frozenset({os.path.abspath(threading.__file__)})


def _is_hidden(filename: str) -> bool:
    folders, files = _hidden()
    path = os.path.abspath(filename)
    return path.startswith(folders) or path in files


def user_traceback(exc: BaseException) -> str | None:
    """The traceback of exc as text, user frames only; None when no frame of it is the user's."""
    try:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if not _is_hidden(f.filename)]
        if not frames:
            return None
        lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames),
                 *traceback.format_exception_only(type(exc), exc)]
        return "".join(lines).rstrip("\n")
    except Exception:  # noqa: BLE001 - an exception whose str() raises, a frame without source: never stop a run
        return None


_INSTALLED = ("site-packages", "dist-packages")  # the folders installed packages live in: not "your code"


def _is_installed(filename: str) -> bool:
    return any(part in _INSTALLED for part in Path(filename).parts)


def innermost_frame(text: str | None) -> str | None:
    """`demo_agent.py:57 in agent`: the innermost frame of a user traceback's text that is outside
    site-packages (your code, not the framework or SDK it called into; the innermost frame of all when
    every frame is installed code); None without a frame."""
    if not text or not isinstance(text, str):
        return None
    frames = _FRAME_LINE.findall(text)
    if not frames:
        return None
    own = [frame for frame in frames if not _is_installed(frame[0])]
    filename, line, name = (own or frames)[-1]
    return f"{Path(filename).name}:{line} in {name}"


def user_frames(text: str | None) -> list[str]:
    """Every frame of a user traceback's text as `demo_agent.py:57 in agent`, outermost first."""
    if not text or not isinstance(text, str):
        return []
    return [f"{Path(filename).name}:{line} in {name}" for filename, line, name in _FRAME_LINE.findall(text)]


def with_location(message: str, exc: BaseException) -> str:
    """`KeyError: 'x' (scorers.py:12 in score)`: a message with the innermost user frame beside it."""
    where = innermost_frame(user_traceback(exc))
    return f"{message} ({where})" if where else message


def describe(error: BaseException) -> str:
    """`Type: message`, the one line a user sees instead of a traceback (`Type` alone for an empty message)."""
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def is_cancelling() -> bool:
    """True while the running task is being cancelled (--timeout, Ctrl-C): a CancelledError is then a real
    cancellation, not one that user code raised on its own. False outside a running task (a thread)."""
    import asyncio

    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop runs in this thread
        return False
    return task is not None and task.cancelling() > 0


def is_real_stop(exc: BaseException) -> bool:
    """True when `exc` is agent-eval being stopped, not something the user's code raised: the one rule the
    guard lets through. That is a CancelledError while the running task is being cancelled (--timeout; a
    Ctrl-C or SIGTERM during a run, which run/interrupt.py turns into a cancellation), or a KeyboardInterrupt
    where Python delivers a real Ctrl-C (or SIGTERM, as `Terminated`): the main thread, outside an event
    loop, with Python's own SIGINT handler in place (loading the suite). Anywhere else (a run, a worker
    thread, a worker process that ignores SIGINT) a KeyboardInterrupt, like a SystemExit, is the user's."""
    if isinstance(exc, KeyboardInterrupt):
        return _ctrl_c_lands_here()
    asyncio = sys.modules.get("asyncio")  # not loaded: nothing is being cancelled
    return asyncio is not None and isinstance(exc, asyncio.CancelledError) and is_cancelling()


def _ctrl_c_lands_here() -> bool:
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False  # a run's handler (run/interrupt.py), or a worker process's SIG_IGN
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return True
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return True
    return False  # in a loop, Ctrl-C is a cancellation


T = TypeVar("T")


@dataclass(slots=True)
class Outcome(Generic[T]):
    """What one call of user code gave (like pytest's CallInfo): its value, or the exception it raised.
    Read, never changed (not frozen: a frozen dataclass costs three times as much to make, once per call)."""

    value: T | None = None
    error: BaseException | None = None

    @property
    def traceback(self) -> str | None:
        """The user's frames of the exception; None when it returned, or no frame is the user's."""
        return user_traceback(self.error) if self.error is not None else None


def call_user(fn: Callable[..., T], *args: Any) -> Outcome[T]:
    """Call user code (an agent, a tool, a scorer, a simulator, a plugin, an import): its value, or whatever
    it raised, SystemExit and KeyboardInterrupt included. A real stop (`is_real_stop`) goes through."""
    try:
        return Outcome(fn(*args))
    except BaseException as exc:
        if is_real_stop(exc):
            raise
        return Outcome(error=exc)


async def await_user(fn: Callable[..., Awaitable[T]], *args: Any) -> Outcome[T]:
    """`call_user` for user code that is awaited: an `async def`, or a sync one run in a thread."""
    try:
        return Outcome(await fn(*args))
    except BaseException as exc:
        if is_real_stop(exc):
            raise  # a real cancellation (--timeout, Ctrl-C), not one the user's code raised
        return Outcome(error=exc)


@dataclass(frozen=True, slots=True)
class OnError(Generic[T]):
    """A fallback made from what user code raised (a plugin row's failed check, its null with a note), or a
    message of its own (`make` may raise): made once, handed to `call_user_or` on every call."""

    make: Callable[[BaseException], T]


def call_user_or(fallback: T | OnError[T], fn: Callable[..., T], *args: Any) -> T:
    """`call_user` where only the value counts: it, or `fallback` when the call raised (a hostile `__str__`),
    or `fallback.make(exc)` for an `OnError`; nothing is made on the way, for the paths that run on every
    value and every run."""
    try:
        return fn(*args)
    except BaseException as exc:
        if is_real_stop(exc):
            raise
        return fallback.make(exc) if isinstance(fallback, OnError) else fallback

