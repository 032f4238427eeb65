"""The environment's diffs (`{"path", "old", "new"}`): what a run changed, applying a diff, and paths into an env."""
from __future__ import annotations

import copy
from itertools import compress, repeat
from operator import ne
from typing import Any

import orjson


_MISSING = object()
_DUMP_OPTIONS = orjson.OPT_NON_STR_KEYS


def show_json(value: Any, limit: int = 200) -> str:
    """value as compact JSON cut to limit characters, for a check's detail."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_identical(old: Any, new: Any) -> bool:
    """True when old and new are equal *and* of the same JSON types all the way down."""
    if type(old) is not type(new):
        return False
    if old is new:
        return True
    if not isinstance(old, (dict, list)):
        return old == new
    # `==` is C-speed but says True == 1 and 1 == 1.0 at any depth; equal dumps tell those apart. When
    # the dumps differ only by key order, returning False just makes the caller recurse and find nothing.
    if old != new:
        return False
    try:
        return orjson.dumps(old, option=_DUMP_OPTIONS) == orjson.dumps(new, option=_DUMP_OPTIONS)
    except (TypeError, orjson.JSONEncodeError):
        return False


def _diff(old: Any, new: Any, path: list[Any], out: list[dict[str, Any]]) -> None:
    if _is_identical(old, new):
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key, value in old.items():
            other = new.get(key, _MISSING)
            if other is _MISSING:
                out.append({"path": path + [key], "old": value})
            else:
                _diff(value, other, path + [key], out)
        for key, value in new.items():
            if key not in old:
                out.append({"path": path + [key], "new": value})
        return
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            _diff(a, b, path + [index], out)
        return
    out.append({"path": path, "old": old, "new": new})


def diff_env(old: Any, new: Any) -> list[dict[str, Any]]:
    """The changes from old to new: `old` absent means added, `new` absent means removed."""
    out: list[dict[str, Any]] = []
    _diff(old, new, [], out)
    return out


def _loose_diff(old: Any, new: Any, path: list[Any], out: list[dict[str, Any]]) -> None:
    """The walk of diff_env_fast: changed keys and items are found by `!=` in C, so only the paths that
    changed run Python code. `!=` cannot see True vs 1 or 1 vs 1.0; diff_env_fast verifies the result."""
    if type(old) is not type(new) or not isinstance(old, (dict, list)):
        out.append({"path": path, "old": old, "new": new})
    elif isinstance(old, dict):
        for key in compress(old, map(ne, old.values(), map(new.get, old, repeat(_MISSING)))):
            other = new.get(key, _MISSING)
            if other is _MISSING:
                out.append({"path": path + [key], "old": old[key]})
            else:
                _loose_diff(old[key], other, path + [key], out)
        if new.keys() != old.keys():
            out.extend({"path": path + [key], "new": new[key]} for key in new if key not in old)
    elif len(old) == len(new):
        for index in compress(range(len(old)), map(ne, old, new)):
            _loose_diff(old[index], new[index], path + [index], out)
    else:
        out.append({"path": path, "old": old, "new": new})


def diff_env_fast(old: Any, old_bytes: bytes, new: Any) -> list[dict[str, Any]]:
    """diff_env(old, new) for a JSON env whose serialisation is old_bytes, without dumping every subtree.

    Equal subtrees are skipped by `==`; the result is then verified by applying it to old and comparing
    bytes, and only a swap that `==` cannot see (True vs 1, a reordered key) falls back to the strict walk.
    """
    try:
        new_bytes = orjson.dumps(new)
    except TypeError:  # a tool stored a value JSON cannot hold
        return diff_env(old, new)
    if new_bytes == old_bytes:
        return []
    out: list[dict[str, Any]] = []
    _loose_diff(old, new, [], out)
    try:
        if orjson.dumps(apply_diff(old, out)) == new_bytes:
            return out
    except TypeError:
        pass
    return diff_env(old, new)


def _fresh(value: Any) -> Any:
    return copy.deepcopy(value) if isinstance(value, (dict, list)) else value


def apply_diff(env: Any, diff: list[dict[str, Any]]) -> Any:
    """A new env: env with diff applied (apply_diff(a, diff_env(a, b)) == b); env itself is not mutated."""
    root = env
    # Containers on a changed path are copied once; the ids of those copies mark them as ours.
    owned: set[int] = set()

    def own(value: Any) -> Any:
        if id(value) in owned or not isinstance(value, (dict, list)):
            return value
        clone = value.copy()
        owned.add(id(clone))
        return clone

    for entry in diff:
        path = entry["path"]
        if not path:
            root = _fresh(entry["new"]) if "new" in entry else None
            continue
        root = own(root)
        parent = root
        for key in path[:-1]:
            child = own(parent[key])
            parent[key] = child
            parent = child
        last = path[-1]
        if "new" in entry:
            if isinstance(parent, list) and last == len(parent):
                parent.append(_fresh(entry["new"]))
            else:
                parent[last] = _fresh(entry["new"])
        else:
            del parent[last]
    return root


def get_path(env: Any, path: list[Any]) -> tuple[bool, Any]:
    """(True, value) at path (keys into dicts, indices into lists), or (False, None) when it is missing."""
    value = env
    for key in path:
        if isinstance(value, dict):
            try:
                found = value.get(key, _MISSING)
            except TypeError:  # an unhashable key in a user's path
                return False, None
            if found is _MISSING:
                return False, None
            value = found
        elif isinstance(value, list):
            if isinstance(key, str) and key.isdigit():
                key = int(key)
            if not isinstance(key, int) or isinstance(key, bool) or not 0 <= key < len(value):
                return False, None
            value = value[key]
        else:
            return False, None
    return True, value
