"""The rule of every table a plugin may extend (agent kinds, check families, expect keys, outputs, formats,
metrics, settings): each name has one owner, and a second module claiming it is exit 2 naming both
(docs/architecture.md, "Where to add ...")."""
from __future__ import annotations

import sys
from collections.abc import Iterable

from agent_eval.errors import ConfigError

_OWNERS: dict[tuple[str, str], str] = {}
_IMPORTED: set[str] = set()  # the plugin modules imported in this process, by suite/imports.py's key


def first_import(key: str) -> bool:
    """True the first time a plugin module (its resolved path, or its name) is about to be imported."""
    if key in _IMPORTED:
        return False
    _IMPORTED.add(key)
    return True


def module_name(globals_: dict[str, object]) -> str:
    """How a module is named in messages: its dotted name, or its file for a plugin imported by path."""
    name = str(globals_.get("__name__") or "?")
    return str(globals_.get("__file__") or name) if name.startswith("_agent_eval_user_") else name


def caller(depth: int = 2) -> str:
    """The module that called the `register` function that calls this (depth 2: the caller's caller)."""
    return module_name(sys._getframe(depth).f_globals)


def claim(table: str, name: str, owner: str, built_in: Iterable[str], table_module: str) -> None:
    """Give `name` of `table` to `owner`; ConfigError when another module holds it. The names of the
    built-in rows (`built_in`) are held by the module of the table."""
    key = (table, name)
    held = _OWNERS.get(key) or (table_module if name in set(built_in) else None)
    if held is not None and held != owner:
        raise ConfigError(f"the {table} {name!r} is registered twice: by {held} and by {owner}. "
                          "Rename one of them, or load only one of the two plugins.")
    _OWNERS[key] = owner


def owner_of(table: str, name: str) -> str | None:
    """The module that registered `name` of `table` (None: a built-in row, or a row added directly)."""
    return _OWNERS.get((table, name))
