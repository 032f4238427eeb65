"""`agent_eval.run_suite(...)` and `run_suite_async`: `agent-eval run` as a function that returns the report.

Both play the same core as the command (`commands.run.play_suite`) with a logging listener instead of a
terminal: warnings that `run` prints on stderr go to the `agent_eval` logger; the report is returned as
the value its file holds (never read back); a user mistake raises an AgentEvalError, as it is exit 2 there.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import io
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import orjson
from rich.console import Console

from agent_eval.errors import ConfigError
from agent_eval.flags import DEFAULTS, Flags, Setting, all_settings, setting
from agent_eval.records import Report
from agent_eval.run.interrupt import Interrupts

logger = logging.getLogger("agent_eval")
logger.addHandler(logging.NullHandler())  # a library prints nothing unless its user configures logging

T = TypeVar("T")
_NOT_SETTINGS = frozenset({"cases", "quiet", "verbose"})  # the first is an argument; the others draw a terminal


def run_settings() -> tuple[str, ...]:
    """The keyword arguments `run_suite` takes: `run`'s flags (a plugin's included), spelled as Python names."""
    return tuple(row.name for row in all_settings() if "run" in row.commands and row.flags
                 and row.name not in _NOT_SETTINGS)


def flags_for(cases: str | Path, settings: Mapping[str, Any], where: str = "run_suite") -> Flags:
    """The Flags of `run --cases CASES` with `settings` given as flags; an unknown name is a ConfigError."""
    names = run_settings()
    unknown = sorted(set(settings) - set(names))
    if unknown:
        raise ConfigError(f"{where}() got the unknown setting{'s' if len(unknown) > 1 else ''} "
                          f"{', '.join(unknown)}; it takes {', '.join(names)}.")
    if not isinstance(cases, (str, os.PathLike)):
        raise ConfigError(f"{where}() takes the case file as a str or a Path, not {type(cases).__name__}.")
    values = {name: (value,) if isinstance(value, str) and setting(name).repeatable else value
              for name, value in settings.items() if value is not None}
    for name, value in values.items():
        if problem := _type_problem(setting(name), value):
            raise ConfigError(f"{where}({name}=...) takes {problem}, not {value!r:.80}.")
    values = {name: os.fspath(value) if setting(name).type is str and isinstance(value, os.PathLike) else value
              for name, value in values.items()}  # baseline=Path(...): a path as its text
    return Flags(values, command="run", cases=Path(cases), **values, quiet=True)


_KINDS: dict[type, tuple[str, tuple[type, ...]]] = {
    bool: ("True or False", (bool,)), int: ("an integer", (int, str)), float: ("a number", (int, float, str)),
    str: ("text", (str, os.PathLike)), Path: ("a path (a str or a Path)", (str, os.PathLike)),
}


def _type_problem(row: Setting[Any], value: Any) -> str | None:
    """What a keyword's value should be, when it is not that: what the flag's own parser would refuse (a bool for
    a count, 2.5 runs, a number for a list of texts); text for a number is left to the resolution, as the
    environment's is."""
    kind, types = _KINDS.get(row.type, (row.type.__name__, (row.type,)))
    items = value if row.repeatable and isinstance(value, (list, tuple)) else None
    if row.repeatable and items is None:
        return f"a list of {kind}"
    for item in items if items is not None else (value,):
        integral = not isinstance(item, float) or row.type is not int or item.is_integer()
        if (isinstance(item, bool) and row.type is not bool) or not isinstance(item, types) or not integral:
            return f"a list of {kind}" if items is not None else kind
    return None


