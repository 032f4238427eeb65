"""A typo never switches a check off: unknown keys, misspelled case fields, ids, and JSON too deep to run.

The rule (README.md, "The case file"): an unknown key in the suite block, `expect`, an `expected_tools` entry, a
fault or a policy rule is an error, with a "did you mean" when one is close. Of a case's other fields, one
that a suite scorer consumes is kept quietly, one close to a known field is an error naming it, the common
fields of other tools are kept quietly, and the rest are listed once, as a warning.
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, get_type_hints

import orjson
from pydantic import BaseModel
from typing_extensions import is_typeddict

from agent_eval.suite.jsonsafe import MAX_DEPTH

if TYPE_CHECKING:
    from agent_eval.suite.tools import ToolSet

CUTOFF = 0.75
# Fields that other evaluation tools put in their cases: kept for custom scorers, never a typo.
OTHER_TOOLS_FIELDS = frozenset({"expected_output", "actual_output", "context", "retrieval_context", "input",
                                "target", "ideal"})
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# orjson refuses to encode past 254 levels: wrapping a value in this many lists makes it refuse exactly
# the values nested deeper than MAX_DEPTH, at C speed.
_DEPTH_PADDING = 254 - MAX_DEPTH


def did_you_mean(name: Any, known: Iterable[str]) -> str:
    """`; did you mean `x`?` when name is close to one of known (difflib, cutoff 0.75), else ``."""
    if not isinstance(name, str):
        return ""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=CUTOFF)
    return f"; did you mean `{close[0]}`?" if close else ""


def unknown_key_message(name: Any, known: Iterable[str], what: str = "field") -> str:
    """The message for an unknown key: the close known one when there is one, else the known ones."""
    known = sorted(known)
    hint = did_you_mean(name, known)
    if hint:
        return f"unknown {what}{hint}"
    return f"unknown {what}; remove it, or use one of {', '.join(known)}"


def is_too_deep(value: Any) -> bool:
    """True when value (JSON data from a case file) is nested deeper than MAX_DEPTH levels."""
    for _ in range(_DEPTH_PADDING):
        value = [value]
    try:
        orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError as exc:
        return "Recursion" in str(exc)
    return False


def depth_problems(case: Mapping[str, Any], fields: Iterable[str]) -> list[tuple[str, str]]:
    """A problem for each of fields nested deeper than MAX_DEPTH levels (it would crash a run)."""
    out = []
    for name in fields:
        if isinstance(case.get(name), (dict, list)) and is_too_deep(case[name]):
            out.append((name, f"nested deeper than {MAX_DEPTH} levels; flatten it (no run could hold it)"))
    return out


def args_depth_problems(expected_tools: Any) -> list[tuple[str, str]]:
    """The depth problem of each expected_tools entry's args."""
    out = []
    for i, call in enumerate(expected_tools if isinstance(expected_tools, list) else ()):
        args = call.get("args") if isinstance(call, dict) else None
        if isinstance(args, dict) and is_too_deep(args):
            out.append((f"expected_tools[{i}].args",
                        f"nested deeper than {MAX_DEPTH} levels; flatten it (no run could hold it)"))
    return out


def id_problem(case_id: Any) -> str | None:
    """Why a case id cannot be used (a control character), or None."""
    if isinstance(case_id, str) and _CONTROL.search(case_id):
        shown = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", case_id)
        return (f"the id {shown!r} holds a control character (a newline, tab or escape); ids may hold "
                "any printable characters: remove it")
    if isinstance(case_id, str) and not case_id.strip():
        return "the id is empty; give the case a name"
    return None


def extra_case_fields(case: Mapping[str, Any], known: Iterable[str], consumed: set[str],
                      ) -> tuple[list[tuple[str, str]], list[str]]:
    """(errors, leftovers) for the case's fields that are not known: a field close to a known one is an
    error naming it; fields a scorer consumes and other tools' fields are fine; the rest are leftovers."""
    known = set(known)
    errors, leftovers = [], []
    for name in case:
        if name in known or name in consumed or name in OTHER_TOOLS_FIELDS:
            continue
        hint = did_you_mean(name, known)
        if hint:
            errors.append((name, f"unknown field{hint} (a field a custom scorer reads must be one of its "
                                 "parameters or column_map names)"))
        else:
            leftovers.append(name)
    return errors, leftovers


TEXT_CHECKS = ("contains", "not_contains", "icontains", "not_icontains")


def expect_problems(expect: dict[str, Any], tools: ToolSet | None) -> list[tuple[str, str]]:
    """Checks of `expect` that cannot fail: an empty text list, a forbidden tool that is a typo."""
    out = []
    for key in TEXT_CHECKS:
        value = expect.get(key)
        if key in expect and (value == [] or value == "" or value is None):
            out.append((f"expect.{key}", "is empty, so it can never fail; give the text(s) to look for, or "
                                         "remove the key"))
        elif isinstance(value, list) and not all(isinstance(v, str) and v for v in value):
            out.append((f"expect.{key}", "must be a non-empty string or a list of them"))
    names = tools.names if tools is not None else ()
    forbidden = expect.get("forbidden_tools")
    for i, name in enumerate(forbidden if isinstance(forbidden, list) else [forbidden] if forbidden else []):
        hint = did_you_mean(name, names) if name not in names else ""
        if hint:
            where = f"expect.forbidden_tools[{i}]" if isinstance(forbidden, list) else "expect.forbidden_tools"
            out.append((where, f"no suite tool is named {name!r}{hint} (as it is, the check can never fail)"))
    return out


def args_key_problems(index: int, call: dict[str, Any], tools: ToolSet | None) -> list[tuple[str, str]]:
    """An `args` key the tool's schema does not list, when the schema forbids others or the key is a typo."""
    args = call.get("args")
    schema = _schema_of(tools, call.get("name"))
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(args, dict) or not isinstance(props, dict) or not props:
        return []
    closed = schema.get("additionalProperties") is False
    out = []
    for key in args:
        if key in props:
            continue
        hint = did_you_mean(key, props)
        if hint or closed:
            out.append((f"expected_tools[{index}].args.{key}",
                        f"tool {call.get('name')!r} has no argument {key!r}{hint or ''}"
                        + ("" if hint else f"; its arguments are {', '.join(sorted(props))}")))
    return out


def _schema_of(tools: ToolSet | None, name: Any) -> Any:
    for schema in tools.schemas if tools is not None else ():
        function = schema.get("function") or {}
        if function.get("name") == name:
            return function.get("parameters")
    return None


def known_fields(model: type | None, loc: tuple[Any, ...]) -> list[str]:
    """The field names of the (nested) model at loc (a pydantic model or a TypedDict), for a "did you mean"."""
    found = model_at(model, loc)
    return list(_fields_of(found)) if found is not None else []


def model_at(model: type | None, loc: tuple[Any, ...]) -> type | None:
    """The (nested) model at loc of a pydantic error (a pydantic model or a TypedDict), or None."""
    for part in loc:
        if model is None:
            return None
        if not isinstance(part, int):
            model = _model_in(_fields_of(model).get(part))
    return model


def _fields_of(model: type) -> dict[str, Any]:
    if issubclass(model, BaseModel):
        return {name: info.annotation for name, info in model.model_fields.items()}
    return get_type_hints(model, include_extras=True)


def _model_in(annotation: Any) -> type | None:
    for meta in getattr(annotation, "__metadata__", ()):  # Annotated[T, AsWritten(U)]: the model checks a U
        if hasattr(meta, "written"):
            return _model_in(meta.written)
    if isinstance(annotation, type) and (issubclass(annotation, BaseModel) or is_typeddict(annotation)):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None
