"""No process outlives the command: agent-eval is its descendants' subreaper, and ends them all at exit.

On Linux, `prctl(PR_SET_CHILD_SUBREAPER)` makes every orphaned descendant (a server's helper that
called `setsid`, whose parent has exited) a child of this process instead of init's, so that it can
still be found and ended. At exit every descendant still alive is killed; the zombies that only this
process can reap (orphans that were re-parented here) are reaped, never a child that other code of the
process waits for (an MCP transport, a worker pool, the subprocess module).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
_PASSES = 5  # a descendant may start another while we kill: look again, a few times
_OWNED: set[int] = set()  # children whose exit status some other code of this process waits for
_lock = threading.Lock()


def become_subreaper() -> bool:
    """Make this process the subreaper of its descendants (Linux only); True when it is."""
    libc = _libc()
    return libc is not None and libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def is_subreaper() -> bool:
    """Whether this process is its descendants' subreaper: the kernel's own flag, not a copy of it."""
    libc = _libc()
    if libc is None:
        return False
    import ctypes

    flag = ctypes.c_int(0)
    return libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and flag.value != 0


def _libc() -> Any:
    """The C library, for prctl (None off Linux, or where it cannot be loaded)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl  # noqa: B018  # AttributeError here, not at the call, where it has none
        return libc
    except (OSError, AttributeError):
        return None


def own(pid: int) -> None:
    """`pid` is a child that agent-eval's own code waits for: `end_descendants` never reaps it."""
    with _lock:
        _OWNED.add(pid)


def disown(pid: int) -> None:
    with _lock:
        _OWNED.discard(pid)


def descendants(root: int | None = None) -> list[int]:
    """Every live descendant of `root` (this process), from /proc, parents before their children."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        parent = _parent_of(int(entry.name))
        if parent is not None:
            children.setdefault(parent, []).append(int(entry.name))
    found, queue = [], list(children.get(root, ()))
    while queue:
        pid = queue.pop(0)
        found.append(pid)
        queue.extend(children.get(pid, ()))
    return found


def end_descendants() -> None:
    """SIGKILL every descendant still alive, then reap the zombies no other code of this process waits for."""
    if not os.path.isdir("/proc"):
        return
    for _ in range(_PASSES):
        alive = [pid for pid in descendants() if _state_of(pid) not in (None, "Z")]
        if not alive:
            break
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    if is_subreaper():
        _reap_orphans()


def _reap_orphans() -> None:
    multiprocessing = sys.modules.get("multiprocessing")
    subprocess = sys.modules.get("subprocess")
    waited = set(_OWNED)
    if multiprocessing is not None:
        waited.update(p.pid for p in multiprocessing.process._children if p.pid)
    if subprocess is not None:
        waited.update(p.pid for p in getattr(subprocess, "_active", None) or ())
    me = os.getpid()
    for pid in descendants():
        if _parent_of(pid) == me and pid not in waited and _state_of(pid) == "Z":
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().decode("ascii", "replace").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _parent_of(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[1]) if fields and len(fields) > 1 else None


def _state_of(pid: int) -> str | None:
    fields = _stat(pid)
    return fields[0] if fields else None
