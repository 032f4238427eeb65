"""Values JSON cannot hold, made storable where they enter a trace (see "What agent-eval guarantees"
in README.md). The fast path is one orjson call; the Python walk runs only when orjson refuses."""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from agent_eval.tracebacks import call_user_or

MAX_DEPTH = 100
TOO_DEEP = "<nested too deep>"
_SURROGATE = re.compile("[\ud800-\udfff]")


def dumps_safe(value: Any) -> tuple[Any, bytes]:
    """(value, its JSON): value itself when orjson takes it, else its converted copy."""
    try:
        return value, orjson.dumps(value)
    except TypeError:
        safe = to_json_safe(value)
        return safe, orjson.dumps(safe)


def to_json_safe(value: Any, depth: int = 0, unknown: Callable[[Any], str] | None = None) -> Any:
    """A copy of value that JSON can hold: sets and tuples become lists, bytes and lone surrogates are
    decoded with U+FFFD, keys become str, huge ints and unknown objects their repr (or `unknown(obj)`),
    depth is cut at 100."""
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _has_surrogate(value) else value
    text = unknown or _repr
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**64 else text(value)
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        if depth >= MAX_DEPTH:
            return TOO_DEEP
        if isinstance(value, dict):
            return {_key(k): to_json_safe(v, depth + 1, unknown) for k, v in value.items()}
        return [to_json_safe(v, depth + 1, unknown) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    try:
        orjson.dumps(value)  # a type orjson encodes itself (dataclass, datetime, enum, numpy, ...)
        return value
    except TypeError:
        return text(value)


def str_of(value: Any) -> str:
    """str(value), its lone surrogates replaced; `<unrepresentable TYPE>` when str() raises."""
    return to_json_safe(_str(value))


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _key(key: Any) -> str:
    text = key if isinstance(key, str) else _str(key)
    return to_json_safe(text)


def _str(value: Any) -> str:
    text = call_user_or(None, str, value)  # a hostile __str__ may raise anything
    return text if text is not None else f"<unrepresentable {type(value).__name__}>"


def _repr(value: Any) -> str:
    text = call_user_or(None, repr, value)  # a hostile __repr__ may raise anything
    return to_json_safe(text) if isinstance(text, str) else f"<unrepresentable {type(value).__name__}>"
