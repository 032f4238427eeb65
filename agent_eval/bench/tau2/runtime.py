"""What an imported tau2 suite's tools module runs: tau2's own domain database and tool kit, one per run
(`backend`), the database as JSON (`snapshot`), and one tool per tool-kit method whose observation is the
text tau2's environment gives the model (`Error: ...` for an exception).

The case's environment is `{"db": "db.json"}`: the suite folder's database file (tau2's, normalised), read
and validated once per process. A run's database shares the pristine entries and deep-copies one (a flight,
a user, a reservation, an order, a product) the first time a tool looks it up, so a run costs what it
touches, not a 3-7 MB copy; its snapshot re-dumps only the entries it copied. tau2's tools look entries up
by key before they change them, and only read what they iterate over (checked against tau2's own
environment by the parity set and the oracle).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agent_eval.bench import TAU2
from agent_eval.bench.suite_folder import LOCK_FILE, lock_difference, read_lock, sha256_of
from agent_eval.errors import ConfigError

SCHEMAS_FILE = "tools.json"
DB_FILE = "db.json"


class Error(Exception):
    """A tau2 tool's exception, shown to the model as tau2 shows it: `Error: <message>`."""


class CopyOnLookup(dict):  # type: ignore[type-arg]
    """One table of a run's database: entries shared with the pristine database until looked up by key."""

    __slots__ = ("own",)

    def __init__(self, pristine: dict[str, Any]) -> None:
        super().__init__(pristine)
        self.own: set[Any] = set()

    def __getitem__(self, key: Any) -> Any:
        value = dict.__getitem__(self, key)
        if key not in self.own:
            value = value.model_copy(deep=True)
            dict.__setitem__(self, key, value)
            self.own.add(key)
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default  # noqa: SIM401 - a lookup that copies, as [] does

    def __setitem__(self, key: Any, value: Any) -> None:
        self.own.add(key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        self.own.add(key)
        dict.__delitem__(self, key)

    def pop(self, key: Any, *default: Any) -> Any:
        self.own.add(key)
        return dict.pop(self, key, *default)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key in self:
            return self[key]
        self[key] = default
        return default

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def popitem(self) -> tuple[Any, Any]:
        key, value = dict.popitem(self)
        self.own.add(key)
        return key, value

    def clear(self) -> None:
        self.own.update(dict.keys(self))
        dict.clear(self)

    def __copy__(self) -> dict[Any, Any]:
        return {key: self[key] for key in dict.keys(self)}

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        return {key: self[key].model_copy(deep=True) for key in dict.keys(self)}


@dataclass(frozen=True)
class Pristine:
    """A suite's database as tau2 validates it, and its JSON dump per table, made once per process."""

    db: Any
    dump: dict[str, Any]


@dataclass
class World:
    """One run's database, the tau2 tool kit over it, and the pristine database it started from."""

    db: Any
    tools: Any
    pristine: Pristine


@dataclass(frozen=True)
class Domain:
    """An imported suite's domain: its tau2 classes and the folder its database file is in."""

    folder: Path
    db_class: Any
    tools_class: Any
    cache: dict[tuple[str, int, int], Pristine] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def pristine(self, name: str) -> Pristine:
        """The database file `name` (relative to the suite folder), validated once per content."""
        path = (self.folder / name).resolve()
        try:
            stat = path.stat()
        except OSError as exc:
            raise ConfigError(f"{path}: the tau2 database cannot be read ({exc.strerror}). Fix the case's "
                              f"initial_env \"db\", or import the suite again.") from None
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        with self.lock:  # runs start in several threads at once; one of them validates the file
            found = self.cache.get(key)
            if found is None:
                db = self.db_class.model_validate(orjson.loads(path.read_bytes()))
                found = Pristine(db, db.model_dump(mode="json"))
                self.cache.clear()
                self.cache[key] = found
        return found

    def backend(self, env: dict[str, Any]) -> World:
        """A run's own database (looked-up entries copied) and tau2's tool kit over it."""
        name = env.get("db") if isinstance(env, dict) else None
        if not isinstance(name, str):
            raise ConfigError(f"the tau2 environment must be {{\"db\": \"{DB_FILE}\"}}, not {env!r:.200}")
        pristine = self.pristine(name)
        db = run_copy(pristine.db)
        return World(db, self.tools_class(db), pristine)

    def snapshot(self, world: World) -> dict[str, Any]:
        """The run's database as JSON, equal to tau2's `model_dump` of it (untouched entries shared)."""
        dump = world.pristine.dump
        out: dict[str, Any] = {}
        for name, table in world.db.__dict__.items():
            if isinstance(table, CopyOnLookup):
                base, own = dump[name], table.own
                out[name] = {key: (value.model_dump(mode="json") if key in own else base[key])
                             for key, value in dict.items(table)}
            else:
                out[name] = _dumped(table)
        return out


def run_copy(db: Any) -> Any:
    """A database for one run over the pristine `db`: its tables copy an entry when a tool looks it up."""
    tables = {name: CopyOnLookup(value) if isinstance(value, dict) else _deep(value)
              for name, value in db.__dict__.items()}
    return type(db).model_construct(**tables)


def _deep(value: Any) -> Any:
    return value.model_copy(deep=True) if hasattr(value, "model_copy") else orjson.loads(orjson.dumps(value))


def _dumped(value: Any) -> Any:
    return value.model_dump(mode="json") if hasattr(value, "model_dump") else value


MAX_DIGITS = 1_000_000  # of a power `calculate` is let compute (upstream computes any, holding the GIL)


def refuse_huge_power(expression: Any) -> None:
    """Raise what tau2's `calculate` ends with for a power too large to compute in reasonable time (`float()`
    of an integer over 309 digits: OverflowError), before computing it: `9**9**9**9` would hold the
    interpreter for hours (upstream's `eval` computes it), a hostile input that must not stop a run."""
    import ast
    import math

    def digits(node: ast.AST) -> float:  # an upper bound of log10(|value| + 1)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return math.log10(abs(node.value) + 1)
        if isinstance(node, ast.UnaryOp):
            return digits(node.operand)
        if isinstance(node, ast.BinOp):
            left, right = digits(node.left), digits(node.right)
            if isinstance(node.op, ast.Pow):
                return math.inf if right > 300 else left * 10 ** right
            return left + right + 1
        return 0.0

    if not isinstance(expression, str) or "**" not in expression:
        return
    try:
        tree = ast.parse(expression, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return  # tau2's own eval gives the error
    if digits(tree.body) > MAX_DIGITS:
        raise OverflowError("int too large to convert to float")


def make_tool(name: str, to_text: Callable[[Any], str]) -> Callable[..., str]:
    """The tool `name`: tau2's tool-kit method on the run's database; its result as tau2's environment turns
    it into text, an exception as `Error: <message>` (an agent-eval tool error, counted by max_tool_errors)."""

    def call(context: World, **kwargs: Any) -> str:
        try:
            if name == "calculate":
                refuse_huge_power(kwargs.get("expression"))
            result = context.tools.use_tool(tool_name=name, **kwargs)
        except Exception as exc:  # noqa: BLE001 - tau2 shows any exception of a tool to the model as text
            raise Error(str(exc)) from None
        return to_text(result)

    call.__name__ = name
    return call


def suite_tools(tools_file: str) -> tuple[dict[str, Callable[..., str]], list[dict[str, Any]],
                                          Callable[[dict[str, Any]], World], Callable[[World], dict[str, Any]]]:
    """The registry, schemas, backend and snapshot of the suite folder holding `tools_file`, after checking its
    lock against what is installed (a difference is a ConfigError naming it)."""
    from agent_eval.bench.tau2 import upstream as up

    folder = Path(tools_file).resolve().parent
    lock = check_lock(folder)
    db_class, tools_class = up.domain_classes(str(lock.get("domain")))
    to_text = up.module("environment.environment").Environment.to_json_str
    schemas = orjson.loads((folder / SCHEMAS_FILE).read_bytes())
    registry = {schema["function"]["name"]: make_tool(schema["function"]["name"], to_text) for schema in schemas}
    domain = Domain(folder, db_class, tools_class)
    return registry, schemas, domain.backend, domain.snapshot


def check_lock(folder: Path) -> dict[str, Any]:
    """The suite's lock, once the installed package (or the recorded checkout) and the suite's own database
    file are found to match it."""
    from agent_eval.bench.suite_folder import find_upstream, make_importable
    from agent_eval.bench.tau2 import upstream as up

    lock = read_lock(folder)
    checkout = (lock.get("source") or {}).get("checkout")
    found = find_upstream(TAU2, None if checkout is None else Path(checkout), up.IMPORT_NAME, up.CHECKOUT_INNER)
    problem = lock_difference(lock, found)
    if problem is None:
        problem = _suite_file_difference(folder, lock.get("suite_files") or {})
    if problem is not None:
        raise ConfigError(f"{folder / LOCK_FILE}: the suite no longer matches what is installed: {problem}. Fix: "
                          f"install what the lock names ({TAU2.install_commands()}) or import the suite again "
                          f"into a new folder (agent-eval bench import tau2 --domain {lock.get('domain')} "
                          f"--out NEW_FOLDER).")
    make_importable(found, up.IMPORT_NAME)
    return lock


def _suite_file_difference(folder: Path, recorded: dict[str, str]) -> str | None:
    for rel, digest in recorded.items():
        path = folder / rel
        if not os.path.isfile(path):
            return f"{path} is missing"
        if sha256_of(path) != digest:
            return f"{path} changed since the import (sha256 {digest[:12]}... was recorded)"
    return None
