"""A plugin row's callables, called through the one guard (agent_eval/tracebacks.py).

Each `register` function wraps the callables of the row a plugin adds (agent-eval's own rows are called
as they are: their bug should crash loudly), so every caller of a table gets the guard:
- `once`: code called once per command (an agent kind's loader, a format's reader, a family's
  validation): its value, or a ConfigError (exit 2, one line, no traceback) naming the plugin, the row and
  the exception; a ConfigError or CaseFileError of the plugin's own goes through as it is.
- `per_run`: code called per run (a check, an `expect` key, a metric's run value): its value, or what
  `on_error` makes of the message naming the plugin, the row and the exception (a failed check, a null
  with a note). The success path makes nothing.
A real Ctrl-C or cancellation goes through both (`is_real_stop`).
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from agent_eval.errors import CaseFileError, ConfigError
from agent_eval.provider.events import Listeners, RunListener
from agent_eval.tracebacks import OnError, call_user, call_user_or, describe, with_location

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

T = TypeVar("T")
PROGRAM = "the program"  # the owner of a row registered outside any plugin's load


def named(owner: str) -> str:
    """How a message names the owner of a row: "the plugin X", or the program, saying how a row came to be its."""
    if owner == PROGRAM:
        return (f"{PROGRAM} (registered outside any plugin's register(host): from a thread of its own, or after the "
                "plugins were loaded)")
    return f"the plugin {owner}"


def raised(table: str, name: str, owner: str, exc: BaseException) -> str:
    """`the check family 'tone' of the plugin tone_plugin raised ValueError: no tone (tone_plugin.py:5 in
    check)`: what a user reads when a plugin row's code raised."""
    return f"the {table} {name!r} of {named(owner)} raised {with_location(describe(exc), exc)}"


def once(table: str, name: str, owner: str, fn: Callable[..., T]) -> Callable[..., T]:
    """`fn`, called through the guard: whatever it raises but a user error of its own is a ConfigError
    naming the plugin, the row and the exception."""
    def refuse(exc: BaseException) -> NoReturn:
        if isinstance(exc, (ConfigError, CaseFileError)):
            raise exc  # the plugin's own message for the user, as a built-in row's would be
        raise ConfigError(f"{raised(table, name, owner, exc)}; fix the plugin, or load it no more.") from None

    on_error: OnError[T] = OnError(refuse)

    def call(*args: Any) -> T:
        return call_user_or(on_error, fn, *args)
    return call


def per_run(table: str, name: str, owner: str, fn: Callable[..., T],
            on_error: Callable[[str], T]) -> Callable[..., T]:
    """`fn`, called through the guard: `on_error(message)` stands for its value when it raised."""
    noted = OnError(lambda exc: on_error(raised(table, name, owner, exc)))

    def call(*args: Any) -> T:
        return call_user_or(noted, fn, *args)
    return call


@dataclass(frozen=True, slots=True)
class Raised:
    """What a plugin's per-run value is when its code raised: the message; never stored as a value."""

    message: str


def optional(table: str, name: str, owner: str, fn: Callable[..., T] | None) -> Callable[..., T] | None:
    """`once(...)` of `fn`, or None for a callable the row leaves out."""
    return None if fn is None else once(table, name, owner, fn)


class GuardedListener(Listeners):
    """A plugin's listener, told each event through the guard, in order, in a thread of its own: a slow one never
    stalls the runs still playing (their time limits and latencies). The first event it raises on is one
    `warn(message)` naming the plugin, the event and the exception (said by the thread that tells the next event,
    or that the command finished), and it is told no more (the run goes on). `command_finished` waits until it
    has heard everything."""

    def __init__(self, owner: str, listener: RunListener, warn: Callable[[str], None]) -> None:
        super().__init__(listener)
        self.owner, self.warn = owner, warn
        self._thread: ThreadPoolExecutor | None = None
        self._raised: list[str] = []  # the warnings of the listener's thread, said by the telling one

    def _tell(self, event: str, *args: Any) -> None:
        for listener in self:
            hears = getattr(listener, event, None)  # a listener that is no RunListener may lack an event
            if hears is not None:
                if self._thread is None:
                    from concurrent.futures import ThreadPoolExecutor

                    self._thread = ThreadPoolExecutor(1, thread_name_prefix="agent-eval-listener")
                # a copy of the run's record: what the plugin does to it never reaches the report
                self._thread.submit(self._hear, listener, event, hears, copy.deepcopy(args))
        if event == "command_finished" and self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None
        while self._raised:
            self.warn(self._raised.pop(0))

    def _hear(self, listener: RunListener, event: str, hears: Callable[..., Any], args: tuple[Any, ...]) -> None:
        if listener not in self._listeners:
            return  # it raised on an earlier event
        called = call_user(hears, *args)
        if called.error is not None:
            self.remove(listener)
            self._raised.append(
                f"warning: the listener {type(listener).__name__} of the plugin {self.owner} raised "
                f"{with_location(describe(called.error), called.error)} in {event}; it is told no more, "
                "and the run goes on.")
