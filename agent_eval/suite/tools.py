"""Tools: the `tool` decorator, schema building, and the ToolSet that validates and invokes calls.

A tools module takes the seed form (`TOOL_REGISTRY` + `TOOLS_SCHEMA`) or uses `@agent_eval.tool`.
pydantic and jsonschema are imported lazily so that importing this module stays cheap.
"""
from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from agent_eval.errors import ConfigError, ToolError
from agent_eval.suite.jsonsafe import str_of, to_json_safe
from agent_eval.suite.schema_refs import ref_problem
from agent_eval.tracebacks import call_user_or

if TYPE_CHECKING:
    from agent_eval.suite.backend import Backend

TOOL_MARK = "__agent_eval_tool__"
_INJECTED = ("env", "context")
_JSON_OPTS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
_UNDUMPED = object()  # what a model_dump that raised gave
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params|Keyword Args|Returns?|Raises|Yields?|Examples?|"
                      r"Notes?|Attributes|See Also|Warnings?|Todo|References):\s*$", re.IGNORECASE)
_ARG_SECTIONS = {"args", "arguments", "parameters", "params", "keyword args"}
_ARG_LINE = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
# Keys whose value maps arbitrary names to schemas: a property called "title" must survive cleaning.
_NAME_MAPS = {"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"}
# Keys whose value is user data, not a schema: a default of {"title": ...} must survive too.
_DATA_KEYS = {"default", "enum", "const", "examples"}


@dataclass(frozen=True)
class ToolMark:
    """What `@tool` records on a function: the name and schema it was given, if any."""

    name: str | None
    schema: dict[str, Any] | None


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None, schema: dict[str, Any] | None = None) -> Any:
    """Mark `fn` as a tool (usable as `@tool` or `@tool(name=..., schema=...)`); returns it unchanged."""

    def mark(f: Callable[..., Any]) -> Callable[..., Any]:
        full = None
        if schema is not None:
            full = normalize_schema(schema, name)
            if not full["function"]["name"]:
                full["function"]["name"] = f.__name__
        setattr(f, TOOL_MARK, ToolMark(name=name, schema=full))
        return f

    return mark(fn) if fn is not None else mark


def normalize_schema(schema: Any, name: str | None = None) -> dict[str, Any]:
    """Return `schema` (full OpenAI form or just its function part) in the full form.

    `name`, when given, replaces or fills in the function's name. Raises ConfigError when malformed.
    """
    if not isinstance(schema, Mapping):
        raise ConfigError(f"a tool schema must be an object, got {type(schema).__name__}")
    func = schema.get("function") if schema.get("type") == "function" else schema
    if not isinstance(func, Mapping):
        raise ConfigError("a tool schema of type 'function' needs a 'function' object")
    func = dict(func)
    if name:
        func["name"] = name
    if not isinstance(func.setdefault("name", ""), str):
        raise ConfigError(f"a tool schema's 'name' must be a string (got {func['name']!r:.80})")
    func.setdefault("description", "")
    params = func.setdefault("parameters", {"type": "object", "properties": {}})
    if not isinstance(params, Mapping):
        raise ConfigError(f"tool {func['name']!r}: 'parameters' must be a JSON schema object")
    return {"type": "function", "function": func}


def build_schema(fn: Callable[..., Any], name: str | None = None) -> dict[str, Any]:
    """Build the full OpenAI function schema of `fn` from its type hints and Google-style docstring."""
    import inspect
    import typing
    import warnings
    import pydantic

    tool_name = name or fn.__name__
    description, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    for i, param in enumerate(inspect.signature(fn).parameters.values()):
        if param.name in _INJECTED or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        default = ... if param.default is param.empty else param.default
        field = pydantic.Field(default, alias=param.name, description=arg_docs.get(param.name))
        # Internal names avoid clashes with BaseModel attributes ("json", "schema", leading "_").
        fields[f"f{i}"] = (hints.get(param.name, Any), field)
    model = pydantic.create_model(f"{tool_name}_args", **fields)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a non-JSON default is simply left out of the schema
        params = model.model_json_schema(by_alias=True)
    params = _clean(params)
    params.setdefault("properties", {})
    return {"type": "function",
            "function": {"name": tool_name, "description": description, "parameters": params}}


def _clean(node: Any) -> Any:
    """Drop pydantic's "title" keys, keeping property and definition names intact."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                continue
            if key in _DATA_KEYS:
                out[key] = value
            elif key in _NAME_MAPS and isinstance(value, dict):
                out[key] = {k: _clean(v) for k, v in value.items()}
            else:
                out[key] = _clean(value)
        return out
    if isinstance(node, list):
        return [_clean(v) for v in node]
    return node


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its first paragraph and its `Args:` descriptions."""
    lines = doc.expandtabs().splitlines()
    first: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()):
            break
        first.append(line.strip())
    args: dict[str, str] = {}
    in_args, entry_indent, current = False, None, None
    for line in lines:
        header = _SECTION.match(line.strip())
        if header and len(line) - len(line.lstrip()) == 0:
            in_args, entry_indent, current = header.group(1).lower() in _ARG_SECTIONS, None, None
            continue
        if not in_args or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        entry_indent = indent if entry_indent is None else entry_indent
        if indent < entry_indent or indent == 0:
            in_args = False
        elif indent == entry_indent and (m := _ARG_LINE.match(line.strip())):
            current = m.group(1)
            args[current] = m.group(2).strip()
        elif current is not None:
            args[current] = f"{args[current]} {line.strip()}".strip()
    return " ".join(first), args


@dataclass(frozen=True)
class RemoteTool:
    """A tool that an MCP server serves: the server (its place in the suite's `tools`) and its own name."""

    server: int
    remote: str


