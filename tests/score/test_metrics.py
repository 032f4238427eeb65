"""Metrics: every expected value is computed by hand from the definitions in docs/metrics.md."""

from __future__ import annotations


import pytest

from agent_eval.score import stats
from agent_eval.score.metrics import (
    SUITE_METRICS,
    case_status,
    param_accuracy,
    price_usage,
    run_metrics,
    summarize,
)


def step(name, args=None, *, error=None, invalid=None, i=0):
    return {
        "step": i,
        "name": name,
        "args": {} if args is None else args,
        "output": None if error else "ok",
        "error": error,
        "invalid_args": invalid,
        "latency_s": 0.1,
        "t_start_s": 0.0,
    }


def trace(steps=(), *, llm_calls=(), latency=1.0, ttfa=0.5, user_messages=("hi",)):
    return {
        "user_messages": list(user_messages),
        "replies": [],
        "final_answer": "",
        "cards": [],
        "final_agent": None,
        "stop_reason": "completed",
        "agent_error": None,
        "steps": list(steps),
        "llm_calls": list(llm_calls),
        "latency_s": latency,
        "ttfa_s": ttfa,
        "final_env_diff": [],
    }


def traj(expected, steps):
    case = (
        {"id": "c", "query": "q"}
        if expected is None
        else {"id": "c", "query": "q", "expected_tools": expected}
    )
    m = run_metrics(case, trace(steps), [], True, None)
    return m["tool_recall"], m["tool_precision"], m["param_accuracy"], m["step_efficiency"]


# --- per run: trajectory ---------------------------------------------------------------------


def test_all_steps_count_errors_unknown_tools_and_malformed_json():
    case = {
        "id": "c",
        "query": "q",
        "expected_tools": [
            {"name": "search", "args": {"q": "x"}},
            {"name": "get_order", "args": {"order_id": "A1"}},
        ],
    }
    steps = [
        step("search", {"q": "x"}),
        step("search", {"q": "y"}, error="RuntimeError: 503"),
        step("foo", {}, error="unknown tool: foo", invalid="unknown tool"),
        step("get_order", '{"order_id": "A1"', error="malformed JSON", invalid="malformed JSON: ..."),
    ]
    m = run_metrics(case, trace(steps), [], True, 0.25)
    # E = {search, get_order}, A = {search x2, foo, get_order}; |E ∩ A| = 2
    assert m["tool_recall"] == 1.0  # 2/2
    assert m["tool_precision"] == 0.5  # 2/4
    assert m["step_efficiency"] == 0.5  # min(1, 2/4)
    # fields: search.q, get_order.order_id = 2; search.q matched by step 0; raw string matches none: 1/2
    assert m["param_accuracy"] == 0.5
    assert m["has_loop"] is False  # search(q=x) then search(q=y): args differ
    assert m["tool_errors"] == 3  # search 503, unknown foo, malformed get_order
    assert m["recovered"] is True  # 3 > 0 and success
    assert m["invalid_calls"] == 2  # unknown tool + malformed JSON
    assert m["tool_calls"] == 4
    assert m["success"] == 1
    assert m["cost_usd"] == 0.25


def test_duplicate_calls_are_a_multiset():
    # E = [a, a], A = [a]: |E ∩ A| = 1 -> recall 1/2, precision 1/1, efficiency min(1, 2/1)
    assert traj([{"name": "a"}, {"name": "a"}], [step("a")]) == (0.5, 1.0, 1.0, 1.0)
    # E = [a], A = [a, a]: recall 1/1, precision 1/2, efficiency 1/2
    assert traj([{"name": "a"}], [step("a"), step("a", {"x": 1})]) == (1.0, 0.5, 1.0, 0.5)


def test_zero_calls_with_expected_calls():
    # A empty, E = [a(x=1)]: recall 0/1, precision 0.0, efficiency 0.0, param 0 of 1 field
    assert traj([{"name": "a", "args": {"x": 1}}], []) == (0.0, 0.0, 0.0, 0.0)


def test_both_empty_is_perfect():
    assert traj([], []) == (1.0, 1.0, 1.0, 1.0)


