"""A tool schema's `$ref`s: local, resolvable, and never a loop that checks the same value forever.

A `$ref` cycle is fine when it passes through a keyword that steps into the value (a property, an item):
that is a recursive type such as a tree, and checking it ends with the value. A cycle made only of
`$ref`s and in-place keywords (`allOf`, `not`, `if`, ...) makes every argument check recurse until it
raises, so it is refused when the suite is loaded. The walk is iterative: any depth is safe.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import unquote

# Keywords whose subschemas apply to a part of the value (a property, an item, a key).
_INTO_NAMES = {"properties", "patternProperties"}
_INTO = {"items", "prefixItems", "additionalProperties", "additionalItems", "contains", "propertyNames",
         "unevaluatedItems", "unevaluatedProperties"}
# Keywords whose subschemas apply to the value itself.
_IN_PLACE_NAMES = {"dependentSchemas", "dependencies"}
_IN_PLACE = {"allOf", "anyOf", "oneOf", "not", "if", "then", "else"}
# Name maps of subschemas that apply only where a `$ref` points.
_DEFS = {"$defs", "definitions"}
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")

Path = tuple[str, ...]


def ref_problem(schema: Any) -> str | None:
    """Why the schema's `$ref`s cannot be checked safely (remote, unresolvable, an endless loop), or None."""
    nodes: dict[Path, Any] = {}
    edges: dict[Path, list[Path]] = {}  # in-place steps only: a `$ref`, or a keyword on the same value
    refs: list[tuple[Path, str]] = []
    anchors: dict[str, Path] = {}
    stack: list[tuple[Path, Any]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        nodes[path] = node
        if not isinstance(node, dict):
            continue
        for key in _REFS:  # a dynamic ref is followed as a plain one: a loop of either never ends
            ref = node.get(key)
            if isinstance(ref, str):
                refs.append((path, ref))
        for key in ("$anchor", "$dynamicAnchor"):
            anchor = node.get(key)
            if isinstance(anchor, str):
                anchors[anchor] = path
        for key, value in node.items():
            for child_path, child, in_place in _children(path, key, value):
                stack.append((child_path, child))
                if in_place:
                    edges.setdefault(path, []).append(child_path)
    for path, ref in refs:
        target = _resolve(ref, anchors)
        where = _pointer(path)
        if target is None and not ref.startswith("#"):
            return (f"the $ref {ref!r} at {where} is not local; only refs inside the schema "
                    "(\"#/$defs/...\") are followed")
        if target is None or target not in nodes or not isinstance(nodes[target], (dict, bool)):
            return f"the $ref {ref!r} at {where} points at nothing in the schema"
        edges.setdefault(path, []).append(target)
    loop = _find_loop(edges)
    if loop is not None:
        return (f"the $ref at {_pointer(loop)} leads back to itself without stepping into a property or an "
                "item, so checking any argument would never end; make the recursion go through "
                "\"properties\" or \"items\" (a tree type), or remove it")
    return None


def _children(path: Path, key: str, value: Any) -> list[tuple[Path, Any, bool]]:
    """The subschemas under `key` of the schema at `path`, each with whether it applies in place."""
    if key in _INTO_NAMES or key in _IN_PLACE_NAMES or key in _DEFS:
        if not isinstance(value, dict):
            return []
        in_place = key in _IN_PLACE_NAMES
        return [((*path, key, name), sub, in_place) for name, sub in value.items() if isinstance(sub, (dict, bool))]
    if key in _INTO or key in _IN_PLACE:
        in_place = key in _IN_PLACE
        if isinstance(value, list):
            return [((*path, key, str(i)), sub, in_place) for i, sub in enumerate(value)]
        return [((*path, key), value, in_place)] if isinstance(value, (dict, bool)) else []
    return []


def _resolve(ref: str, anchors: dict[str, Path]) -> Path | None:
    """The path a local `$ref` points at (it may not exist), or None for a remote or anchorless one."""
    if not ref.startswith("#"):
        return None
    fragment = unquote(ref[1:])
    if not fragment:
        return ()
    if not fragment.startswith("/"):
        return anchors.get(fragment)
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in fragment[1:].split("/"))


def _find_loop(edges: dict[Path, list[Path]]) -> Path | None:
    """A node on a cycle of the graph, found by an iterative depth-first search; None when it has none."""
    state: dict[Path, int] = {}  # 1: on the current path, 2: done
    for start in list(edges):
        if state.get(start):
            continue
        state[start] = 1
        stack = [(start, iter(edges.get(start, ())))]
        while stack:
            node, pending = stack[-1]
            step = next(pending, None)
            if step is None:
                state[node] = 2
                stack.pop()
            elif state.get(step) == 1:
                return step
            elif not state.get(step):
                state[step] = 1
                stack.append((step, iter(edges.get(step, ()))))
    return None


def _pointer(path: Path) -> str:
    return "#" + "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in path)
