"""The env checks: `expected_env_check` items (one op each, from the ENV_OPS table) and `expected_env`."""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from agent_eval.records import Case, Check, Trace
from agent_eval.score.envdiff import diff_env, get_path, show_json
from agent_eval.score.matchers import RegexTimeout, json_equal, match_value
from agent_eval.score.verdict import Verdict, check_entry

_DIFF_PATHS_SHOWN = 5


def _requires_path(op: Callable[[Any, Any], Verdict]) -> Callable[[bool, Any, Any], Verdict]:
    def checked(found: bool, actual: Any, expected: Any) -> Verdict:
        return op(actual, expected) if found else (False, "path not found")

    checked.__doc__ = op.__doc__
    return checked


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _op_exists(found: bool, actual: Any, expected: Any) -> Verdict:
    """The path exists (exists: true) or is missing (exists: false)."""
    want = expected is not False
    if found == want:
        return True, "exists" if found else "missing, as expected"
    return False, "path not found" if want else f"path exists with value {show_json(actual)}"


@_requires_path
def _op_equals(actual: Any, expected: Any) -> Verdict:
    """The value JSON-equals expected (matchers allowed)."""
    if match_value(expected, actual):
        return True, f"equals {show_json(expected)}"
    return False, f"expected {show_json(expected)}, found {show_json(actual)}"


@_requires_path
def _op_not_equals(actual: Any, expected: Any) -> Verdict:
    """The value does not JSON-equal expected."""
    if match_value(expected, actual):
        return False, f"expected anything but {show_json(expected)}, found it"
    return True, f"{show_json(actual)} is not {show_json(expected)}"


@_requires_path
def _op_contains(actual: Any, expected: Any) -> Verdict:
    """A substring of a string, an element of a list (JSON equality), or a key of an object."""
    if isinstance(actual, str):
        ok = isinstance(expected, str) and expected in actual
    elif isinstance(actual, list):
        ok = any(json_equal(item, expected) for item in actual)
    elif isinstance(actual, dict):
        ok = isinstance(expected, str) and expected in actual
    else:
        return False, f"contains needs a string, list or object, found {show_json(actual)}"
    if ok:
        return True, f"contains {show_json(expected)}"
    return False, f"expected it to contain {show_json(expected)}, found {show_json(actual)}"


@_requires_path
def _op_in(actual: Any, expected: Any) -> Verdict:
    """The value is one of the given list."""
    if not isinstance(expected, list):
        return False, f"`in` needs a list of values, got {show_json(expected)}"
    if any(json_equal(actual, option) for option in expected):
        return True, f"{show_json(actual)} is in {show_json(expected)}"
    return False, f"expected one of {show_json(expected)}, found {show_json(actual)}"


def _compare(symbol: str, compare: Callable[[Any, Any], bool]) -> Callable[[bool, Any, Any], Verdict]:
    @_requires_path
    def op(actual: Any, expected: Any) -> Verdict:
        if not _is_number(expected):
            return False, f"`{symbol}` needs a number to compare with, got {show_json(expected)}"
        if not _is_number(actual):
            return False, f"expected a number {symbol} {show_json(expected)}, found non-number {show_json(actual)}"
        if compare(actual, expected):
            return True, f"{show_json(actual)} {symbol} {show_json(expected)}"
        return False, f"expected a value {symbol} {show_json(expected)}, found {show_json(actual)}"

    return op


ENV_OPS: dict[str, Callable[[bool, Any, Any], Verdict]] = {
    "equals": _op_equals,
    "not_equals": _op_not_equals,
    "exists": _op_exists,
    "contains": _op_contains,
    "in": _op_in,
    "gt": _compare(">", operator.gt),
    "gte": _compare(">=", operator.ge),
    "lt": _compare("<", operator.lt),
    "lte": _compare("<=", operator.le),
}


def check_env_item(item: Any, final_env: Any) -> Check:
    """The check entry of one expected_env_check item `{"path": [...], "<op>": value}`."""
    if not isinstance(item, dict):
        return check_entry("env:?", (False, f"an env check must be an object, got {show_json(item)}"))
    path = item.get("path")
    if not isinstance(path, list):
        path = [path]
    ops = [key for key in item if key != "path"]
    label = ".".join(str(key) for key in path)
    if len(ops) != 1 or ops[0] not in ENV_OPS:
        name = f"env:{label}:{ops[0] if len(ops) == 1 else '?'}"
        return check_entry(name, (False, f"needs exactly one op of {sorted(ENV_OPS)}, got {ops}"))
    op = ops[0]
    found, actual = get_path(final_env, path)
    try:
        passed, detail = ENV_OPS[op](found, actual, item[op])
    except RegexTimeout as exc:
        passed, detail = False, str(exc)
    return check_entry(f"env:{label}:{op}", (passed, f"{label}: {detail}"))


def _path_label(path: list[Any]) -> str:
    return ".".join(str(key) for key in path) or "<root>"


def check_expected_env(expected_env: Any, final_env: Any) -> Check:
    """The `expected_env` check entry: the final env must JSON-equal expected_env."""
    if json_equal(expected_env, final_env):
        return check_entry("expected_env", (True, "final env equals expected_env"))
    # diff_env also reports 1 -> 1.0, which JSON equality accepts, so those entries are dropped.
    changes = [
        e for e in diff_env(expected_env, final_env)
        if not ("old" in e and "new" in e and json_equal(e["old"], e["new"]))
    ]
    lines = []
    for entry in changes[:_DIFF_PATHS_SHOWN]:
        want = show_json(entry["old"], 80) if "old" in entry else "absent"
        got = show_json(entry["new"], 80) if "new" in entry else "absent"
        lines.append(f"{_path_label(entry['path'])}: expected {want}, found {got}")
    more = f" (and {len(changes) - _DIFF_PATHS_SHOWN} more)" if len(changes) > _DIFF_PATHS_SHOWN else ""
    detail = f"final env differs from expected_env at {len(changes)} path(s): {'; '.join(lines)}{more}"
    return check_entry("expected_env", (False, detail))


def env_checks(case: Case, trace: Trace, final_env: Any, expected_env: Any) -> list[Check]:
    """One entry per `expected_env_check` item."""
    items = case.get("expected_env_check")
    if items is None:
        return []
    return [check_env_item(item, final_env) for item in (items if isinstance(items, list) else [items])]


def expected_env_checks(case: Case, trace: Trace, final_env: Any, expected_env: Any) -> list[Check]:
    """The `expected_env` entry, when the case has an expected env (score/gold.py checks a replay's)."""
    return [] if expected_env is None else [check_expected_env(expected_env, final_env)]


def is_env_check(check: Check) -> bool:
    """True for the entries the two functions above make (`env:<path>:<op>`, `expected_env`, `expected_env[turn t]`)."""
    name = check.get("name") or ""
    return name == "expected_env" or name.startswith(("env:", "expected_env[turn "))


def with_env_checks(checks: list[Check], kept: list[Check]) -> list[Check]:
    """`checks` with its env entries replaced by the env entries of `kept`, in their place (after the trajectory)."""
    rest = [c for c in checks if not is_env_check(c)]
    at = sum(1 for c in rest if c.get("name") == "trajectory")
    return rest[:at] + [c for c in kept if is_env_check(c)] + rest[at:]
