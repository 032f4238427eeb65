from __future__ import annotations

import pytest

from agent_eval.score.call_matching import max_matching
from agent_eval.score.matchers import (
    field_names,
    is_literal,
    json_equal,
    match_args,
    match_call,
    match_value,
    matched_fields,
    validate_matcher,
)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        (True, True, True),
        (None, None, True),
        (None, 0, False),
        (None, "", False),
        ("1", 1, False),
        ({"a": 1, "b": [1, 2]}, {"b": [1.0, 2], "a": 1}, True),
        ([1, 2], [2, 1], False),
        ({"a": 1}, {"a": 1, "b": None}, False),
        ({"a": True}, {"a": 1}, False),
        ([[1]], [[1.0]], True),
    ],
)
def test_json_equal(a, b, equal):
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal


def test_match_value_literals_and_nested_literal_dict_exact():
    assert match_value(1, 1.0)
    assert not match_value(1, True)
    assert match_value({"a": {"b": 1}}, {"a": {"b": 1.0}})
    # below the top level a literal dict must have the same key set
    assert not match_value({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}})
    assert not match_value({"a": {"b": 1}}, {"a": {}})
    assert not match_value([1, 2], [1, 2, 3])


def test_regex_is_a_full_match_on_strings_only():
    m = {"$regex": "ORD_[0-9]+"}
    assert match_value(m, "ORD_12")
    assert not match_value(m, "xORD_12")
    assert not match_value(m, "ORD_12x")
    assert not match_value(m, 12)
    assert not match_value({"$regex": "("}, "(")  # invalid pattern fails, never raises


def test_any_nested_and_inside_literals():
    m = {"$any": [1, {"$regex": "a+"}, {"k": {"$approx": 2, "$tol": 0.5}}]}
    assert match_value(m, 1.0)
    assert match_value(m, "aaa")
    assert match_value(m, {"k": 2.4})
    assert not match_value(m, {"k": 2.6})
    assert not match_value(m, True)
    assert match_value({"items": [{"id": {"$any": ["A", "B"]}}]}, {"items": [{"id": "B"}]})


def test_approx():
    assert match_value({"$approx": 10, "$tol": 0.01}, 10.005)
    assert not match_value({"$approx": 10, "$tol": 0.01}, 10.02)
    assert match_value({"$approx": 0.3}, 0.1 + 0.2)  # default tol 1e-9
    assert not match_value({"$approx": 1, "$tol": 0.5}, True)
    assert not match_value({"$approx": 1}, "1")


def test_ignore():
    assert match_value({"$ignore": True}, None)
    assert match_value({"a": {"$ignore": True}, "b": 1}, {"b": 1})


def test_match_args_top_level_rules():
    expected = {"order_id": "ORD_1", "note": {"$ignore": True}}
    assert match_args(expected, {"order_id": "ORD_1", "extra": 5})  # extra top-level keys unchecked
    assert match_args(expected, {"order_id": "ORD_1", "note": "x"})
    assert not match_args(expected, {"note": "x"})  # a non-ignore key must be present
    assert not match_args(expected, {"order_id": "ORD_2"})
    assert match_args({}, {"a": 1})
    assert match_args(None, "garbage")


def test_match_args_on_malformed_raw_string():
    assert match_args({"a": {"$ignore": True}}, '{"a": ')
    assert not match_args({"a": 1}, '{"a": 1')


def test_fields_and_matched_fields():
    expected = {"a": 1, "b": {"$regex": "x+"}, "c": {"$ignore": True}}
    assert field_names(expected) == ["a", "b"]
    assert matched_fields(expected, {"a": 1.0, "b": "y"}) == 1
    assert matched_fields(expected, {"a": 1, "b": "xx", "c": 0}) == 2
    assert matched_fields(expected, "raw") == 0
    assert field_names(None) == []


def test_is_literal():
    assert is_literal({"a": [1, {"b": "c"}]})
    assert not is_literal({"a": [1, {"b": {"$regex": "c"}}]})
    assert not is_literal({"$ignore": True})


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({"$regex": 5}, '"$regex" must be a string'),
        ({"$regex": "("}, "not a valid regular expression"),
        ({"$approx": "x"}, '"$approx" must be a number'),
        ({"$approx": 1, "$tol": -1}, '"$tol"'),
        ({"$any": "x"}, '"$any" must be'),
        ({"$ignore": False}, '"$ignore" must be true'),
        ({"$foo": 1}, "'$foo' is not a matcher"),
        ({"$regex": "a", "x": 1}, "'$regex' is not a matcher"),
        ({"a": [{"b": {"$any": [{"$regex": 1}]}}]}, "at a.0.b.$any.0"),
    ],
)
def test_validate_matcher_errors(value, fragment):
    message = validate_matcher(value)
    assert message is not None and fragment in message


def test_validate_matcher_ok():
    assert validate_matcher({"a": {"$any": [1, {"$regex": "x"}]}, "b": {"$approx": 1, "$tol": 0.1}}) is None
    assert validate_matcher([1, "two", None]) is None


def test_match_call_and_maximum_matching_beats_greedy():
    expected = [{"name": "a", "args": {}}, {"name": "a", "args": {"x": 1}}]
    steps = [{"name": "a", "args": {"x": 1}}, {"name": "a", "args": {"x": 2}}]
    assert match_call(expected[1], steps[0]) and not match_call(expected[1], steps[1])
    # greedy would give steps[0] to expected[0] and leave expected[1] uncovered
    assert max_matching(expected, steps) == [1, 0]
