"""What an imported BFCL suite's tools module runs: BFCL's own API classes, one instance per involved class
per run (`backend`), their public state as JSON (`snapshot`), and one tool per API method whose result is
the text upstream's loop shows the model.

The case's environment is `{"involved_classes": [...], "initial_config": {...}, "long_context": bool}`,
which upstream's executor reads from the entry."""
from __future__ import annotations

import copy
import importlib
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agent_eval.bench import BFCL
from agent_eval.bench.suite_folder import LOCK_FILE, lock_difference, read_lock
from agent_eval.errors import ConfigError

SCHEMAS_FILE = "functions.json"


@dataclass
class Backend:
    """One run's BFCL API instances, by class name, and their public methods by name."""

    instances: dict[str, Any] = field(default_factory=dict)
    methods: dict[str, Callable[..., Any]] = field(default_factory=dict)


def build_backend(env: dict[str, Any]) -> Backend:
    """Fresh instances of the involved classes loaded with the entry's initial config, as upstream's executor
    builds them (a stateless class is not loaded)."""
    config = importlib.import_module("bfcl_eval.constants.executable_backend_config")
    made = Backend()
    for name in env.get("involved_classes") or []:
        cls = getattr(importlib.import_module(config.CLASS_FILE_PATH_MAPPING[name]), name)
        instance = cls()
        if name not in config.STATELESS_CLASSES:
            instance._load_scenario(copy.deepcopy((env.get("initial_config") or {}).get(name, {})),
                                    long_context=bool(env.get("long_context")))
        made.instances[name] = instance
        for method_name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
            if not method_name.startswith("_"):
                made.methods[method_name] = method
    return made


def snapshot(backend: Backend) -> dict[str, Any]:
    """Each instance's public attributes, as the state checker compares them, in JSON: two snapshots are equal
    exactly when upstream's `==` on every public attribute holds (sets, tuples, non-text keys and the file
    system's tree are tagged; a directory is its name and contents, a file its name and content, as their
    own `__eq__` compares them)."""
    return {name: {key: _as_json(value) for key, value in vars(instance).items() if not key.startswith("_")}
            for name, instance in backend.instances.items()}


def _as_json(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_as_json(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: _as_json(v) for k, v in value.items()}
        return {"$dict": {f"{type(k).__name__}:{k!r}": _as_json(v) for k, v in value.items()}}
    if isinstance(value, tuple):
        return {"$tuple": [_as_json(v) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"$set": sorted((_as_json(v) for v in value), key=lambda v: orjson.dumps(v))}
    kind = type(value).__name__
    if kind == "Directory":
        return {"$directory": {"name": value.name, "contents": _as_json(value.contents)}}
    if kind == "File":
        return {"$file": {"name": value.name, "content": value.content}}
    return {"$object": kind, "repr": repr(value)}


def as_text(result: Any) -> str:
    """The text upstream's executor makes of a method's return value."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except Exception:  # noqa: BLE001 - upstream falls back to str() for anything json refuses
            return str(result)
    return str(result)


def make_tool(name: str) -> Callable[..., str]:
    """The tool `name`: calls the run's instance method with the model's arguments; what upstream's executor
    would show (a refused name, an exception as `Error during execution: ...`) is the observation."""

    def call(context: Backend, **kwargs: Any) -> str:
        method = context.methods.get(name)
        try:
            if name in _REFUSED:
                raise Exception(f"Function call {name} is not allowed.")
            if method is None:
                raise NameError(f"name '{name}' is not defined")
            return as_text(method(**kwargs))
        except Exception as exc:  # noqa: BLE001 - upstream shows any exception to the model as text
            return f"Error during execution: {exc}"

    call.__name__ = name
    return call


_REFUSED = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})  # upstream's list


def suite_tools(tools_file: str) -> tuple[dict[str, Callable[..., str]], list[dict[str, Any]]]:
    """The registry and schemas of the suite folder holding `tools_file`, after checking its lock against what
    is installed (a difference is a ConfigError naming it)."""
    folder = Path(tools_file).resolve().parent
    check_lock(folder)
    schemas = orjson.loads((folder / SCHEMAS_FILE).read_bytes())
    registry = {schema["function"]["name"]: make_tool(schema["function"]["name"]) for schema in schemas}
    return registry, schemas


def check_lock(folder: Path) -> dict[str, Any]:
    """The suite's lock, once the installed package (or the recorded checkout) is found to match it."""
    from agent_eval.bench.bfcl import upstream as up
    from agent_eval.bench.suite_folder import find_upstream, make_importable

    lock = read_lock(folder)
    checkout = (lock.get("source") or {}).get("checkout")
    found = find_upstream(BFCL, None if checkout is None else Path(checkout), up.IMPORT_NAME, up.CHECKOUT_INNER)
    problem = lock_difference(lock, found)
    if problem is not None:
        raise ConfigError(f"{folder / LOCK_FILE}: the suite no longer matches what is installed: {problem}. Fix: "
                          f"install what the lock names ({BFCL.install_commands()}) or import the suite again "
                          f"into a new folder (agent-eval bench import bfcl --out NEW_FOLDER).")
    make_importable(found, up.IMPORT_NAME)
    return lock
