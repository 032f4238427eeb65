from __future__ import annotations

import copy

import pytest

from agent_eval.score.env_checks import ENV_OPS
from agent_eval.score.envdiff import apply_diff, diff_env, get_path

PAIRS = [
    ({}, {}),
    ({"a": 1}, {"a": 1, "b": {"c": [1, 2]}}),  # key added
    ({"a": 1, "b": {"c": 2}}, {"a": 1}),  # key removed
    ({"a": [1, 2, 3]}, {"a": [1, 2]}),  # list of a different length
    ({"a": [1, {"x": 1}]}, {"a": [1, {"x": 2, "y": 3}]}),  # index-wise into a same-length list
    ({"a": 1}, {"a": True}),  # type change that == calls equal
    ({"a": {"b": [1]}}, {"a": {"b": [True]}}),  # the same, nested
    ({"a": 1}, {"a": 1.0}),
    ({"a": {"b": 1}}, {"a": [1]}),
    ({"u": {"1": {"n": "x", "tags": ["p"]}}, "v": 0}, {"u": {"1": {"n": "y", "tags": []}, "2": {}}, "v": None}),
    ([1, 2], {"a": 1}),  # root replaced
]


@pytest.mark.parametrize(("old", "new"), PAIRS)
def test_round_trip(old, new):
    old_copy = copy.deepcopy(old)
    result = apply_diff(old, diff_env(old, new))
    assert result == new
    assert repr(result) == repr(new)  # exact: types too (1 vs True vs 1.0), not just ==
    assert old == old_copy and repr(old) == repr(old_copy)  # input untouched


def test_diff_entries_shape():
    assert diff_env({"a": 1}, {"a": 1}) == []
    assert diff_env({"a": 1}, {"a": True}) == [{"path": ["a"], "old": 1, "new": True}]
    assert diff_env({"a": {"b": 1}}, {"a": {"c": 2}}) == [
        {"path": ["a", "b"], "old": 1},
        {"path": ["a", "c"], "new": 2},
    ]
    assert diff_env({"l": [1, 2]}, {"l": [1, 3]}) == [{"path": ["l", 1], "old": 2, "new": 3}]
    assert diff_env({"l": [1, 2]}, {"l": [1]}) == [{"path": ["l"], "old": [1, 2], "new": [1]}]


def test_apply_does_not_alias_the_diff_values():
    new = {"a": {"b": [1]}}
    diff = diff_env({}, new)
    result = apply_diff({}, diff)
    result["a"]["b"].append(2)
    assert new == {"a": {"b": [1]}}


def test_get_path():
    env = {"orders": {"O1": {"items": [{"sku": "X"}]}}, "flag": False}
    assert get_path(env, ["orders", "O1", "items", 0, "sku"]) == (True, "X")
    assert get_path(env, ["flag"]) == (True, False)
    assert get_path(env, ["orders", "O2"]) == (False, None)
    assert get_path(env, ["orders", "O1", "items", 5]) == (False, None)
    assert get_path(env, ["flag", "x"]) == (False, None)
    assert get_path(env, [["unhashable"]]) == (False, None)
    assert get_path(env, []) == (True, env)


def test_env_ops_table_has_every_design_op():
    assert set(ENV_OPS) == {"equals", "not_equals", "exists", "contains", "in", "gt", "gte", "lt", "lte"}
