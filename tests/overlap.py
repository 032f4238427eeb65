"""A rendezvous for tools of overlapping `run_suite` calls: with `GATE` a Barrier(2), each call's tool waits
for the other's, so two calls that did not run at the same time would break it (BrokenBarrierError)."""
from __future__ import annotations

import threading

GATE: threading.Barrier | None = None
# For a call whose agent waits for another call to end: it sets STARTED, then waits for ENDED.
STARTED = threading.Event()
ENDED = threading.Event()


def meet() -> None:
    if GATE is not None:
        GATE.wait(timeout=20)