def test_no_expected_tools_key_gives_nulls():
    assert traj(None, [step("a")]) == (None, None, None, None)


def test_empty_expected_tools_with_calls():
    # E = [], A = [a]: recall 1.0 (E empty), precision 0/1, efficiency min(1, 0/1) = 0, no fields -> 1.0
    assert traj([], [step("a")]) == (1.0, 0.0, 1.0, 0.0)


# --- per run: param_accuracy -----------------------------------------------------------------


def test_param_accuracy_optimal_pairing_beats_greedy():
    expected = [{"name": "s", "args": {"a": 1}}, {"name": "s", "args": {"a": 1, "b": 2}}]
    steps = [step("s", {"a": 1, "b": 2}), step("s", {"a": 1, "b": 9})]
    # 3 fields. Greedy, in order: E1 takes A1 (1, first of a tie), E2 gets A2 (a only: 1) = 2/3.
    # Optimal: E1-A2 (1) + E2-A1 (2) = 3/3.
    assert param_accuracy(expected, steps) == 1.0


def test_param_accuracy_ignore_unpaired_and_other_names():
    expected = [
        {"name": "s", "args": {"q": "x", "page": {"$ignore": True}}},  # 1 field: q
        {"name": "s", "args": {"q": "y"}},  # 1 field, left unpaired: only one actual s
        {"name": "t", "args": {"n": {"$approx": 1.0, "$tol": 0.1}}},  # 1 field
    ]
    steps = [step("s", {"q": "x", "page": 3}), step("u", {"q": "y"}), step("t", {"n": 1.05})]
    # s: the single actual pairs with q=x (1); q=y unpaired (0); t: 1.05 within 0.1 of 1.0 (1) -> 2/3
    assert param_accuracy(expected, steps) == pytest.approx(2 / 3)


def test_param_accuracy_no_fields_is_one():
    assert param_accuracy([{"name": "a"}, {"name": "b", "args": {"x": {"$ignore": True}}}], []) == 1.0


def test_param_accuracy_many_calls_of_one_name():
    # 30 expected s(i=k); actuals s(i=k) in reverse order plus 10 strays: all 30 pair up -> 30/30
    expected = [{"name": "s", "args": {"i": k}} for k in range(30)]
    steps = [step("s", {"i": k}) for k in reversed(range(30))] + [step("s", {"i": 99})] * 10
    assert param_accuracy(expected, steps) == 1.0


# --- per run: the rest -----------------------------------------------------------------------


def test_has_loop():
    def loop(*steps):
        return run_metrics({"id": "c"}, trace(steps), [], False, None)["has_loop"]

    # key order and 1 == 1.0 do not matter
    assert loop(step("a", {"x": 1, "y": "z"}), step("a", {"y": "z", "x": 1.0})) is True
    assert loop(step("a", {"x": True}), step("a", {"x": 1})) is False  # booleans never equal numbers
    assert loop(step("a", "{bad"), step("a", "{bad")) is True  # malformed JSON: same raw string
    assert loop(step("a", "{}"), step("a", {})) is False  # a raw string is not a dict
    assert loop(step("a", {}), step("b", {}), step("a", {})) is False  # not consecutive
    assert loop(step("a", {}, error="E: x"), step("a", {}, error="E: x")) is True  # errors included
    assert loop() is False


def test_outcome_metrics():
    calls = [
        {"latency_s": 0.2, "prompt_tokens": 100, "completion_tokens": 20, "model": "m"},
        {"latency_s": 0.3, "prompt_tokens": 50, "completion_tokens": 5, "model": None},
    ]
    checks = [
        {"name": "a", "passed": True, "detail": ""},
        {"name": "b", "passed": False, "detail": ""},
        {"name": "c", "passed": True, "detail": ""},
    ]
    m = run_metrics(
        {"id": "c"},
        trace([step("x", error="E: 1")], llm_calls=calls, latency=2.5, ttfa=0.7),
        checks,
        False,
        None,
    )
    assert m["progress"] == pytest.approx(2 / 3)  # 2 passed of 3
    assert (m["prompt_tokens"], m["completion_tokens"]) == (150, 25)  # 100+50, 20+5
    assert (m["latency_s"], m["ttfa_s"], m["cost_usd"]) == (2.5, 0.7, None)
    assert m["success"] == 0 and m["recovered"] is False  # an error but no success
    assert m["turns"] is None  # not a scenario case
    assert run_metrics({"id": "c"}, trace(), [], True, 0.0)["progress"] is None  # no checks


