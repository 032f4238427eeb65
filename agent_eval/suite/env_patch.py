"""A case's `initial_env` over the suite's: a JSON Merge Patch (RFC 7386), with one way to replace an object.

- An object merges by key, recursively; any other value (a list, a string, a number) replaces.
- A `null` value removes the key (in the case's patch only: in the suite's own environment, null is a value).
- `{"$replace": V}` as a value sets that key to V as it is, where merging would have mixed the two objects
  (or dropped V's nulls).
- A data key literally named `$replace` is written `$$replace` (and `$$replace` as `$$$replace`): one `$`
  is taken off a key of two or more `$` before `replace`.
"""
from __future__ import annotations

import re
from typing import Any

REPLACE = "$replace"
_ESCAPED = re.compile(r"\${2,}replace")


def _data_key(key: str) -> str:
    """The key a patch key stands for: `$$replace` -> `$replace`; any other key as it is."""
    return key[1:] if _ESCAPED.fullmatch(key) else key


def _is_replace(value: Any) -> bool:
    return isinstance(value, dict) and REPLACE in value


def merge_patch(target: Any, patch: Any) -> Any:
    """`patch` applied to `target` (neither is changed; the result shares no object of `patch`'s)."""
    if not isinstance(patch, dict):
        return patch
    if _is_replace(patch):
        return patch[REPLACE]
    merged = dict(target) if isinstance(target, dict) else {}
    for raw_key, value in patch.items():
        key = _data_key(raw_key)
        if value is None:
            merged.pop(key, None)
        elif _is_replace(value):
            merged[key] = value[REPLACE]
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def patch_problems(patch: Any, path: str = "initial_env") -> list[tuple[str, str]]:
    """(field, message) for each `$replace` object that holds other keys too (ambiguous: is it data or an
    instruction?), and a whole-env `$replace` whose value is not an object."""
    problems: list[tuple[str, str]] = []
    if not isinstance(patch, dict):
        return problems
    if _is_replace(patch):
        if len(patch) > 1:
            others = ", ".join(sorted(k for k in patch if k != REPLACE))
            problems.append((path, f'an object with "$replace" holds nothing else (found {others}); to keep a '
                                   'data key named $replace, write it "$$replace"'))
        elif path == "initial_env" and not isinstance(patch[REPLACE], dict):
            problems.append((path, '"$replace" of the whole initial_env must be an object'))
        return problems
    for key, value in patch.items():
        problems.extend(patch_problems(value, f"{path}.{key}"))
    return problems
