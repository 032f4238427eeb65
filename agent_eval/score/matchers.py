"""Args matchers: JSON equality plus the `$any`, `$regex`, `$ignore`, `$approx` objects."""
from __future__ import annotations

from agent_eval.records import Step

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    import regex

APPROX_DEFAULT_TOL = 1e-9
"""The `$tol` used when a `$approx` matcher gives none."""

_MISSING = object()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """True when a and b are the same JSON value: 1 == 1.0, key order ignored, lists ordered, True != 1."""
    if a is b:
        return True
    if type(a) is dict and type(b) is dict:
        # A whole env can be megabytes: `==` and two dumps in C settle the usual "identical" case.
        # `==` also calls True equal to 1, so only identical bytes are trusted; anything else is walked.
        try:
            if a == b and orjson.dumps(a) == orjson.dumps(b):
                return True
        except TypeError:
            pass
    return _json_equal(a, b)


def _json_equal(a: Any, b: Any) -> bool:
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if a is None or b is None:
        return False
    if isinstance(a, dict):
        if not isinstance(b, dict) or len(a) != len(b):
            return False
        for key, value in a.items():
            other = b.get(key, _MISSING)
            if other is _MISSING or not _json_equal(value, other):
                return False
        return True
    if isinstance(a, (list, tuple)):
        if not isinstance(b, (list, tuple)) or len(a) != len(b):
            return False
        return all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if _is_number(a):
        return _is_number(b) and a == b
    if isinstance(b, (dict, list, tuple)) or _is_number(b):
        return False
    return a == b


REGEX_TIMEOUT_S = 1.0
REGEX_TIMED_OUT = "regex timed out"


class RegexTimeout(Exception):
    """A regex match outran REGEX_TIMEOUT_S (catastrophic backtracking): its check fails, nothing hangs."""

    def __init__(self, pattern: str) -> None:
        super().__init__(f"{REGEX_TIMED_OUT} after {REGEX_TIMEOUT_S:g} s: {pattern[:80]!r}")


@functools.lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> regex.Pattern[str] | None:
    """The compiled pattern (the `regex` engine, which can time out), or None when it is not valid."""
    import regex  # here: a run whose checks have no pattern never needs it

    try:
        return regex.compile(pattern)
    except (regex.error, TypeError, ValueError):
        return None


# Matches known to outrun the limit, so that one slow match costs its second once, not once per try.
_TIMED_OUT: set[tuple[str, str, bool]] = set()


def regex_matches(pattern: str, text: str, full: bool = False) -> bool:
    """search (or with full, fullmatch) under the time limit; raises RegexTimeout when it is outrun."""
    compiled = compile_regex(pattern)
    if compiled is None:
        return False
    if (pattern, text, full) in _TIMED_OUT:
        raise RegexTimeout(pattern)
    try:
        found = (compiled.fullmatch if full else compiled.search)(text, timeout=REGEX_TIMEOUT_S)
    except TimeoutError:
        if len(_TIMED_OUT) > 256:
            _TIMED_OUT.clear()
        _TIMED_OUT.add((pattern, text, full))
        raise RegexTimeout(pattern) from None
    return found is not None


def _match_any(matcher: dict[str, Any], actual: Any) -> bool:
    options = matcher["$any"]
    return isinstance(options, list) and any(match_value(option, actual) for option in options)


def _match_regex(matcher: dict[str, Any], actual: Any) -> bool:
    pattern = matcher["$regex"]
    if not isinstance(actual, str) or not isinstance(pattern, str):
        return False
    return regex_matches(pattern, actual, full=True)


def _match_ignore(matcher: dict[str, Any], actual: Any) -> bool:
    return True


def _match_approx(matcher: dict[str, Any], actual: Any) -> bool:
    target = matcher["$approx"]
    tol = matcher.get("$tol", APPROX_DEFAULT_TOL)
    if not (_is_number(actual) and _is_number(target) and _is_number(tol)):
        return False
    return math.isfinite(actual) and abs(actual - target) <= tol


# Each matcher is recognised by its exact key set; the first key names its function.
MATCHERS: dict[str, Callable[[dict[str, Any], Any], bool]] = {
    "$any": _match_any,
    "$regex": _match_regex,
    "$ignore": _match_ignore,
    "$approx": _match_approx,
}
_MATCHER_KEYSETS: dict[frozenset[Any], str] = {
    frozenset({"$any"}): "$any",
    frozenset({"$regex"}): "$regex",
    frozenset({"$ignore"}): "$ignore",
    frozenset({"$approx"}): "$approx",
    frozenset({"$approx", "$tol"}): "$approx",
}


def matcher_kind(value: Any) -> str | None:
    """The matcher key (`$any`, `$regex`, `$ignore`, `$approx`) when value is a matcher object, else None."""
    if not isinstance(value, dict) or not 1 <= len(value) <= 2:
        return None
    return _MATCHER_KEYSETS.get(frozenset(value))