@dataclass(frozen=True)
class _Tool:
    name: str
    fn: Callable[..., Any] | RemoteTool
    schema: dict[str, Any]
    inject: tuple[str, ...]
    validator: Any
    is_async: bool = False


class ToolSet:
    """The tools a case may call: their OpenAI schemas, argument validation and invocation."""

    def __init__(self, tools: Iterable[tuple[str, Callable[..., Any], dict[str, Any]]]):
        """Compile one validator per `(name, function, full schema)`; raises ConfigError on a bad schema."""
        import inspect

        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import validator_for

        self._tools: dict[str, _Tool] = {}
        for name, fn, schema in tools:
            if name in self._tools:
                raise ConfigError(f"tool {name!r} is defined twice. Fix: rename one of them.")
            params = schema["function"]["parameters"]
            cls = validator_for(params)
            try:
                cls.check_schema(params)
                problem = ref_problem(params)
            except SchemaError as e:
                problem = f"its parameters are not a valid JSON schema: {e.message}"
            except RecursionError:
                problem = "its parameters are nested too deep to check"
            if problem is not None:
                raise ConfigError(f"tool {name!r}: {problem}. Fix the schema.") from None
            declared: Mapping[str, inspect.Parameter]
            try:
                declared = {} if isinstance(fn, RemoteTool) else inspect.signature(fn).parameters
            except (TypeError, ValueError):
                declared = {}
            inject = tuple(p for p in _INJECTED if p in declared)
            is_async = not isinstance(fn, RemoteTool) and (
                inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__))
            self._tools[name] = _Tool(name, fn, schema, inject, cls(params), is_async)
        self.schemas: list[dict[str, Any]] = [t.schema for t in self._tools.values()]
        self.names: frozenset[str] = frozenset(self._tools)
        self.remote: dict[str, RemoteTool] = {t.name: served for t in self._tools.values()
                                              if isinstance(served := t.fn, RemoteTool)}
        self.backend: Backend | None = None  # the tools module's stateful backend (suite/backend.py)

    def entries(self) -> list[tuple[str, Any, dict[str, Any]]]:
        """The `(name, function, schema)` triples this set was built from, in order."""
        return [(t.name, t.fn, t.schema) for t in self._tools.values()]

    def env_tools(self) -> list[str]:
        """The Python tools that take the run's env (an `env` or `context` parameter)."""
        return [t.name for t in self._tools.values() if t.inject]

    @classmethod
    def from_functions(cls, functions: Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]]) -> ToolSet:
        """Build a ToolSet from functions (a name→function mapping, or functions named by themselves)."""
        items = functions.items() if isinstance(functions, Mapping) else ((None, f) for f in functions)
        entries = []
        for name, fn in items:
            mark = getattr(fn, TOOL_MARK, None)
            name = name or (marked_name(fn, mark) if mark else fn.__name__)
            schema = normalize_schema(mark.schema, name) if mark and mark.schema else build_schema(fn, name)
            entries.append((name, fn, schema))
        return cls(entries)

    def has(self, name: str) -> bool:
        """True when a tool of this name exists."""
        return name in self._tools

    def is_async(self, name: str) -> bool:
        """True when the tool is an `async def` function: a run awaits it on its event loop."""
        entry = self._tools.get(name)
        return entry is not None and entry.is_async

    def validate(self, name: str, args: Any) -> str | None:
        """Check `args` against the tool's schema; a short message naming the offending path, or None."""
        entry = self._tools.get(name)
        if entry is None:
            return "unknown tool"
        errors = entry.validator.iter_errors(args)
        first = next(errors, None)
        if first is None:
            return None
        from jsonschema.exceptions import best_match

        error = best_match(itertools.chain([first], errors))
        where = "args" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        return f"{where}: {error.message}"

    def invoke(self, name: str, args: dict[str, Any], env: dict[str, Any]) -> Any:
        """Call the tool with `args` as keywords (and `env`/`context` where declared); errors propagate."""
        entry = self._tools.get(name)
        if entry is None:
            raise ToolError(f"unknown tool {name!r}")
        if isinstance(entry.fn, RemoteTool):
            raise ToolError(f"tool {name!r} is served by an MCP server; only a run can call it")
        if not entry.inject:
            return entry.fn(**args)
        return entry.fn(**args, **{key: env for key in entry.inject})

    @staticmethod
    def observation(value: Any) -> str:
        """The observation the agent sees: a str as it is; bytes decoded as UTF-8 with replacement; a
        pydantic model as `model_dump(mode="json")`; anything else as JSON (non-ASCII kept), converted as
        a trace is where JSON cannot hold it, an object JSON cannot hold being its str()."""
        if isinstance(value, str):
            return value
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value).decode("utf-8", "replace")
        dump = getattr(value, "model_dump", None)
        if callable(dump) and not isinstance(value, type):
            dumped = call_user_or(_UNDUMPED, lambda: dump(mode="json"))
            if dumped is _UNDUMPED:  # a model that cannot dump itself is shown as text
                return str_of(value)
            value = dumped
        try:
            return orjson.dumps(value, option=_JSON_OPTS).decode()
        except TypeError:
            pass
        if not isinstance(value, (dict, list, tuple, set, frozenset)):
            return str_of(value)
        return orjson.dumps(to_json_safe(value, unknown=str_of), option=_JSON_OPTS).decode()


def marked_name(fn: Callable[..., Any], mark: ToolMark) -> str:
    """The tool name of a function marked by `@tool`."""
    return mark.name or (mark.schema["function"]["name"] if mark.schema else fn.__name__)