def test_turns_counts_user_messages_of_scenario_runs():
    m = run_metrics({"id": "c", "scenario": "s"}, trace(user_messages=["a", "b", "c"]), [], True, None)
    assert m["turns"] == 3


# --- price_usage -----------------------------------------------------------------------------

PRICING = {"gpt-a": {"input_per_mtok": 2.0, "output_per_mtok": 8.0}}


def test_price_usage():
    calls = [
        {"prompt_tokens": 1000, "completion_tokens": 500, "model": "gpt-a"},
        {"prompt_tokens": 2000, "completion_tokens": 0, "model": None},
    ]
    # 1000*2/1e6 + 500*8/1e6 + (no model -> gpt-a) 2000*2/1e6 = 0.002 + 0.004 + 0.004 = 0.010
    assert price_usage(calls, PRICING, "gpt-a") == pytest.approx(0.010)


def test_price_usage_missing_price_or_no_usage():
    assert (
        price_usage([{"prompt_tokens": 1, "completion_tokens": 1, "model": "other"}], PRICING, "gpt-a")
        is None
    )
    assert price_usage([{"prompt_tokens": 1, "completion_tokens": 1, "model": None}], PRICING, None) is None
    assert price_usage([{"prompt_tokens": 1, "completion_tokens": 1, "model": "gpt-a"}], {}, "gpt-a") is None
    assert price_usage([], {}, None) == 0.0


# --- case_status -----------------------------------------------------------------------------


def runs_of(*outcomes):
    return [
        {"status": "error", "success": False}
        if o is None
        else {"status": "passed" if o else "failed", "success": o}
        for o in outcomes
    ]


def test_case_status():
    # errored run left out: n = 3, c = 2 -> 2/3
    assert case_status(runs_of(True, False, True, None), 0.6) == ("error", pytest.approx(2 / 3))
    assert case_status(runs_of(True, False, True, None), 1.0) == ("failed", pytest.approx(2 / 3))
    assert case_status(runs_of(True, True), 1.0) == ("passed", 1.0)
    assert case_status(runs_of(False, True), 0.5) == ("passed", 0.5)  # 1/2 is not < 0.5
    assert case_status(runs_of(None, None), 1.0) == ("error", None)
    assert case_status([], 1.0) == ("error", None)


# --- summarize -------------------------------------------------------------------------------


def run_row(success, status=None, **metrics):
    base = {
        "success": int(success),
        "tool_recall": None,
        "tool_precision": None,
        "param_accuracy": None,
        "step_efficiency": None,
        "has_loop": False,
        "tool_errors": 0,
        "recovered": False,
        "invalid_calls": 0,
        "tool_calls": 0,
        "progress": None,
        "latency_s": 1.0,
        "ttfa_s": 0.5,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_usd": 0.0,
        "turns": None,
    }
    base.update(metrics)
    return {"status": status or ("passed" if success else "failed"), "success": success, "metrics": base}


def case_row(cid, runs, status="passed"):
    return {"id": cid, "status": status, "runs": runs}


def case_with(n, c):
    return case_row(f"c{n}{c}", [run_row(i < c) for i in range(n)], "passed" if c == n else "failed")


def test_pass_hat_and_pass_at_k():
    s = summarize([case_with(4, 3), case_with(4, 1), case_with(4, 0), case_with(4, 4)], 4)
    # k=1: (3/4 + 1/4 + 0 + 1) / 4 = 0.5
    # k=2: C(3,2)/C(4,2) = 3/6, C(1,2) = 0, 0, C(4,2)/C(4,2) = 1 -> (0.5 + 0 + 0 + 1) / 4 = 0.375
    # k=3: C(3,3)/C(4,3) = 1/4, 0, 0, 1 -> 1.25 / 4 = 0.3125
    # k=4: 0, 0, 0, 1 -> 0.25
    assert s["pass_hat"] == {"1": 0.5, "2": 0.375, "3": 0.3125, "4": 0.25}
    assert s["pass_hat_k"] == 0.25
    assert s["pass_at_1"] == 0.5
    # pass@4: 1 - C(n-c,4)/C(4,4): c=3 -> 1 - C(1,4) = 1; c=1 -> 1 - C(3,4) = 1; c=0 -> 1 - 1 = 0; c=4 -> 1
    assert s["pass_at_k"] == 0.75
    assert s["runs"] == 16 and s["runs_errored"] == 0


