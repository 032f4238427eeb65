from __future__ import annotations

import pytest

from agent_eval.score.checks import check_run, check_trajectory
from agent_eval.score.expect import EXPECT_CHECKS, EXPECT_KEYS
from agent_eval.score.env_checks import ENV_OPS, check_env_item, check_expected_env


def step(name, args=None, error=None, i=0):
    return {"step": i, "name": name, "args": {} if args is None else args, "output": None if error else "ok",
            "error": error, "invalid_args": None, "latency_s": 0.0, "t_start_s": 0.0}


def trace(steps=(), answer="", cards=(), final_agent=None):
    return {"steps": [step(n, a, i=i) if isinstance(n, str) else n for i, (n, a) in enumerate(steps)],
            "final_answer": answer, "cards": list(cards), "final_agent": final_agent}


def call(name, args=None):
    return {"name": name, "args": args} if args is not None else {"name": name}


# ---------------------------------------------------------------- trajectory


@pytest.mark.parametrize("mode", ["unordered", "superset"])
def test_cover_modes_pass_with_extras_in_any_order(mode):
    expected = [call("lookup", {"id": "A"}), call("refund", {"id": "A"})]
    steps = trace([("refund", {"id": "A", "why": "x"}), ("noise", {}), ("lookup", {"id": "A"})])["steps"]
    result = check_trajectory(mode, expected, steps)
    assert result["name"] == "trajectory" and result["passed"], result["detail"]


@pytest.mark.parametrize("mode", ["unordered", "superset"])
def test_cover_modes_need_one_call_per_expected_call(mode):
    expected = [call("lookup", {"id": "A"}), call("lookup", {"id": "A"})]
    steps = trace([("lookup", {"id": "A"}), ("lookup", {"id": "B"})])["steps"]
    result = check_trajectory(mode, expected, steps)
    assert not result["passed"]
    assert 'lookup({"id":"A"})' in result["detail"] and '{"id":"B"}' in result["detail"]
    assert "[lookup, lookup]" in result["detail"]


def test_maximum_matching_succeeds_where_greedy_fails():
    expected = [call("a", {}), call("a", {"x": 1})]
    steps = trace([("a", {"x": 1}), ("a", {"x": 2})])["steps"]
    assert check_trajectory("unordered", expected, steps)["passed"]
    assert check_trajectory("subset", expected, steps)["passed"]


def test_strict():
    expected = [call("a", {"x": 1}), call("b")]
    assert check_trajectory("strict", expected, trace([("a", {"x": 1.0}), ("b", {"y": 2})])["steps"])["passed"]
    swapped = check_trajectory("strict", expected, trace([("b", {}), ("a", {"x": 1})])["steps"])
    assert not swapped["passed"] and "step 0" in swapped["detail"]
    longer = check_trajectory("strict", expected, trace([("a", {"x": 1}), ("b", {}), ("b", {})])["steps"])
    assert not longer["passed"] and "expected 2 calls" in longer["detail"] and "got 3" in longer["detail"]


def test_subset():
    expected = [call("a"), call("b")]
    assert check_trajectory("subset", expected, trace([("b", {})])["steps"])["passed"]
    assert check_trajectory("subset", expected, [])["passed"]
    extra = check_trajectory("subset", expected, trace([("a", {}), ("c", {"z": 1})])["steps"])
    assert not extra["passed"] and "step 1 c" in extra["detail"]
    twice = check_trajectory("subset", expected, trace([("a", {}), ("a", {})])["steps"])
    assert not twice["passed"]


def test_errored_and_malformed_calls_count_as_calls():
    steps = [step("a", error="ValueError: boom"), step("b", '{"x": ', i=1)]
    assert check_trajectory("strict", [call("a"), call("b")], steps)["passed"]
    assert not check_trajectory("strict", [call("a"), call("b", {"x": 1})], steps)["passed"]


def test_unknown_mode_fails_without_crashing():
    assert not check_trajectory("sideways", [], [])["passed"]


