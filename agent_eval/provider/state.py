"""A command's state in this process: its endpoints (windows, buckets, counts), its listeners and its HTTP
clients, in one value the command makes and hands down.

Code that no caller hands anything to (the retry loop, the SDK client's lookup) finds it as the current
command (a context variable, set by the runner around its run): contexts are per thread and per task, so
two commands overlapping in one process never share a window, a listener or a client. Outside a command
(a library caller of `llm.complete`), `OUTSIDE` is current.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from agent_eval.provider.endpoints import EndpointTable, Settings
from agent_eval.provider.events import Listeners


@dataclass
class CommandState:
    """What one command owns: its endpoints, the listeners its provider events go to, and its SDK clients
    per (URL, key) with the event loop they belong to."""

    endpoints: EndpointTable
    listeners: Listeners
    clients: dict[tuple[str | None, str | None], tuple[Any, Any, Any]] = field(default_factory=dict)
    # A client replaced because its event loop ended is kept, not dropped: collecting one that was never
    # closed would schedule its close on the new loop, where the old loop's sockets cannot be closed.
    retired: list[Any] = field(default_factory=list)


def new_state(settings: Settings | None = None, listeners: Listeners | None = None) -> CommandState:
    """A command's fresh state: every endpoint new (one command, one set of figures)."""
    listeners = listeners if listeners is not None else Listeners()
    return CommandState(EndpointTable(settings, listeners), listeners)


OUTSIDE = new_state()  # what a library caller outside any command uses
_current: ContextVar[CommandState | None] = ContextVar("agent_eval_command", default=None)


def current() -> CommandState:
    """The state of the command this code runs for, else OUTSIDE."""
    return _current.get() or OUTSIDE


@contextmanager
def using(state: CommandState) -> Iterator[CommandState]:
    """`state` is current in this context (and in the tasks it starts) until the block ends."""
    token = _current.set(state)
    try:
        yield state
    finally:
        _current.reset(token)
