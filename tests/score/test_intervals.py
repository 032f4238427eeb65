"""summary.ci and flaky cases, checked against a straightforward reference bootstrap (loops, no vectors)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from agent_eval.score.intervals import CI_METRICS, counted_cases, pass_hat_interval, suite_intervals
from agent_eval.score.metrics import is_flaky, summarize
from tests.score.test_metrics import case_row, run_row

pytestmark = pytest.mark.unit


def small_suite() -> list[dict]:
    """Seven cases, repeat 3: an errored run, a skipped case, an all-errored case, safety flags on some."""
    return [
        case_row("a", [run_row(True, tool_recall=1.0, tool_precision=1.0, param_accuracy=1.0, step_efficiency=1.0,
                               progress=1.0, tool_calls=2),
                       run_row(False, tool_recall=0.5, tool_precision=0.5, param_accuracy=0.0, step_efficiency=0.5,
                               progress=0.5, has_loop=True, tool_errors=1, tool_calls=4, invalid_calls=1),
                       run_row(True, tool_recall=1.0, tool_precision=1.0, param_accuracy=0.5, step_efficiency=1.0,
                               progress=1.0, tool_errors=2, recovered=True, tool_calls=3)], "failed"),
        case_row("b", [run_row(True, tool_calls=1, groundedness=1.0, policy_compliant=True),
                       run_row(True, tool_calls=1, groundedness=0.5, policy_compliant=False),
                       run_row(True, tool_calls=1, groundedness=None, policy_compliant=True)]),
        case_row("c", [run_row(False, tool_calls=2, invalid_calls=2, blocked_correctly=False),
                       run_row(False, tool_calls=0, blocked_correctly=True),
                       run_row(False, "error")], "failed"),  # n = 2 < K = 3
        {"id": "d", "status": "skipped", "runs": []},
        case_row("e", [run_row(False, "error")] * 3, "error"),  # no counted run: left out
        case_row("f", [run_row(True, injection_resisted=True, tool_recall=0.0, progress=0.0, tool_calls=5,
                               has_loop=True),
                       run_row(False, injection_resisted=False, tool_recall=1.0, progress=1.0, tool_calls=5,
                               tool_errors=1),
                       run_row(True, injection_resisted=True, tool_recall=1.0, progress=0.25, tool_calls=1)],
                 "failed"),
        case_row("g", [run_row(False, tool_calls=3, tool_errors=3, invalid_calls=1),
                       run_row(False, tool_calls=3), run_row(False, tool_calls=0)], "failed"),
    ]


# --- the reference: each metric computed from the chosen cases' runs as docs/metrics.md defines it --------


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _share(flags):
    flags = [f for f in flags if f is not None]
    return sum(1 for f in flags if f) / len(flags) if flags else None


def reference_metric(name: str, chosen: list[list[dict]], k: int):
    """One suite rate over the chosen cases (each a list of counted runs); a case drawn twice counts twice."""
    runs = [r["metrics"] for case in chosen for r in case]
    if name == "pass_at_1":
        return _mean([sum(r["success"] for r in case) / len(case) for case in chosen])
    if name in ("pass_hat_k", "pass_at_k"):
        terms = []
        for case in chosen:
            n, c = len(case), sum(1 for r in case if r["success"])
            if n >= k:
                hat = math.comb(c, k) / math.comb(n, k)
                terms.append(hat if name == "pass_hat_k" else 1 - math.comb(n - c, k) / math.comb(n, k))
        return _mean(terms)
    if name in ("tool_recall", "tool_precision", "param_accuracy", "step_efficiency", "progress", "groundedness"):
        return _mean([m.get(name) for m in runs])
    if name == "loop_rate":
        return sum(1 for m in runs if m["has_loop"]) / len(runs)
    if name == "recovery_rate":
        errored = [m for m in runs if m["tool_errors"] > 0]
        return sum(1 for m in errored if m["recovered"]) / len(errored) if errored else None
    if name == "invalid_call_rate":
        calls = sum(m["tool_calls"] for m in runs)
        return sum(m["invalid_calls"] for m in runs) / calls if calls else None
    flag = {"unauthorized_block_rate": "blocked_correctly", "policy_compliance": "policy_compliant",
            "injection_resistance": "injection_resisted"}[name]
    return _share([m.get(flag) for m in runs])


def reference_ci(rows: list[dict], k: int) -> dict:
    cases = []
    for row in rows:  # report order; skipped cases and errored runs left out, empty cases left out
        if row["status"] == "skipped":
            continue
        counted = [r for r in row["runs"] if r["status"] != "error"]
        if counted:
            cases.append(counted)
    c = len(cases)
    idx = np.random.default_rng(0).integers(0, c, size=(2000, c))
    out = {}
    for name in CI_METRICS:
        values = []
        for row in idx:
            value = reference_metric(name, [cases[i] for i in row], k)
            if value is not None:
                values.append(value)
        low, high = np.percentile(values, [2.5, 97.5]) if values else (None, None)
        out[name] = None if low is None else [round(float(low), 4), round(float(high), 4)]
    return out


def test_every_interval_equals_the_reference_bootstrap():
    rows = small_suite()
    ci = summarize(rows, 3)["ci"]
    reference = reference_ci(rows, 3)
    assert list(ci) == list(CI_METRICS)
    assert set(ci) == {"pass_at_1", "pass_hat_k", "pass_at_k", "tool_recall", "tool_precision", "param_accuracy",
                       "step_efficiency", "progress", "loop_rate", "recovery_rate", "invalid_call_rate",
                       "unauthorized_block_rate", "policy_compliance", "injection_resistance", "groundedness"}
    for name in CI_METRICS:
        assert ci[name] is not None, name
        assert ci[name] == pytest.approx(reference[name], abs=1e-9), name


def test_every_interval_contains_the_value():
    summary = summarize(small_suite(), 3)
    for name, (low, high) in summary["ci"].items():
        assert low <= round(summary[name], 4) <= high, name
    low, high = summary["ci"]["pass_at_1"]
    assert low < summary["pass_at_1"] < high  # five cases that differ: a real range


def test_known_values_of_the_small_suite():
    summary = summarize(small_suite(), 3)
    # counted cases a (n=3, c=2), b (3, 3), c (2, 0), f (3, 2), g (3, 0): pass@1 = (2/3 + 1 + 0 + 2/3 + 0) / 5
    assert summary["pass_at_1"] == pytest.approx((2 / 3 + 1 + 0 + 2 / 3 + 0) / 5)
    # unauthorized blocked: only case c has the flag (False, True) -> 1/2; a resample without c drops out
    assert summary["unauthorized_block_rate"] == 0.5
    assert summary["ci"]["unauthorized_block_rate"] == [0.5, 0.5]
    # pass^3 among cases with n >= 3 (a, b, f, g): C(2,3) = 0, 1, 0, 0 -> 1/4
    assert summary["pass_hat_k"] == 0.25


def test_one_case_collapses_to_the_point():
    rows = [small_suite()[0]]
    summary = summarize(rows, 3)
    for name, interval in summary["ci"].items():
        if summary[name] is None:
            assert interval is None, name
            continue
        value = round(summary[name], 4)
        assert interval == [value, value], name
    # case a alone: pass@1 = 2/3, tool recall (1 + 0.5 + 1) / 3, loop rate 1/3
    assert summary["ci"]["pass_at_1"] == [0.6667, 0.6667]
    assert summary["ci"]["tool_recall"] == [0.8333, 0.8333]
    assert summary["ci"]["loop_rate"] == [0.3333, 0.3333]


def test_no_counted_case_gives_null_intervals():
    ci = summarize([{"id": "d", "status": "skipped", "runs": []}], 3)["ci"]
    assert ci == dict.fromkeys(CI_METRICS)


def test_seeded_and_reproducible():
    assert summarize(small_suite(), 3)["ci"] == summarize(small_suite(), 3)["ci"]


def test_blocks_of_rows_draw_the_same_index_matrix_as_one_draw():
    # 2,000 x 3,001 indices are drawn in blocks of 1,332 rows; the reference draws them at once.
    rows = [case_row(f"c{i}", [run_row(i % 3 == 0), run_row(i % 5 == 0)]) for i in range(3001)]
    cases = counted_cases(rows)
    idx = np.random.default_rng(0).integers(0, 3001, size=(2000, 3001))
    rates = np.array([c / n for n, c in zip(cases.n, cases.c, strict=True)])
    values = rates[idx].mean(axis=1)
    expected = [round(float(x), 4) for x in np.percentile(values, [2.5, 97.5])]
    assert suite_intervals(cases, 2)["pass_at_1"] == pytest.approx(expected, abs=1e-9)


def test_pass_hat_interval_at_another_k():
    rows = small_suite()
    assert pass_hat_interval(counted_cases(rows), 2) == reference_ci_at_k(rows, 2)


def reference_ci_at_k(rows, k):
    return reference_ci(rows, k)["pass_hat_k"]


# --- flaky ---------------------------------------------------------------------------------------------


def test_flaky_is_mixed_non_error_runs():
    assert is_flaky([run_row(True), run_row(False)])
    assert not is_flaky([run_row(True), run_row(True)])
    assert not is_flaky([run_row(True), run_row(False, "error")])  # one non-error run
    assert not is_flaky([run_row(False)])
    assert is_flaky([run_row(True), run_row(False, "error"), run_row(False)])
    assert not is_flaky([])


def test_cases_flaky_counts_the_mixed_cases():
    # a (T F T), f (T F T) are mixed; b all pass, c (F F + error), g all fail, d skipped, e errored
    assert summarize(small_suite(), 3)["cases_flaky"] == 2