# ---------------------------------------------------------------- environment

ENV = {"orders": {"ORD_1": {"status": "shipped", "total": 10, "tags": ["gift"], "paid": True}},
       "note": "refund issued"}


@pytest.mark.parametrize(
    ("item", "passed"),
    [
        ({"path": ["orders", "ORD_1", "status"], "equals": "shipped"}, True),
        ({"path": ["orders", "ORD_1", "status"], "equals": "pending"}, False),
        ({"path": ["orders", "ORD_1", "total"], "equals": 10.0}, True),
        ({"path": ["orders", "ORD_1", "paid"], "equals": 1}, False),
        ({"path": ["orders", "ORD_1", "status"], "not_equals": "pending"}, True),
        ({"path": ["orders", "ORD_1", "status"], "not_equals": "shipped"}, False),
        ({"path": ["orders", "ORD_1"], "exists": True}, True),
        ({"path": ["orders", "ORD_2"], "exists": True}, False),
        ({"path": ["orders", "ORD_2"], "exists": False}, True),
        ({"path": ["orders", "ORD_1"], "exists": False}, False),
        ({"path": ["note"], "contains": "refund"}, True),
        ({"path": ["note"], "contains": "Refund"}, False),
        ({"path": ["orders", "ORD_1", "tags"], "contains": "gift"}, True),
        ({"path": ["orders", "ORD_1", "tags"], "contains": "rush"}, False),
        ({"path": ["orders"], "contains": "ORD_1"}, True),
        ({"path": ["orders", "ORD_1", "total"], "contains": 1}, False),
        ({"path": ["orders", "ORD_1", "status"], "in": ["shipped", "delivered"]}, True),
        ({"path": ["orders", "ORD_1", "status"], "in": ["pending"]}, False),
        ({"path": ["orders", "ORD_1", "total"], "gt": 9.5}, True),
        ({"path": ["orders", "ORD_1", "total"], "gt": 10}, False),
        ({"path": ["orders", "ORD_1", "total"], "gte": 10}, True),
        ({"path": ["orders", "ORD_1", "total"], "lt": 10}, False),
        ({"path": ["orders", "ORD_1", "total"], "lte": 10}, True),
        ({"path": ["orders", "ORD_1", "tags", 0], "equals": "gift"}, True),
    ],
)
def test_env_ops(item, passed):
    result = check_env_item(item, ENV)
    assert result["passed"] is passed, result["detail"]


@pytest.mark.parametrize("op", sorted(set(ENV_OPS) - {"exists"}))
def test_every_op_but_exists_fails_on_missing_path(op):
    result = check_env_item({"path": ["orders", "NOPE", "status"], op: 1}, ENV)
    assert not result["passed"] and "path not found" in result["detail"]
    assert result["name"] == f"env:orders.NOPE.status:{op}"


@pytest.mark.parametrize("op", ["gt", "gte", "lt", "lte"])
def test_comparisons_on_non_numbers_fail_clearly(op):
    on_string = check_env_item({"path": ["note"], op: 3}, ENV)
    assert not on_string["passed"] and "non-number" in on_string["detail"]
    on_bool = check_env_item({"path": ["orders", "ORD_1", "paid"], op: 0}, ENV)
    assert not on_bool["passed"]
    bad_operand = check_env_item({"path": ["orders", "ORD_1", "total"], op: "5"}, ENV)
    assert not bad_operand["passed"] and "needs a number" in bad_operand["detail"]


def test_env_failure_detail_and_malformed_items():
    result = check_env_item({"path": ["orders", "ORD_1", "status"], "equals": "pending"}, ENV)
    assert result["name"] == "env:orders.ORD_1.status:equals"
    assert '"pending"' in result["detail"] and '"shipped"' in result["detail"]
    assert not check_env_item({"path": ["note"]}, ENV)["passed"]
    assert not check_env_item({"path": ["note"], "equals": 1, "gt": 0}, ENV)["passed"]
    assert not check_env_item({"path": ["note"], "matches": 1}, ENV)["passed"]
    assert not check_env_item("nonsense", ENV)["passed"]


