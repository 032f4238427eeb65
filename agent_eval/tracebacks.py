"""The user's part of a traceback: what an agent, tool or scorer raised, without agent-eval's own frames.

Computed only when user code raised (the slow path). The text keeps the user's frames in the usual
"Traceback (most recent call last)" form; frames of agent-eval itself, asyncio, threading and
concurrent.futures are left out, because they say nothing about the user's bug.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import os
import re
import threading
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

_HIDDEN_DIRS = tuple(
    os.path.dirname(os.path.abspath(path)) + os.sep
    for path in (__file__, asyncio.__file__, concurrent.futures.__file__)
)
_HIDDEN_FILES = {os.path.abspath(threading.__file__)}
_FRAME_LINE = re.compile(r'^  File "(?P<file>.*)", line (?P<line>\d+), in (?P<name>.*)$', re.MULTILINE)


def _is_hidden(filename: str) -> bool:
    path = os.path.abspath(filename)
    return path.startswith(_HIDDEN_DIRS) or path in _HIDDEN_FILES


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


def innermost_frame(text: str | None) -> str | None:
    """`demo_agent.py:57 in agent`: the last frame of a user traceback's text; None without one."""
    if not text or not isinstance(text, str):
        return None
    frames = _FRAME_LINE.findall(text)
    if not frames:
        return None
    filename, line, name = frames[-1]
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
    cancellation, not one that user code raised on its own."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


T = TypeVar("T")


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What one call of user code gave (like pytest's CallInfo): its value, or the exception it raised."""

    value: T | None = None
    error: BaseException | None = None

    @property
    def traceback(self) -> str | None:
        """The user's frames of the exception; None when it returned, or no frame is the user's."""
        return user_traceback(self.error) if self.error is not None else None


def call_user(fn: Callable[..., T], *args: Any) -> Outcome[T]:
    """Call user code (an agent, a tool, a scorer, a simulator, a plugin): its value, or whatever it raised,
    SystemExit and KeyboardInterrupt included. A real cancellation (`is_cancelling`) goes through."""
    try:
        return Outcome(fn(*args))
    except BaseException as exc:
        if isinstance(exc, asyncio.CancelledError) and is_cancelling():
            raise
        return Outcome(error=exc)


async def await_user(fn: Callable[..., Awaitable[T]], *args: Any) -> Outcome[T]:
    """`call_user` for user code that is awaited: an `async def`, or a sync one run in a thread."""
    try:
        return Outcome(await fn(*args))
    except BaseException as exc:
        if isinstance(exc, asyncio.CancelledError) and is_cancelling():
            raise  # a real cancellation (--timeout, Ctrl-C), not one the user's code raised
        return Outcome(error=exc)
