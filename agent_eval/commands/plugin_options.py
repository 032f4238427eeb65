"""The flags of the settings plugins add (`agent_eval.flags.Setting` rows): the plugins are imported before
the command line is read, and each setting becomes an option of the commands it names, so it is in
`--help` and parsed like a built-in flag (its value reaches the command as one of `plugin_settings`)."""
from __future__ import annotations

import inspect
import os
from typing import Any

import typer
from rich.console import Console
from rich.text import Text

from agent_eval.errors import EXIT_ERROR, ConfigError
from agent_eval.flags import SETTINGS, Setting

_WRITTEN = "_agent_eval_signature"  # a command's signature as written, before any setting was added


def add_setting_options(app: typer.Typer, err: Console) -> None:
    """Import the plugins, then give each command the options of the plugin settings that name it; a plugin
    that cannot be imported, or a flag a command already has, is one message on `err` and exit 2."""
    try:
        _add_setting_options(app)
    except ConfigError as exc:
        err.print(Text.assemble(("error:", "red"), " "), end="", highlight=False)
        err.print(str(exc), highlight=False, markup=False, soft_wrap=True)
        raise SystemExit(EXIT_ERROR) from None


def _add_setting_options(app: typer.Typer) -> None:
    from agent_eval.suite.imports import load_plugins

    load_plugins(os.environ)
    for info in app.registered_commands:
        fn = info.callback
        if fn is None:
            continue
        written = getattr(fn, _WRITTEN, None) or inspect.signature(fn)
        setattr(fn, _WRITTEN, written)
        params = [p for p in written.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in written.parameters.values()):
            name = info.name or fn.__name__
            taken = {flag for p in params for flag in getattr(p.default, "param_decls", ()) or ()}
            params += [_parameter(s, name, taken) for s in SETTINGS if name in s.commands and s.flags]
        fn.__signature__ = written.replace(parameters=params)  # type: ignore[attr-defined]


def _parameter(setting: Setting, command: str, taken: set[str]) -> inspect.Parameter:
    clash = [flag for flag in setting.flags if flag in taken]
    if clash:
        raise ConfigError(f"the setting {setting.name!r} of a plugin wants the flag {clash[0]}, which `{command}` "
                          "already has; give the setting another flag.")
    default = typer.Option(False if setting.type is bool else None, *setting.flags, help=setting.help)
    annotation: Any = bool if setting.type is bool else setting.type | None
    return inspect.Parameter(setting.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)

