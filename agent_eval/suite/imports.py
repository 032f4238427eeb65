"""Import the user's code: a module by `.py` path or dotted name, or a function named by a SPEC
(`path/to/file.py:name` or `package.module:name`). Every failure is one ConfigError paragraph."""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import itertools
import os
import re
import sys
from pathlib import Path
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.plugins import first_import, forget_import, loading
from agent_eval.tracebacks import call_user, describe

SPEC_FIX = ("Fix the path in the SPEC: it is relative to the case file in the suite block, and to the "
            "current directory in a flag.")
_counter = itertools.count()


def import_module_ref(ref: str, base_dir: Path, what: str, fix: str) -> ModuleType:
    """Import `ref`, a .py path (relative to base_dir) or a dotted module name importable from sys.path
    or from base_dir. `what` names the module in messages ("tools module", "agent"); `fix` says how to
    correct a path or name that leads nowhere."""
    if ref.endswith(".py") or "/" in ref or "\\" in ref:
        path = Path(ref) if Path(ref).is_absolute() else Path(base_dir) / ref
        return _import_file(path, what, fix)
    return _import_dotted(ref, Path(base_dir), what, fix)


def load_callable(spec: str, base_dir: Path, what: str) -> Any:
    """Import SPEC's module (a .py path is relative to base_dir) and return the attribute it names."""
    module_ref, sep, attr = spec.rpartition(":")
    if not sep or not module_ref or not attr:
        raise ConfigError(f"{what} {spec!r} is not a SPEC; write path/to/file.py:function or "
                          f"package.module:function")
    module = import_module_ref(module_ref, base_dir, what, SPEC_FIX)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"{what} {spec!r}: module {module_ref!r} has no attribute {attr!r}; "
                          f"check the name after the colon.") from None


def _import_file(path: Path, what: str, fix: str) -> ModuleType:
    if not path.is_file():
        raise ConfigError(f"{path}: {what} not found. {fix}")
    name = f"_agent_eval_user_{next(_counter)}_{re.sub('[^0-9a-zA-Z_]', '_', path.stem)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"{path}: cannot be imported as a Python module. Fix: give it a .py suffix.")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    # The module may import its siblings, and dataclasses look their module up in sys.modules.
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    sys.modules[name] = module
    loaded = False
    try:
        called = call_user(spec.loader.exec_module, module)  # a real Ctrl-C while loading goes through
        loaded = called.error is None
    finally:
        if not loaded:
            sys.modules.pop(name, None)
        if added and folder in sys.path:
            sys.path.remove(folder)
    if called.error is not None:
        raise _import_error(path, what, called.error) from None
    return module


def _import_dotted(ref: str, base_dir: Path, what: str, fix: str) -> ModuleType:
    folder = str(base_dir.resolve())
    for extra in (None, folder):
        added = extra is not None and extra not in sys.path
        if added:
            sys.path.insert(0, folder)
            importlib.invalidate_caches()  # the folder's listing may predate files written since
        try:
            called = call_user(importlib.import_module, ref)  # a real Ctrl-C while loading goes through
        finally:
            if added and folder in sys.path:
                sys.path.remove(folder)
        error = called.error
        if called.value is not None:
            return called.value
        if error is not None and not (isinstance(error, ModuleNotFoundError) and _is_missing(ref, error)):
            raise _import_error(ref, what, error) from None
    raise ConfigError(f"{ref}: {what} not found on sys.path or in {folder}. {fix}")


def _import_error(where: object, what: str, error: BaseException) -> ConfigError:
    """The one paragraph for a module that raised while imported (user code may raise anything, sys.exit()
    included); a plugin's row refused (a name already held) keeps its own message."""
    if isinstance(error, ConfigError):
        return error
    if isinstance(error, SystemExit):
        return ConfigError(f"{where}: the {what} called sys.exit({error.code!r}) while being imported. Fix the "
                           "module so that importing it only defines things (guard a script's code with "
                           "`if __name__ == \"__main__\":`).")
    return ConfigError(f"{where}: the {what} failed to import: {describe(error)}. "
                       "Fix the module (or install what it imports) so that it imports cleanly.")


def _is_missing(ref: str, error: ModuleNotFoundError) -> bool:
    """True when the module itself (or a parent package) is missing, not something it imports."""
    return error.name is not None and (ref == error.name or ref.startswith(error.name + "."))


PLUGINS_VAR = "AGENT_EVAL_PLUGINS"
_PLUGIN_MODULES: dict[str, ModuleType] = {}  # the plugin modules imported in this process, by `_plugin_key`
ENTRY_POINT_GROUP = "agent_eval.plugins"


