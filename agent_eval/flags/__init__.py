"""The values one command was given, as one frozen value whose names are the rows of `flags/rows.py`.

The CLI builds a `Flags` (a setting not given: None, False or ()) and records which flags were typed on
the command line; `--resume` and `score` derive theirs with `Flags.replace`. `run/config.py` resolves them
against the environment and the suite block, falling back to each row's default.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agent_eval.flags.rows import (
    BUILT_IN_NAMES, DEFAULTS, Setting, all_settings, register_setting, setting, without_plugin_keys,
)

__all__ = ["BUILT_IN_NAMES", "DEFAULTS", "Flags", "Setting", "all_settings", "register_setting", "setting",
           "without_plugin_keys"]


class Flags:
    """The flags of one command by setting name, and the names typed on the command line. A name no row
    holds is a TypeError (a bug); the typed readers check the row's type."""

    __slots__ = ("_values", "explicit", "command")
    _values: dict[str, Any]
    explicit: frozenset[str]
    command: str | None  # the command these are the flags of: its own defaults apply (`command_default`)

    def __init__(self, explicit: Iterable[str] = (), *, command: str | None = None, **values: Any) -> None:
        rows = {row.name: row for row in all_settings()}
        unknown = sorted(values.keys() - rows.keys())
        if unknown:
            raise TypeError(f"Flags got the unknown setting{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
        object.__setattr__(self, "_values", {name: _as_row_type(rows[name], value) for name, value in values.items()
                                             if value is not None})
        object.__setattr__(self, "explicit", frozenset(explicit))
        object.__setattr__(self, "command", command)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Flags is frozen: use replace()")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Flags) and (self._values, self.explicit, self.command) == \
            (other._values, other.explicit, other.command)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt, (tuple(self.explicit), self._values, self.command)

    def __repr__(self) -> str:
        return f"Flags({', '.join(f'{k}={v!r}' for k, v in self._values.items())}, explicit={set(self.explicit)})"

    def value(self, name: str) -> Any:
        """The value of `name`: as given, or when not given the row's default for this command (`command_default`),
        else its value when not given (`Setting.unset`)."""
        if name in self._values:
            return self._values[name]
        row = setting(name)
        return row.command_default.get(self.command, row.unset()) if self.command else row.unset()

    def given(self, name: str) -> bool:
        """Whether the flag `name` was typed on the command line."""
        return name in self.explicit

    def replace(self, **values: Any) -> Flags:
        """These flags with `values` set (None: not given); which flags were typed stays as it is."""
        return Flags(self.explicit, command=self.command, **{**self._values, **values})

    def text(self, name: str) -> str | None:
        return self._read(name, str)

    def count(self, name: str) -> int | None:
        return self._read(name, int)

    def number(self, name: str) -> float | None:
        return self._read(name, float)

    def path(self, name: str) -> Path | None:
        return self._read(name, Path)

    def is_on(self, name: str) -> bool:
        return bool(self._read(name, bool))

    def texts(self, name: str) -> tuple[str, ...]:
        return tuple(self._read(name, str, repeatable=True))

    def _read(self, name: str, kind: type, repeatable: bool = False) -> Any:
        row = setting(name)
        if row.type is not kind or row.repeatable != repeatable:
            raise TypeError(f"the setting {name!r} is a {row.type.__name__}{' (repeatable)' * row.repeatable}, "
                            f"not a {kind.__name__}")
        return self.value(name)


def _rebuilt(explicit: tuple[str, ...], values: dict[str, Any], command: str | None) -> Flags:
    return Flags(explicit, command=command, **values)


def _as_row_type(row: Setting[Any], value: Any) -> Any:
    """A list of a repeatable flag as a tuple, and a path given as text as a Path."""
    if row.repeatable and isinstance(value, (list, tuple)):
        return tuple(Path(v) if row.type is Path and isinstance(v, str) else v for v in value)
    if row.type is Path and isinstance(value, str):
        return Path(value)
    return value
