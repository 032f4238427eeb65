"""A long run is never silent: without a progress display (a CI log), a plain progress line at least every
`every_s` seconds (60 by default) while runs are in flight.

    progress: 12/40 runs done, 2 failed, 1 error; slowest in flight: refund-3 (trial 1) for 73s

The heartbeat is a run listener (it counts runs as they start and end) with its own timer thread, so a
run that holds the event loop, or a worker that says nothing for minutes, still gets a line. `line(now)`
is the text at `now`, a pure reading of the counts, so a test can drive it with its own clock.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

from agent_eval.provider import events
from agent_eval.records import RunRecord
from agent_eval.report.fmt import format_seconds

EVERY_S = 60.0


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


class Heartbeat(events.RunListener):
    """Counts runs (done, failed, errors, in flight with their start) and says `line()` every `every_s`."""

    def __init__(self, say: Callable[[str], None], total: int, done: int = 0, every_s: float = EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.say, self.total, self.done, self.every_s, self.clock = say, total, done, every_s, clock
        self.failed = self.errors = 0
        self.in_flight: dict[tuple[str, int], float] = {}  # (case id, trial) -> when it started
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_started(self, case_id: str, trial: int) -> None:
        with self._lock:
            self.in_flight[(case_id, trial)] = self.clock()

    def run_finished(self, case_id: str, run: RunRecord) -> None:
        with self._lock:
            self.in_flight.pop((case_id, run["trial"]), None)
            self.done += 1
            self.failed += run["status"] == "failed"
            self.errors += run["status"] == "error"

    def line(self, now: float) -> str | None:
        """The progress line at `now`; None when no run is in flight."""
        with self._lock:
            if not self.in_flight:
                return None
            (case_id, trial), started = min(self.in_flight.items(), key=lambda item: item[1])
            return (f"progress: {self.done}/{self.total} runs done, {self.failed} failed, "
                    f"{_plural(self.errors, 'error')}, {len(self.in_flight)} in flight; slowest in flight: "
                    f"{case_id} (trial {trial}) for {format_seconds(max(0.0, now - started))}")

    def start(self) -> None:
        """Say the line every `every_s` seconds, on a daemon thread, until `command_finished`."""
        self._thread = threading.Thread(target=self._beat, name="agent-eval-heartbeat", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.every_s):
            text = self.line(self.clock())
            if text:
                self.say(text)

    def command_finished(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=1.0)