def run_suite(cases: str | Path = DEFAULTS.cases, **settings: Any) -> Report:
    """Run a suite as `agent-eval run --cases CASES` does and return its report (what the JSON file holds).

    Settings are `run`'s flags as keyword arguments (`repeat=3`, `no_judge=True`, `filter=["faq"]`,
    `output_dir="reports"`, ...), then the environment and the suite block, as for `run`. Never prints or
    exits: the verdict is `report["exit_code"]`, and what `run` prints on stderr goes to the `agent_eval`
    logger. A user mistake raises an AgentEvalError (CaseFileError, ConfigError). On Ctrl-C the partial
    report is written (exit_code 130) and KeyboardInterrupt is raised with it as `.report`; called where an
    event loop runs (a notebook, an async test), the run plays in a thread of its own, which Ctrl-C stops
    the same way.
    """
    flags = _flags(cases, settings)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _returned(play_report(flags, Interrupts()))
    call = _Call(flags)
    with _ctrl_c_stops(call.interrupts):  # whatever handler the loop's owner installed (asyncio.run's waits)
        return _returned(call.future.result())


async def run_suite_async(cases: str | Path = DEFAULTS.cases, **settings: Any) -> Report:
    """`run_suite` for a caller inside an event loop: awaiting it never blocks the loop, so calls overlap.
    Cancelled, it stops the run, writes the partial report (exit_code 130) and re-raises CancelledError with
    it as `.report`."""
    flags = _flags(cases, settings)
    call = _Call(flags)
    try:
        played = await asyncio.wrap_future(call.future)
    except asyncio.CancelledError as exc:
        call.interrupts.stop()
        exc.report = await asyncio.wrap_future(call.future)  # type: ignore[attr-defined]
        raise
    return _returned(played)


def off_running_loop(fn: Callable[[], T]) -> T:
    """`fn()`, in a thread of its own when this thread runs an event loop (a run plays on a loop of its own)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return fn()
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="agent-eval") as pool:
        return pool.submit(fn).result()


def _flags(cases: str | Path, settings: Mapping[str, Any]) -> Flags:
    from agent_eval.suite.imports import load_plugins

    load_plugins(os.environ)  # before the keywords are checked: a plugin's setting is one of them
    return flags_for(cases, settings)


class _Call:
    """One call played in a thread of its own (with its own event loop); `interrupts.stop()` stops it as a
    Ctrl-C stops `run`, and `future` then holds the partial report."""

    def __init__(self, flags: Flags) -> None:
        self.interrupts = Interrupts()
        self.future: concurrent.futures.Future[Report] = concurrent.futures.Future()
        self.future.set_running_or_notify_cancel()  # never cancelled: it always ends with a report or an error
        threading.Thread(target=self._play, args=(flags,), name="agent-eval", daemon=True).start()

    def _play(self, flags: Flags) -> None:
        try:
            self.future.set_result(play_report(flags, self.interrupts))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread, which raises it
            self.future.set_exception(exc)


@contextmanager
def _ctrl_c_stops(interrupts: Interrupts) -> Iterator[None]:
    """In the main thread, a Ctrl-C stops the call's run (its partial report is then returned, and raised)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupts.stop())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _returned(report: Report) -> Report:
    """The report, or KeyboardInterrupt with it as `.report` when a Ctrl-C (or SIGTERM) cut the run short."""
    if report.get("interrupted"):
        stopped = KeyboardInterrupt()
        stopped.report = report  # type: ignore[attr-defined]
        raise stopped
    return report


def play_report(flags: Flags, interrupts: Interrupts) -> Report:
    """Play `flags` as `run` does with no terminal (the plugins loaded): the report as its file holds it.
    What `run` prints on stderr goes to the `agent_eval` logger as it comes."""
    from agent_eval.commands.run import play_suite
    from agent_eval.report.files import report_bytes

    played = play_suite(flags, None, _LOGGED, interrupts)
    if played.report is None:
        raise ConfigError("the run wrote no report: its journal could not be written")
    return orjson.loads(b"".join(report_bytes(played.report, played.run_bytes())))


class _LogConsole(Console):
    """Where `run` prints a warning or a note: each line, as it comes, a warning of the `agent_eval` logger."""

    def print(self, *objects: Any, **options: Any) -> None:
        logger.warning("%s", " ".join(map(str, objects)))


_LOGGED = _LogConsole(file=io.StringIO())  # its file is never written: print above is all it does
