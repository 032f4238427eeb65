"""One listener for a command's run events, and the one place that holds the listeners and tells them.

A listener subclasses `RunListener` and overrides only the events it needs (the others do nothing).
A command builds one `Listeners`, passes it to the objects that raise events (the Runner, the journal, the
worker pool) and puts it in its provider.state, so that the provider's retry loop and windows, which no
caller hands anything to, reach the same listeners.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agent_eval.records import RunRecord


class RunListener(Protocol):
    """What a command's run tells its listeners; each event's default does nothing (explicitly: a listener
    subclasses this and overrides only the events it needs)."""

    def run_finished(self, case_id: str, run: RunRecord) -> None:
        """A run of the case `case_id` was journaled (wherever it was played): `run` is its record as the
        report's `cases[i].runs[j]` holds it (`trial`, `status`, `checks`, `metrics`, ...), its trace cut to
        what the terminal shows (the full trace is in the journal: `journaled`)."""
        return None

    def run_started(self, case_id: str, trial: int) -> None:
        """A run was taken: it starts here, or is handed to a worker."""
        return None

    def retrying(self, endpoint: str, attempt: int, most: int) -> None:
        """A request to `endpoint` is about to be retried (here or in a worker); a 429 may pass `most`."""
        return None

    def window_changed(self, where: int | None, endpoint: str, size: int, ceiling: int) -> None:
        """An endpoint's window changed size: in this process (`where` None) or in worker `where`."""
        return None

    def journaled(self, case_id: str, trial: int, run_json: bytes) -> None:
        """A run's line was written to the journal (`run_json`: the run as written)."""
        return None

    def command_finished(self) -> None:
        """The command's run is over (its report not yet written)."""
        return None


class Listeners(RunListener):
    """The listeners a command registered, each told of every event in the order they were added."""

    def __init__(self, *listeners: RunListener) -> None:
        self._listeners = list(listeners)

    def add(self, listener: RunListener) -> None:
        self._listeners.append(listener)

    def __iter__(self) -> Iterator[RunListener]:
        return iter(list(self._listeners))

    def remove(self, listener: RunListener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _tell(self, event: str, *args: Any) -> None:
        for listener in self._listeners:
            getattr(listener, event)(*args)

    def run_finished(self, case_id: str, run: RunRecord) -> None:
        self._tell("run_finished", case_id, run)

    def run_started(self, case_id: str, trial: int) -> None:
        self._tell("run_started", case_id, trial)

    def retrying(self, endpoint: str, attempt: int, most: int) -> None:
        self._tell("retrying", endpoint, attempt, most)

    def window_changed(self, where: int | None, endpoint: str, size: int, ceiling: int) -> None:
        self._tell("window_changed", where, endpoint, size, ceiling)

    def journaled(self, case_id: str, trial: int, run_json: bytes) -> None:
        self._tell("journaled", case_id, trial, run_json)

    def command_finished(self) -> None:
        self._tell("command_finished")


class RetryCallback(RunListener):
    """`callback(endpoint, attempt, most)` before each retry: for `llm.complete` called outside a command."""

    def __init__(self, callback: Callable[[str, int, int], None]) -> None:
        self.callback = callback

    def retrying(self, endpoint: str, attempt: int, most: int) -> None:
        self.callback(endpoint, attempt, most)
