"""Automatic garbage collection held off while the command starts.

Starting a command allocates modules, classes and the SDK's schemas, which live as long as the process:
a collection then finds next to nothing, and the full ones rescan every module imported so far (about a
tenth of `import openai` alone; bench/README.md, start-up). The command line holds collection off from
its start (`hold`) until the command's own work begins (`release`): `run` releases it when it freezes
its heap before the first run (run/player.py), every other command when its arguments are parsed.
"""
from __future__ import annotations

import gc
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class _Hold:
    """One command's hold on automatic collection: released once, by whichever of its tasks gets there first."""

    released: bool = False


# The hold of the command this code runs for: set by `hold` in the command line's own context, seen by the
# tasks and copies of that context (the run's event loop), never by a library caller's thread.
_HOLD: ContextVar[_Hold | None] = ContextVar("agent_eval_gc_hold", default=None)


def hold() -> None:
    """Automatic collection off until `release` (a no-op when it is off already)."""
    if gc.isenabled():
        gc.disable()
        _HOLD.set(_Hold())


def release() -> None:
    """Automatic collection back on, if this command's `hold` turned it off. What the start-up made is frozen
    first (moved where no collection scans it): collecting it would cost as much as all the collections held
    off (60 to 80 ms for a run's 170,000 objects) to free a few hundred objects of start-up cycles, left as
    they are."""
    held = _HOLD.get()
    if held is not None and not held.released:
        held.released = True
        gc.freeze()
        gc.enable()