def test_expected_env():
    assert check_expected_env({"a": 1, "b": [1]}, {"b": [1.0], "a": 1.0})["passed"]
    result = check_expected_env({"a": 1, "b": {"c": 2}, "gone": 1}, {"a": True, "b": {"c": 3}, "new": 0})
    assert result["name"] == "expected_env" and not result["passed"]
    detail = result["detail"]
    assert "4 path(s)" in detail and "b.c: expected 2, found 3" in detail
    assert "gone: expected 1, found absent" in detail and "new: expected absent, found 0" in detail


def test_expected_env_detail_is_capped():
    result = check_expected_env({f"k{i}": i for i in range(8)}, {})
    assert "8 path(s)" in result["detail"] and "(and 3 more)" in result["detail"]


# ---------------------------------------------------------------- expect


def run_expect(key, value, **trace_fields):
    return EXPECT_CHECKS[key](value, trace(**trace_fields), {})


@pytest.mark.parametrize(
    ("key", "value", "fields", "passed"),
    [
        ("contains", "Refund", {"answer": "Refund issued"}, True),
        ("contains", "refund", {"answer": "Refund issued"}, False),
        ("contains", ["Refund", "issued"], {"answer": "Refund issued"}, True),
        ("contains", ["Refund", "denied"], {"answer": "Refund issued"}, False),
        ("contains", "x", {"answer": None}, False),
        ("not_contains", "sorry", {"answer": "Refund issued"}, True),
        ("not_contains", "issued", {"answer": "Refund issued"}, False),
        ("not_contains", ["sorry", "issued"], {"answer": "Refund issued"}, False),
        ("not_contains", ["sorry", "oops"], {"answer": "Refund issued"}, True),
        ("icontains", "REFUND", {"answer": "Refund issued"}, True),
        ("icontains", ["refund", "DENIED"], {"answer": "Refund issued"}, False),
        ("not_icontains", "ISSUED", {"answer": "Refund issued"}, False),
        ("not_icontains", ["sorry", "OOPS"], {"answer": "Refund issued"}, True),
        ("regex", r"ORD_\d+", {"answer": "see ORD_12 now"}, True),
        ("regex", [r"ORD_\d+", r"^see"], {"answer": "see ORD_12"}, True),
        ("regex", [r"ORD_\d+", r"^now"], {"answer": "see ORD_12"}, False),
        ("regex", "(", {"answer": "("}, False),
        ("has_card", "order", {"cards": [{"type": "order"}]}, True),
        ("has_card", ["order", "refund"], {"cards": [{"type": "order"}]}, False),
        ("any_card", "refund", {"cards": [{"type": "order"}]}, False),
        ("any_card", ["refund", "order"], {"cards": [{"type": "order"}]}, True),
        ("no_card", "refund", {"cards": [{"type": "order"}]}, True),
        ("no_card", ["refund", "order"], {"cards": [{"type": "order"}]}, False),
        ("final_agent", "billing", {"final_agent": "billing"}, True),
        ("final_agent", "billing", {"final_agent": "triage"}, False),
        ("final_agent", ["billing", "triage"], {"final_agent": "triage"}, True),
        ("forbidden_tools", "delete_user", {"steps": [("get_user", {})]}, True),
        ("forbidden_tools", ["x", "delete_user"], {"steps": [("delete_user", {})]}, False),
        ("max_tool_calls", 2, {"steps": [("a", {}), ("b", {})]}, True),
        ("max_tool_calls", 1, {"steps": [("a", {}), ("b", {})]}, False),
        ("max_tool_calls", [3, 1], {"steps": [("a", {}), ("b", {})]}, False),
    ],
)
def test_expect_checks(key, value, fields, passed):
    result = run_expect(key, value, **fields)
    assert result[0] is passed, result[1]


