"""A plugin is an object the host calls, and the rule of every table it may extend (agent kinds, check
families, expect keys, outputs, formats, metrics, settings): each name has one owner, and a second plugin
claiming it is exit 2 naming both (docs/architecture.md, "Where to add ...").

The owner of a row is the plugin the host is loading when the row is registered: the loader
(suite/imports.py) sets it around the plugin's import and around its `register(host)` call (a context
variable, never the call stack). A row registered outside any plugin's load is the program's own.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from agent_eval.errors import ConfigError
from agent_eval.plugins.calls import PROGRAM, GuardedListener
from agent_eval.provider.events import RunListener

_OWNERS: dict[tuple[str, str], str] = {}
_IMPORTED: set[str] = set()  # the plugin modules imported in this process, by suite/imports.py's key
_LOADING: ContextVar[str | None] = ContextVar("agent_eval_plugin_loading", default=None)
_LISTENERS: list[tuple[str, RunListener]] = []  # (owner, listener) of the plugins' listeners


class Host:
    """What a plugin's `register(host)` is handed: its name in messages, and where it adds its listeners.
    Its rows it adds with the tables' `register_*` functions, called inside `register(host)`: the host
    knows they are the plugin's because it is calling the plugin."""

    def __init__(self, name: str) -> None:
        self.name = name

    def add_listener(self, listener: RunListener) -> None:
        """Tell `listener` every command's run events (provider/events.py's `RunListener`: each method it has);
        one with none of them is a ConfigError (it would never be told anything)."""
        events = [name for name in vars(RunListener) if not name.startswith("_")]
        if not any(callable(getattr(listener, event, None)) for event in events):
            raise ConfigError(f"the plugin {self.name} added a listener (a {type(listener).__name__}) with none of "
                              f"the run events' methods ({', '.join(events)}); add an object whose class subclasses "
                              "agent_eval.provider.events.RunListener and defines the events it hears.")
        if late := [event for event in events if inspect.iscoroutinefunction(getattr(listener, event, None))]:
            raise ConfigError(f"the plugin {self.name} added a listener (a {type(listener).__name__}) whose {late[0]} "
                              "is a coroutine function (async def); the events are told as they happen: make it a "
                              "plain def.")
        _LISTENERS.append((self.name, listener))


def listeners(warn: Callable[[str], None]) -> list[RunListener]:
    """The plugins' listeners for one command, each through the guard: one that raises is a `warn`ing."""
    return [GuardedListener(owner, listener, warn) for owner, listener in _LISTENERS]


@contextmanager
def loading(owner: str) -> Iterator[Host]:
    """The host of `owner` while it is imported or called: every row registered meanwhile is its."""
    token = _LOADING.set(owner)
    try:
        yield Host(owner)
    finally:
        _LOADING.reset(token)


def current() -> str:
    """The plugin being loaded (its module, or `module:object`), or PROGRAM outside any load."""
    return _LOADING.get() or PROGRAM


def first_import(key: str) -> bool:
    """True the first time a plugin module (its resolved path, or its name) is about to be imported."""
    if key in _IMPORTED:
        return False
    _IMPORTED.add(key)
    return True


def forget_import(key: str) -> None:
    """`key` was not loaded after all (it raised): `first_import` is true for it again."""
    _IMPORTED.discard(key)


def claim(table: str, name: str, built_in: Iterable[str], table_module: str) -> str:
    """Give `name` of `table` to the plugin being loaded (`current()`), and return it; ConfigError when
    another one holds it. The names of the built-in rows (`built_in`) are held by the module of the table."""
    key, owner = (table, name), current()
    held = _OWNERS.get(key) or (table_module if name in set(built_in) else None)
    if held is not None and held != owner:
        raise ConfigError(f"the {table} {name!r} is registered twice: by {held} and by {owner}. "
                          "Rename one of them, or load only one of the two plugins.")
    _OWNERS[key] = owner
    return owner


def owner_of(table: str, name: str) -> str | None:
    """The plugin that registered `name` of `table` (None: a built-in row)."""
    return _OWNERS.get((table, name))