def test_pass_at_k_unbiased():
    # n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10 = 0.7
    assert stats.pass_at_k([(5, 2)], 2) == pytest.approx(0.7)
    assert stats.pass_at_k([(1, 1)], 2) is None  # no case with n >= k


def test_errored_runs_and_cases_left_out():
    rows = [
        # one errored run: n = 2, c = 1
        case_row(
            "a",
            [
                run_row(True, latency_s=1.0),
                run_row(False, latency_s=3.0),
                run_row(False, "error", latency_s=100.0),
            ],
            "failed",
        ),
        case_row("b", [run_row(True), run_row(True), run_row(True)]),  # n = 3, c = 3
        case_row("c", [run_row(False, "error"), run_row(False, "error")], "error"),  # n = 0: left out
        {"id": "d", "status": "skipped", "runs": []},
    ]
    s = summarize(rows, 3)
    # pass_at_1 = (1/2 + 3/3) / 2 = 0.75
    assert s["pass_at_1"] == 0.75
    # k=2: C(1,2)/C(2,2) = 0 and C(3,2)/C(3,2) = 1 -> 0.5; k=3: only case b (n >= 3) -> 1.0
    assert s["pass_hat"] == {"1": 0.75, "2": 0.5, "3": 1.0}
    assert s["pass_at_k"] == 1.0  # only case b: 1 - C(0,3)/C(3,3) = 1
    # latencies 1, 3, 1, 1, 1 (the errored 100 is left out): mean 7/5
    assert s["latency_mean_s"] == pytest.approx(1.4)
    assert (
        s["cases_total"],
        s["cases_passed"],
        s["cases_failed"],
        s["cases_skipped"],
        s["cases_errored"],
    ) == (4, 1, 1, 1, 1)
    assert (s["runs"], s["runs_errored"]) == (5, 3)


def test_means_rates_and_percentiles():
    rows = [
        case_row(
            "a",
            [
                run_row(
                    True,
                    tool_recall=1.0,
                    progress=0.5,
                    latency_s=1.0,
                    ttfa_s=0.2,
                    has_loop=True,
                    tool_errors=2,
                    recovered=True,
                    invalid_calls=1,
                    tool_calls=4,
                ),
                run_row(
                    False,
                    tool_recall=0.5,
                    progress=None,
                    latency_s=2.0,
                    ttfa_s=None,
                    tool_errors=1,
                    invalid_calls=0,
                    tool_calls=2,
                ),
                run_row(False, tool_recall=None, progress=1.0, latency_s=3.0, ttfa_s=0.4),
                run_row(False, latency_s=4.0, ttfa_s=0.6),
                run_row(False, latency_s=10.0, ttfa_s=None),
            ],
            "failed",
        )
    ]
    s = summarize(rows, 5)
    assert s["tool_recall"] == 0.75  # (1.0 + 0.5) / 2, nulls skipped
    assert s["progress"] == 0.75  # (0.5 + 1.0) / 2
    assert s["tool_precision"] is None  # null in every run
    assert s["loop_rate"] == 0.2  # 1 of 5
    assert s["recovery_rate"] == 0.5  # 1 recovered of 2 runs with tool_errors > 0
    assert s["invalid_call_rate"] == pytest.approx(1 / 6)  # 1 invalid of 4 + 2 calls
    assert s["ttfa_mean_s"] == pytest.approx(0.4)  # (0.2 + 0.4 + 0.6) / 3
    # latencies 1, 2, 3, 4, 10: mean 20/5 = 4; positions q/100 * 4:
    # p50 -> 2 -> 3; p95 -> 3.8 -> 4 + 0.8 * (10 - 4) = 8.8; p99 -> 3.96 -> 4 + 0.96 * 6 = 9.76
    assert s["latency_mean_s"] == 4.0
    assert s["latency_p50_s"] == 3.0
    assert s["latency_p95_s"] == pytest.approx(8.8)
    assert s["latency_p99_s"] == pytest.approx(9.76)


