"""`agent_eval.run_suite(...)`: `agent-eval run` as a function that returns the report and never prints.

The command line is this plus the terminal and the exit code. Warnings that `run` prints on stderr go to
the `agent_eval` logger here; a user mistake raises CaseFileError or ConfigError, as it is exit 2 there.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import io
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import orjson
from rich.console import Console

from agent_eval.errors import ConfigError
from agent_eval.flags import DEFAULTS, Flags, Setting, all_settings, setting
from agent_eval.records import Report

logger = logging.getLogger("agent_eval")
logger.addHandler(logging.NullHandler())  # a library prints nothing unless its user configures logging

_NOT_SETTINGS = frozenset({"cases", "quiet", "verbose"})  # the first is an argument; the others draw a terminal


def run_settings() -> tuple[str, ...]:
    """The keyword arguments `run_suite` takes: `run`'s flags (a plugin's included), spelled as Python names."""
    return tuple(row.name for row in all_settings() if "run" in row.commands and row.flags
                 and row.name not in _NOT_SETTINGS)


T = TypeVar("T")


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


def _type_problem(row: Setting, value: Any) -> str | None:
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
    exits: the verdict is `report["exit_code"]`; a user mistake raises CaseFileError or ConfigError.
    """
    from agent_eval.suite.imports import load_plugins

    load_plugins(os.environ)  # before the keywords are checked: a plugin's setting is one of them
    flags = flags_for(cases, settings)
    return off_running_loop(lambda: play_quietly(flags))


def play_quietly(flags: Flags) -> Report:
    """Play `flags` as `run` does with no terminal (the plugins loaded), and read back the report it wrote."""
    from agent_eval.commands.run import play_suite

    said = io.StringIO()
    played = play_suite(flags, None, Console(file=said, width=10_000, color_system=None))
    lines = [line for line in said.getvalue().splitlines() if line.strip()]
    if played.report is None or not played.path.is_file():
        raise ConfigError(" ".join(lines) or "the run wrote no report")
    report: Report = orjson.loads(played.path.read_bytes())
    log_lines(lines)
    return report


def log_lines(lines: Iterable[str]) -> None:
    """What `run` would print on stderr, as warnings of the `agent_eval` logger."""
    for line in lines:
        logger.warning("%s", line)


def off_running_loop(fn: Callable[[], T]) -> T:
    """`fn()`, in a thread of its own when this thread runs an event loop (a notebook, an async test):
    a run plays on an event loop of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return fn()
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="agent-eval") as pool:
        return pool.submit(fn).result()
