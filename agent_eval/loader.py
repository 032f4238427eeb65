"""Import a function named by a SPEC: `path/to/file.py:name` or `package.module:name`."""
from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError


def load_callable(spec: str, base_dir: Path, what: str) -> Any:
    """Import SPEC's module (a .py path is relative to base_dir) and return its attribute."""
    module_ref, sep, attr = spec.rpartition(":")
    if not sep or not module_ref or not attr:
        raise ConfigError(f"{what} {spec!r} is not a SPEC; write path/to/file.py:function or "
                          f"package.module:function")
    try:
        module = _import(module_ref, base_dir)
    except ConfigError:
        raise
    except Exception as exc:  # the user's module failed to import: one line, no traceback
        raise ConfigError(f"{what} {spec!r} cannot be imported: {type(exc).__name__}: {exc}. "
                          f"Fix the module so that it imports.") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"{what} {spec!r}: module {module_ref!r} has no attribute {attr!r}; "
                          f"check the name after the colon.") from None


def _import(module_ref: str, base_dir: Path) -> Any:
    if module_ref.endswith(".py") or "/" in module_ref:
        path = (base_dir / module_ref).resolve()
        if not path.is_file():
            raise ConfigError(f"{path} does not exist; fix the path in the SPEC (relative to the case file "
                              f"in the suite block, to the current directory in a flag).")
        name = f"_agent_eval_user_{abs(hash(str(path)))}"
        if name in sys.modules:
            return sys.modules[name]
        sys.path.insert(0, str(path.parent))
        try:
            module_spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            module_spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        finally:
            sys.path.remove(str(path.parent))
        return module
    if str(base_dir) not in sys.path:
        sys.path.append(str(base_dir))
    try:
        return importlib.import_module(module_ref)
    except ModuleNotFoundError as exc:
        if exc.name and module_ref.startswith(exc.name):
            raise ConfigError(f"no module named {module_ref!r}; check the SPEC, or give a .py path") from None
        raise
