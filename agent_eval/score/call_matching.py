"""Pairing expected calls with actual calls one to one, iteratively and in bounded memory.

Two questions share this room: the trajectory checks' maximum matching (an expected call pairs with a
step it matches whole) and param_accuracy's assignment that matches the most fields (docs/metrics.md). Both
are exact. Calls with equal args are grouped into classes first (20,000 identical calls are one class
of 20,000), a field's matches are found through an index of the actual values rather than by trying
every pair, and the pairing is a min-cost flow over the classes (`flow.py`): no recursion, no
expected x actual matrix.
"""
from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agent_eval.records import Step
from agent_eval.score.flow import ClassGraph
from agent_eval.score.matchers import RegexTimeout, is_ignore, is_literal, match_value

_ABSENT = ("absent",)


def canonical(value: Any) -> Hashable | None:
    """A hashable key equal for JSON-equal values (1 == 1.0, True != 1, key order ignored), or None for a
    value that has none (an object JSON cannot hold, or one nested too deep to walk)."""
    try:
        return _canonical(value)
    except (RecursionError, _NoKey):
        return None


class _NoKey(Exception):
    pass


def _canonical(value: Any) -> Hashable:
    if value is None:
        return ("z",)
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", value)  # 1 and 1.0 hash and compare equal, as json_equal has them
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise _NoKey
        return ("d", tuple(sorted((k, _canonical(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return ("l", tuple(_canonical(v) for v in value))
    raise _NoKey


@dataclass
class _Values:
    """The distinct values of one top-level key among a name's actual classes."""

    keyed: dict[Hashable, tuple[Any, list[int]]] = field(default_factory=dict)  # key -> (a value, classes)
    odd: list[tuple[Any, int]] = field(default_factory=list)  # (value, class) without a canonical key


@dataclass
class _Side:
    """One side's calls of one name, grouped into classes of identical args."""

    members: list[list[int]] = field(default_factory=list)  # class -> the call indices in it
    args: list[Any] = field(default_factory=list)  # class -> one of its calls' args

    def add(self, index: int, args: Any, by_key: dict[Hashable, int], key: Hashable | None) -> None:
        found = by_key.get(key) if key is not None else None
        if found is None:
            found = len(self.members)
            self.members.append([])
            self.args.append(args)
            if key is not None:
                by_key[key] = found
        self.members[found].append(index)


def _fields(args: Any) -> list[tuple[str, Any]]:
    return [(k, v) for k, v in args.items() if not is_ignore(v)] if isinstance(args, dict) else []


def _group_actual(calls: list[tuple[int, Any]], keys: list[str]) -> tuple[_Side, dict[str, _Values]]:
    """Actual calls grouped by their args restricted to `keys` (all the expected side can look at)."""
    side, by_key = _Side(), dict[Hashable, int]()
    for index, args in calls:
        key: Hashable | None
        if isinstance(args, dict):
            parts: list[Hashable] | None = []
            for k in keys:
                part = canonical(args[k]) if k in args else _ABSENT
                if part is None:
                    parts = None
                    break
                parts.append(part)  # type: ignore[union-attr]
            key = ("d", tuple(parts)) if parts is not None else None
        else:
            key = ("other",)  # not a dict: it matches no field, so all such calls are alike
        side.add(index, args, by_key, key)
    values: dict[str, _Values] = {k: _Values() for k in keys}
    for cls, args in enumerate(side.args):
        if not isinstance(args, dict):
            continue
        for k in keys:
            if k not in args:
                continue
            ck = canonical(args[k])
            if ck is None:
                values[k].odd.append((args[k], cls))
            else:
                values[k].keyed.setdefault(ck, (args[k], []))[1].append(cls)
    return side, values


def _field_matches(name: str, expected: Any, values: _Values, strict: bool,
                   memo: dict[tuple[str, Any], Any]) -> np.ndarray:
    """The actual classes whose value of key `name` matches `expected` (a literal or a matcher)."""
    memo_key = (name, canonical(expected))
    if memo_key[1] is not None and memo_key in memo:
        return memo[memo_key]
    found: list[int] = []
    if memo_key[1] is not None and is_literal(expected):
        hit = values.keyed.get(memo_key[1])
        if hit is not None:
            found.extend(hit[1])
        candidates = values.odd
    else:
        candidates = [(value, cls) for value, classes in values.keyed.values() for cls in classes] + values.odd
    for value, cls in candidates:
        try:
            if match_value(expected, value):
                found.append(cls)
        except RegexTimeout:
            if strict:
                raise
    matched = np.asarray(found, dtype=np.int64)
    if memo_key[1] is not None:
        memo[memo_key] = matched
    return matched


def _pairings(expected: list[dict[str, Any]], steps: list[Step], whole: bool) -> tuple[list[int | None], int]:
    """(the step paired with each expected call or None, the total weight) of the best pairing.

    whole: an edge is a whole match of the call (the trajectory checks: weight 1 each, a RegexTimeout
    raises); else an edge weighs the fields matched (param_accuracy: an expected call without fields
    stays out, and a timed-out regex matches nothing)."""
    pairing: list[int | None] = [None] * len(expected)
    by_name: dict[Any, tuple[list[int], list[tuple[int, Any]]]] = {}
    for i, call in enumerate(expected):
        by_name.setdefault(_name_key(call.get("name")), ([], []))[0].append(i)
    for j, step in enumerate(steps):
        entry = by_name.get(_name_key(step.get("name")))
        if entry is not None:
            entry[1].append((j, step.get("args")))
    total = 0
    for exp_ids, act_calls in by_name.values():
        if not act_calls:
            continue
        total += _pair_one_name(expected, exp_ids, act_calls, whole, pairing)
    return pairing, total


def _name_key(name: Any) -> Hashable:
    return name if isinstance(name, str) or name is None else ("other", repr(name))


def _pair_one_name(expected: list[dict[str, Any]], exp_ids: list[int], act_calls: list[tuple[int, Any]], whole: bool,
                   pairing: list[int | None]) -> int:
    keys = sorted({k for i in exp_ids for k, _ in _fields(expected[i].get("args"))})
    actual, values = _group_actual(act_calls, keys)
    wanted, by_key = _Side(), dict[Hashable, int]()
    for i in exp_ids:
        fields = _fields(expected[i].get("args"))
        if not whole and not fields:
            continue  # no field: it adds nothing to param_accuracy either way
        ck = canonical(dict(fields))
        wanted.add(i, fields, by_key, ("e", ck) if ck is not None else None)
    memo: dict[tuple[str, Any], Any] = {}
    rows: list[tuple[np.ndarray, np.ndarray]] = []  # left class -> (right classes, fields matched)
    n_right = len(actual.members)
    for fields in wanted.args:
        postings = [_field_matches(name, value, values[name], whole, memo) for name, value in fields]
        classes, counts = np.unique(np.concatenate(postings), return_counts=True) if postings else (_NONE, _NONE)
        if whole:  # a whole match only; no field at all matches every call of the name
            classes = np.arange(n_right, dtype=np.int64) if not fields else classes[counts == len(fields)]
            counts = np.ones(len(classes), dtype=np.int64)
        rows.append((classes, counts))
    left, right = [len(m) for m in wanted.members], [len(m) for m in actual.members]
    if whole:
        flows = _graph(left, right, rows).best_flow()
        for members in wanted.members + actual.members:
            members.reverse()  # pop() then takes the lowest index first: the earliest calls pair first
        for e, a, units, _w in flows:
            for _ in range(units):
                pairing[wanted.members[e].pop()] = actual.members[a].pop()
        return sum(units for _e, _a, units, _w in flows)
    return _most_fields(left, right, rows)


_NONE = np.zeros(0, dtype=np.int64)


def _graph(left: list[int], right: list[int], rows: list[tuple[np.ndarray, np.ndarray]]) -> ClassGraph:
    graph = ClassGraph(left, right)
    for e, (classes, weights) in enumerate(rows):
        for cls, weight in zip(classes.tolist(), weights.tolist(), strict=True):
            graph.add_edge(e, cls, weight)
    return graph


def _most_fields(left: list[int], right: list[int], rows: list[tuple[np.ndarray, np.ndarray]]) -> int:
    """The greatest total weight of a pairing, exactly."""
    # First the upper bound: every expected call on one of its best calls. When a maximum matching over
    # those edges alone pairs every expected call, nothing can do better.
    best = [int(counts.max()) if len(counts) else 0 for _classes, counts in rows]
    tops = [(classes[counts == best[e]], np.ones(int((counts == best[e]).sum()), dtype=np.int64))
            for e, (classes, counts) in enumerate(rows)]
    paired = [0] * len(rows)
    for e, _a, units, _w in _graph(left, right, tops).best_flow():
        paired[e] += units
    if all(paired[e] == left[e] for e, (classes, _c) in enumerate(rows) if len(classes)):
        return sum(left[e] * best[e] for e in range(len(rows)))
    # Else the whole flow, on each row's best edges up to N pairs of room (N = the expected calls): an
    # optimal pairing never needs an edge past those, since one of them is always free and weighs as much.
    need = sum(left)
    room = np.asarray(right, dtype=np.int64)
    pruned = []
    for classes, counts in rows:
        order = np.argsort(-counts, kind="stable")
        classes, counts = classes[order], counts[order]
        before = np.cumsum(room[classes]) - room[classes]  # the room of the better edges
        keep = before < need
        pruned.append((classes[keep], counts[keep]))
    return sum(units * w for _e, _a, units, w in _graph(left, right, pruned).best_flow())


def max_matching(expected: list[dict[str, Any]], steps: list[Step]) -> list[int | None]:
    """For each expected call, the index of its step in a maximum one-to-one matching of whole matches
    (match_call), or None. A regex that outruns its limit raises RegexTimeout."""
    pairing, _ = _pairings(expected, steps, whole=True)
    return pairing


def max_matched_fields(expected: list[dict[str, Any]], steps: list[Step]) -> int:
    """The most fields (param_accuracy's, docs/metrics.md) a one-to-one pairing of same-name calls matches."""
    return _pairings(expected, steps, whole=False)[1]
