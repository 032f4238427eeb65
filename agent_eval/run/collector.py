"""Automatic garbage collection held off while the command starts.

Starting a command allocates modules, classes and the SDK's schemas, which live as long as the process:
a collection then finds next to nothing, and the full ones rescan every module imported so far (about a
tenth of `import openai` alone; bench/README.md, start-up). The command line holds collection off from
its start (`hold`) until the command's own work begins (`release`): `run` releases it when it freezes
its heap before the first run (run/player.py), every other command when its arguments are parsed.
"""
from __future__ import annotations

import gc

_held = False


def hold() -> None:
    """Automatic collection off until `release` (a no-op when it is off already)."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def release() -> None:
    """Automatic collection back on, if `hold` turned it off. What the start-up made is frozen first (moved
    where no collection scans it): collecting it would cost as much as all the collections held off (60
    to 80 ms for a run's 170,000 objects) to free a few hundred objects of start-up cycles, left as they are."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()