def load_plugins(environ: Mapping[str, str]) -> None:
    """Load every plugin once per process: those of the entry-point group `agent_eval.plugins` (installed
    packages), then those AGENT_EVAL_PLUGINS names (comma-separated `.py` paths, relative to the current
    directory, or dotted names). A plugin is a module or an object (`module:name`, `file.py:name`); the host
    imports it, then calls its `register(host)` (a module's function, an object's method, or the object
    itself when it is a function). A plugin named several ways (`p.py`, `./p.py`, its absolute path) is
    loaded once. A module that registers its rows when imported (no `register`) is a plugin too."""
    for point in _entry_points():
        _load(point.value, f"plugin (entry point {point.name!r} of {ENTRY_POINT_GROUP})",
              "Fix or uninstall the package that declares it.")
    for ref in (part.strip() for part in environ.get(PLUGINS_VAR, "").split(",")):
        if ref:
            _load(ref, f"plugin (in {PLUGINS_VAR})", f"Fix {PLUGINS_VAR}: it lists .py paths (relative to the "
                  "current directory) or module names, each maybe with `:object`, separated by commas.")


def _load(ref: str, what: str, fix: str) -> None:
    """Import the plugin `ref` and call its `register(host)`, with the host knowing it is loading that
    plugin: every row registered meanwhile is the plugin's (agent_eval/plugins)."""
    module_ref, sep, attr = ref.rpartition(":")
    if not (sep and module_ref and all(part.isidentifier() for part in attr.split("."))):  # a module (or a drive)
        module_ref, attr = ref, ""
    key = _plugin_key(module_ref)
    if not first_import(f"{key}:{attr}"):
        return
    loaded = False
    try:
        _load_new(ref, module_ref, attr, key, what, fix)
        loaded = True
    finally:
        if not loaded:  # it raised: the next command of this process (run_suite) tries again
            forget_import(f"{key}:{attr}")


def _load_new(ref: str, module_ref: str, attr: str, key: str, what: str, fix: str) -> None:
    """`_load` of a plugin this process has not loaded: import its module (`key`), then call its `register`."""
    is_path = module_ref.endswith(".py") or "/" in module_ref or "\\" in module_ref
    name = str(Path.cwd() / module_ref) if is_path else module_ref  # a module as messages name it
    owner = f"{name}:{attr}" if attr else name
    with loading(owner) as host:
        # one module however many of its objects are plugins (a file is imported anew each time it is named)
        module = _PLUGIN_MODULES[key] = _PLUGIN_MODULES.get(key) or import_module_ref(module_ref, Path.cwd(), what, fix)
        target: Any = module
        for part in attr.split(".") if attr else ():  # an entry point's object may be an attribute's (`obj.attr`)
            target = getattr(target, part, None)
        if target is None:
            raise ConfigError(f"{ref}: the {what}'s module has no attribute {attr!r}. {fix}")
        register = getattr(target, "register", None) or (target if attr else None)
        if register is None:
            return  # a module that registered its rows when imported
        if not callable(register):
            raise ConfigError(f"{ref}: the {what} has no register(host) function to call. {fix}")
        if inspect.iscoroutinefunction(register):  # it would never be awaited: nothing registered, silently
            raise ConfigError(f"{ref}: the {what}'s register(host) is a coroutine function (async def); the host "
                              "calls it once, before the command starts: make it a plain def.")
        called = call_user(register, host)
    if called.error is not None:
        error = called.error
        raise (error if isinstance(error, ConfigError) else ConfigError(
            f"{ref}: the {what} raised {describe(error)} in register(host). Fix the plugin.")) from None


def _entry_points() -> Iterable[Any]:
    """The group's entry points. importlib.metadata, whose import alone costs about 10 ms of every command,
    is imported only when an `entry_points.txt` of a folder on sys.path names the group (a few small files
    read, not parsed), or when a sys.path entry is not a folder (a zip or an egg), which only it can read."""
    if not _may_declare_plugins():
        return ()
    from importlib.metadata import entry_points

    return entry_points(group=ENTRY_POINT_GROUP)


def _may_declare_plugins() -> bool:
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except NotADirectoryError:
            return True
        except OSError:
            continue
        if entry.endswith(".egg"):
            return True
        for name in names:
            if name.endswith((".dist-info", ".egg-info")) and ENTRY_POINT_GROUP in _read(entry, name):
                return True
    return False


def _read(folder: str, info: str) -> str:
    try:
        with open(os.path.join(folder or ".", info, "entry_points.txt"), encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _plugin_key(ref: str) -> str:
    """One key per module however it is named: a path's resolved location, or the dotted name."""
    if ref.endswith(".py") or "/" in ref or "\\" in ref:
        return str(Path(ref).resolve())
    try:
        spec = importlib.util.find_spec(ref)
    except (ImportError, ValueError):
        return ref
    return str(Path(spec.origin).resolve()) if spec is not None and spec.origin else ref