def is_ignore(value: Any) -> bool:
    """True when value is an `$ignore` matcher."""
    return isinstance(value, dict) and len(value) == 1 and "$ignore" in value


def match_value(expected: Any, actual: Any) -> bool:
    """True when actual matches expected, a literal or a matcher at any depth (literal dicts match exactly)."""
    if isinstance(expected, dict):
        kind = matcher_kind(expected)
        if kind is not None:
            return MATCHERS[kind](expected, actual)
        if not isinstance(actual, dict):
            return False
        for key in actual:
            if key not in expected:
                return False
        for key, value in expected.items():
            other = actual.get(key, _MISSING)
            if other is _MISSING:
                if not is_ignore(value):
                    return False
            elif not match_value(value, other):
                return False
        return True
    if isinstance(expected, list):
        if not isinstance(actual, (list, tuple)) or len(expected) != len(actual):
            return False
        return all(match_value(x, y) for x, y in zip(expected, actual, strict=True))
    return json_equal(expected, actual)


def match_args(expected_args: dict[str, Any] | None, actual_args: Any) -> bool:
    """True when every top-level key of expected_args matches actual_args; other actual keys go unchecked."""
    if not expected_args:
        return True
    if not isinstance(actual_args, dict):
        return all(is_ignore(value) for value in expected_args.values())
    for key, value in expected_args.items():
        if is_ignore(value):
            continue
        other = actual_args.get(key, _MISSING)
        if other is _MISSING or not match_value(value, other):
            return False
    return True


def match_call(expected: dict[str, Any], step: Step) -> bool:
    """True when step calls the expected tool with args that match."""
    return expected.get("name") == step.get("name") and match_args(expected.get("args"), step.get("args"))


def field_names(expected_args: dict[str, Any] | None) -> list[str]:
    """The *fields* of param_accuracy (docs/metrics.md): the top-level keys whose matcher is not `$ignore`."""
    if not expected_args:
        return []
    return [key for key, value in expected_args.items() if not is_ignore(value)]


def matched_fields(expected_args: dict[str, Any] | None, actual_args: Any) -> int:
    """How many fields of expected_args actual_args matches (0 when actual_args is not a dict)."""
    if not expected_args or not isinstance(actual_args, dict):
        return 0
    count = 0
    for key, value in expected_args.items():
        if is_ignore(value):
            continue
        other = actual_args.get(key, _MISSING)
        try:
            if other is not _MISSING and match_value(value, other):
                count += 1
        except RegexTimeout:
            pass  # a field whose regex outran its limit is not matched (its check says so)
    return count


def is_literal(value: Any) -> bool:
    """True when no matcher object occurs anywhere in value."""
    if isinstance(value, dict):
        return matcher_kind(value) is None and all(is_literal(v) for v in value.values())
    if isinstance(value, list):
        return all(is_literal(v) for v in value)
    return True


def _where(path: tuple[Any, ...]) -> str:
    return " at " + ".".join(str(p) for p in path) if path else ""


def _check_matcher(kind: str, value: dict[str, Any], path: tuple[Any, ...]) -> str | None:
    if kind == "$any":
        options = value["$any"]
        if not isinstance(options, list) or not options:
            return f'"$any" must be a non-empty list of values{_where(path)}'
        for index, option in enumerate(options):
            problem = _validate(option, path + ("$any", index))
            if problem:
                return problem
        return None
    if kind == "$regex":
        pattern = value["$regex"]
        if not isinstance(pattern, str):
            return f'"$regex" must be a string{_where(path)}'
        import regex

        try:
            regex.compile(pattern)
        except (regex.error, ValueError) as exc:
            return f'"$regex" {pattern!r} is not a valid regular expression ({exc}){_where(path)}'
        return None
    if kind == "$ignore":
        if value["$ignore"] is not True:
            return f'"$ignore" must be true{_where(path)}'
        return None
    if not _is_number(value["$approx"]):
        return f'"$approx" must be a number{_where(path)}'
    tol = value.get("$tol", APPROX_DEFAULT_TOL)
    if not _is_number(tol) or tol < 0:
        return f'"$tol" must be a non-negative number{_where(path)}'
    return None


def _validate(value: Any, path: tuple[Any, ...]) -> str | None:
    if isinstance(value, dict):
        kind = matcher_kind(value)
        if kind is not None:
            return _check_matcher(kind, value, path)
        dollar = [key for key in value if isinstance(key, str) and key.startswith("$")]
        if dollar:
            return (
                f"{dollar[0]!r} is not a matcher here{_where(path)}: a matcher is an object with exactly "
                'one of {"$any": [...]}, {"$regex": "..."}, {"$ignore": true}, '
                '{"$approx": x} or {"$approx": x, "$tol": t}'
            )
        for key, item in value.items():
            problem = _validate(item, path + (key,))
            if problem:
                return problem
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            problem = _validate(item, path + (index,))
            if problem:
                return problem
    return None


def validate_matcher(value: Any) -> str | None:
    """A message naming the first malformed matcher in value (and where), or None when all are well formed."""
    return _validate(value, ())