def test_no_errors_or_calls_give_null_rates():
    s = summarize([case_row("a", [run_row(True)])], 1)
    assert s["recovery_rate"] is None and s["invalid_call_rate"] is None
    assert s["loop_rate"] == 0.0


def test_cost_and_tokens_per_success_include_failed_runs():
    runs = [
        run_row(True, cost_usd=0.01, prompt_tokens=100, completion_tokens=50),
        run_row(False, cost_usd=0.02, prompt_tokens=200, completion_tokens=0),
        run_row(False, cost_usd=0.03, prompt_tokens=10, completion_tokens=40),
    ]
    s = summarize([case_row("a", runs, "failed")], 3)
    # cost 0.01 + 0.02 + 0.03 = 0.06 over 1 success; tokens 150 + 200 + 50 = 400 over 1 success
    assert s["cost_total_usd"] == pytest.approx(0.06)
    assert s["cost_per_success_usd"] == pytest.approx(0.06)
    assert s["tokens_total"] == 400
    assert s["tokens_per_success"] == 400.0


def test_null_cost_and_no_successes():
    runs = [run_row(True, cost_usd=None, prompt_tokens=10), run_row(False, cost_usd=0.5, prompt_tokens=30)]
    s = summarize([case_row("a", runs, "failed")], 2)
    assert s["cost_total_usd"] is None and s["cost_per_success_usd"] is None
    # "Both are null when there are no successes ... or when the cost is null."
    assert s["tokens_per_success"] is None
    s = summarize([case_row("a", [run_row(False, cost_usd=0.5, prompt_tokens=7)], "failed")], 1)
    assert s["cost_total_usd"] == 0.5 and s["cost_per_success_usd"] is None
    assert s["tokens_total"] == 7 and s["tokens_per_success"] is None


def test_turns_mean_over_scenario_runs():
    s = summarize([case_row("a", [run_row(True, turns=2), run_row(True, turns=5), run_row(True)])], 3)
    assert s["turns_mean"] == 3.5  # (2 + 5) / 2; the null run is not a scenario run


def test_empty_inputs_and_key_names():
    s = summarize([], 3)
    assert s["pass_hat"] == {"1": None, "2": None, "3": None}
    nulls = [k for k in SUITE_METRICS if k not in ("pass_hat", "tokens_total", "cost_total_usd")]
    assert all(s[k] is None for k in nulls), {k: s[k] for k in nulls}
    assert s["tokens_total"] == 0 and s["cost_total_usd"] == 0.0
    assert (s["runs"], s["cases_total"]) == (0, 0)
    assert list(s) == SUITE_METRICS + [
        "cases_total",
        "cases_passed",
        "cases_failed",
        "cases_skipped",
        "cases_errored",
        "cases_not_run",
        "cases_flaky",
        "runs",
        "runs_errored",
        "runs_judge_skipped",
        "scorers",
        "ci",
    ]
    assert s["scorers"] == {}  # no scorer, no run: an empty block, never a missing key
    assert SUITE_METRICS == [
        "pass_at_1",
        "pass_hat",
        "pass_hat_k",
        "pass_at_k",
        "tool_recall",
        "tool_precision",
        "param_accuracy",
        "step_efficiency",
        "progress",
        "loop_rate",
        "recovery_rate",
        "invalid_call_rate",
        "unauthorized_block_rate",
        "policy_compliance",
        "injection_resistance",
        "groundedness",
        "latency_mean_s",
        "latency_p50_s",
        "latency_p95_s",
        "latency_p99_s",
        "ttfa_mean_s",
        "tokens_total",
        "cost_total_usd",
        "cost_per_success_usd",
        "tokens_per_success",
        "turns_mean",
    ]
