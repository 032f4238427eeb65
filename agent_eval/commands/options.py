"""Every command's options, built from the setting rows (`agent_eval/flags/rows.py`): a command function in
`cli.py` writes its positional arguments and ends with `**given`, which becomes one option per row that names
the command, in the table's order. The plugins are imported first, so a plugin's setting is an option too."""
from __future__ import annotations

import inspect
import os
from types import GenericAlias
from typing import Any

import typer
from rich.console import Console
from rich.text import Text

from agent_eval.errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_TERMINATED, ConfigError
from agent_eval.flags import BUILT_IN_NAMES, Setting, all_settings

_WRITTEN = "_agent_eval_signature"  # a command's signature as written, before the options were added


def add_setting_options(app: typer.Typer, err: Console) -> None:
    """Import the plugins, then give each command the options of the settings that name it; a plugin that
    cannot be imported, or a flag a command already has, is one message on `err` and exit 2; a Ctrl-C then is
    exit 130 (SIGTERM 143) with no traceback."""
    try:
        _add_setting_options(app)
    except ConfigError as exc:
        err.print(Text.assemble(("error:", "red"), " "), end="", highlight=False)
        err.print(str(exc), highlight=False, markup=False, soft_wrap=True)
        raise SystemExit(EXIT_ERROR) from None
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM while the plugins load: no traceback, as cli.guarded
        from agent_eval.run.interrupt import Terminated

        err.print("interrupted", highlight=False)
        raise SystemExit(EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED) from None


def _add_setting_options(app: typer.Typer) -> None:
    from agent_eval.suite.imports import load_plugins

    load_plugins(os.environ)
    build_options(app)


def build_options(app: typer.Typer) -> None:
    """Give each command of `app` the options of the rows that name it (again: a row added since counts)."""
    rows = all_settings()
    _check_commands(app, rows)
    for info in app.registered_commands:
        fn = info.callback
        if fn is None:
            continue
        written = getattr(fn, _WRITTEN, None) or inspect.signature(fn)
        setattr(fn, _WRITTEN, written)
        params = [p for p in written.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        if len(params) < len(written.parameters):
            name = info.name or fn.__name__
            taken = {flag for p in params for flag in getattr(p.default, "param_decls", ()) or ()}
            taken.update(p.name for p in params)
            params += [_parameter(row, name, taken) for row in rows if name in row.commands and row.flags]
        fn.__signature__ = written.replace(parameters=params)  # type: ignore[attr-defined]


def _owner(row: Setting[Any]) -> str:
    """The plugin module that registered the row, as every plugin message names it."""
    from agent_eval.plugins import owner_of

    return owner_of("setting", row.name) or "a plugin"


def _check_commands(app: typer.Typer, rows: tuple[Setting[Any], ...]) -> None:
    """A row naming a command agent-eval does not have is a ConfigError (a typo would hide its flag)."""
    known = {info.name or info.callback.__name__ for info in app.registered_commands if info.callback}
    for row in rows:
        unknown = sorted(set(row.commands) - known)
        if unknown:
            raise ConfigError(f"the setting {row.name!r} of {_owner(row)} names the command {unknown[0]!r}, which "
                              f"agent-eval does not have; its commands are {', '.join(sorted(known))}.")


def _parameter(row: Setting[Any], command: str, taken: set[str]) -> inspect.Parameter:
    if row.name in taken:
        raise ConfigError(f"the setting {row.name!r} of {_owner(row)} has the name of an argument of `{command}`; "
                          "rename the setting.")
    taken.add(row.name)
    clash = [flag for flag in row.flags if flag in taken]
    if clash:
        raise ConfigError(f"the setting {row.name!r} of {_owner(row)} wants the flag {clash[0]}, which `{command}` "
                          "already has; give the setting another flag.")
    taken.update(row.flags)
    default = row.command_default.get(command, row.unset())
    option = typer.Option(None if row.repeatable else default, *row.flags, **row.option,
                          help=_help(row, command))
    annotation: Any = bool if row.type is bool else GenericAlias(list, (row.type,)) | None if row.repeatable else (
        row.type if default is ... else row.type | None)
    return inspect.Parameter(row.name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)


def _help(row: Setting[Any], command: str) -> str:
    """The row's help for `command`; a plugin row's default (which typer shows only for an eager option) is
    added as the built-in rows write theirs: "(default plain)". typer draws help as Rich markup: the built-in
    rows escape their brackets themselves, a plugin's text is shown as written."""
    text = row.command_help.get(command, row.help)
    if row.name in BUILT_IN_NAMES:  # a built-in row writes its own default in its help
        return text
    from rich.markup import escape

    if not (row.eager or row.default in (None, False, ()) or "default" in text):
        text = f"{text} (default {row.default})".strip()
    return escape(text)