def test_forbidden_tools_counts_errored_attempts():
    t = trace()
    t["steps"] = [step("delete_user", error="Fault: 503", i=0)]
    passed, detail = EXPECT_CHECKS["forbidden_tools"]("delete_user", t, {})
    assert not passed and "step 0 delete_user" in detail


def test_expect_failure_details_explain_themselves():
    passed, detail = run_expect("contains", ["Refund", "denied"], answer="Refund issued")
    assert not passed and '"denied"' in detail and "Refund issued" in detail
    passed, detail = run_expect("has_card", "refund", cards=[{"type": "order"}])
    assert '"refund"' in detail and '"order"' in detail


def test_expect_keys_cover_the_table():
    assert set(EXPECT_KEYS) == {"contains", "not_contains", "icontains", "not_icontains", "regex", "has_card",
                                "any_card", "no_card", "final_agent", "forbidden_tools", "max_tool_calls",
                                "grounded"}


# ---------------------------------------------------------------- check_run


def test_check_run_order_and_names():
    case = {
        "id": "c1",
        "trajectory": "unordered",
        "expected_tools": [call("refund", {"id": "O1"})],
        "expected_env_check": [{"path": ["orders", "O1", "status"], "equals": "refunded"},
                               {"path": ["orders", "O1", "total"], "gt": 5}],
        "expect": {"contains": "refunded", "unknown_key": 1, "max_tool_calls": 1},
    }
    env = {"orders": {"O1": {"status": "refunded", "total": 3}}}
    t = trace([("refund", {"id": "O1"})], answer="Order refunded")
    checks = check_run(case, t, env, {"orders": {"O1": {"status": "refunded", "total": 3}}})
    assert [c["name"] for c in checks] == [
        "trajectory", "env:orders.O1.status:equals", "env:orders.O1.total:gt", "expected_env",
        "expect:contains", "expect:max_tool_calls",
    ]
    assert [c["passed"] for c in checks] == [True, True, False, True, True, True]
    assert all(set(c) == {"name", "passed", "detail"} and isinstance(c["detail"], str) for c in checks)


def test_check_run_without_checks_and_without_trajectory_mode():
    case = {"id": "c", "expected_tools": [call("a")]}  # expected_tools alone only measures
    assert check_run(case, trace(), {}, None) == []


# ---------------------------------------------------------------- a family added as one row


def test_a_family_appended_to_check_families_reads_its_own_case_field(tmp_path):
    import orjson

    from agent_eval.errors import CaseFileError
    from agent_eval.score.checks import CHECK_FAMILIES, CheckFamily
    from agent_eval.suite.cases import load_suite

    def short_answer(case, t, final_env, expected_env):
        words = len((t.get("final_answer") or "").split())
        return [{"name": "max_words", "passed": words <= case["max_words"], "detail": f"{words} words"}]

    def validate(case):
        return [] if isinstance(case["max_words"], int) and case["max_words"] >= 1 else [("max_words", "must be >= 1")]

    path = tmp_path / "cases.json"
    one = {"suite": {"tools": []}, "cases": [{"id": "c1", "query": "q", "max_words": 2}]}
    path.write_bytes(orjson.dumps(one))
    with pytest.raises(CaseFileError) as err:  # without the row: the case has no check
        load_suite(path)
    assert "the case has no check" in str(err.value)
    CHECK_FAMILIES.append(CheckFamily("max_words", ("max_words",), short_answer, validate=validate))
    try:
        suite = load_suite(path)  # its only check is the new family's: valid, and the field is not "only kept"
        assert suite.warnings == []
        assert check_run(suite.cases[0], trace(answer="two words"), {}, None) == [
            {"name": "max_words", "passed": True, "detail": "2 words"}]
        one["cases"][0]["max_words"] = 0
        path.write_bytes(orjson.dumps(one))
        with pytest.raises(CaseFileError) as err:
            load_suite(path)
        assert [(p.case_id, p.field) for p in err.value.problems] == [("c1", "max_words")]
    finally:
        CHECK_FAMILIES.pop()
