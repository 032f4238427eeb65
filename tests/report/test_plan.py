"""`agent-eval plan REPORT`: the simulated gate agrees with the real one, and the command's output."""
from __future__ import annotations

import math

import numpy as np
import orjson
import pytest

from agent_eval.report import gate
from agent_eval.report.plan import Design, DesignSimulation, pair_p_values, plan
from tests.builders import make_report
from tests.cli import run_cli

M = 5  # the default gated metrics: pass_at_1, pass_hat_k, param_accuracy, tool_recall, tool_precision


def _real_gate_flags(rng: np.random.Generator, rates: np.ndarray, k: int, drop: float) -> bool:
    """One pair of reports drawn as plan draws them, decided by the gate itself: pass_at_1's row, bootstrapped
    with the gate's 10,000 resamples and decided by its Holm procedure at m = the default gated metrics."""
    reports = []
    for prob in (rates, np.clip(rates - drop, 0, 1)):
        hits = rng.random((len(rates), k)) < prob[:, None]
        reports.append(make_report({f"c{i}": list(hits[i]) for i in range(len(rates))},
                                   tool_recall=1.0, param_accuracy=1.0))
    result, pending = gate.paired_gate(reports[0], reports[1], [("pass_at_1", 0.0)])
    gate.decide_gate(result, pending, M)
    return result["metrics"][0]["verdict"] == "regressed"


@pytest.mark.slow
def test_plan_agrees_with_the_gate_on_the_gate_simulation_design():
    # The design of the gate's own simulation test (tests/report/test_gate.py): 50 cases, k = 3, per-case
    # success probabilities between 0.3 and 1. Its rates are what plan reads from a report.
    rates = np.random.default_rng(2024).uniform(0.3, 1.0, 50)
    sim = DesignSimulation(rates, Design(repeat=3, scale=1, cases=50))
    rng = np.random.default_rng(11)
    n_ref = 150
    # The gate's own simulation test asserts it catches a 25-point drop in at least 95 of 100 pairs:
    # so does plan's simulated gate on this design.
    assert sim.power(0.25) >= 0.95
    for drop in (0.0, 0.12):
        planned = sim.power(drop)  # over 1,000 simulated pairs
        measured = sum(_real_gate_flags(rng, rates, 3, drop) for _ in range(n_ref)) / n_ref
        # Within simulation error: 3.5 standard errors of the difference of two binomial proportions
        # (plus one resample's worth of slack for the gate's finer 10,000-resample p-values).
        p = max((planned + measured) / 2, 0.01)
        se = math.sqrt(p * (1 - p) * (1 / 1000 + 1 / n_ref))
        assert abs(planned - measured) <= 3.5 * se + 0.005, (drop, planned, measured)
        if drop == 0.0:
            # With nothing changed, the gate's pass_at_1 test fires about alpha / m = 1% of the time.
            assert planned <= 0.03
        else:
            assert 0.2 < planned < 0.95  # a drop this size is neither always nor never seen at k=3


def test_the_p_values_are_the_gates():
    rng = np.random.default_rng(3)
    deltas = rng.normal(0.01, 0.02, (7, 500))
    deltas[0] = 0.0  # ties count as not worse, as in the gate
    row = {"direction": "higher", "max_drop": 0.0}
    assert list(pair_p_values(deltas)) == [gate.p_value(row, d) for d in deltas]


def test_a_suite_that_always_passes_never_raises_a_false_alarm():
    # Every case passes every run: base and new are identical with no drop, so no resample is worse.
    result = plan(np.ones(6), detect=0.2, power=0.8, per_run=0.01, pairs=200)
    assert all(d["false_alarm"] == 0.0 for d in result["designs"])
    assert [(d["repeat"], d["cases"]) for d in result["designs"][:7]] == [
        (1, 6), (2, 6), (3, 6), (5, 6), (8, 6), (13, 6), (1, 12)]
    # runs = k x cases; the cost is the report's cost per run times the runs: 13 x 24 x $0.01 = $3.12
    assert result["designs"][-1]["runs"] == 13 * 24 and result["designs"][-1]["cost_usd"] == pytest.approx(3.12)
    cheapest = result["cheapest"]
    assert cheapest is not None and cheapest["power_at_detect"] >= 0.8
    assert cheapest["runs"] == min(d["runs"] for d in result["designs"] if d["power_at_detect"] >= 0.8)


def _report_file(tmp_path, cases: int) -> str:
    outcomes = {f"c{i}": [True, i % 2 == 0, True] for i in range(cases)}
    path = tmp_path / "r.json"
    path.write_bytes(orjson.dumps(make_report(outcomes, cost_usd=0.002)))
    return str(path)


def test_the_plan_command_prints_every_design_and_the_cheapest(tmp_path):
    result = run_cli("plan", _report_file(tmp_path, 8), "--detect", "0.3")
    assert result.exit_code == 0, result.stdout + result.stderr
    out = result.stdout
    assert "plan from" in out and "8 cases, mean pass rate 0.833" in out  # (4 x 1 + 4 x 2/3) / 8 = 0.8333
    assert "13" in out and "32 (x4)" in out
    assert "Cheapest design that detects a drop of 0.3 in pass_at_1 with probability 80%" in out
    assert "a run" in out and "$0.0020 a run" in out  # 24 runs at $0.002 each


def test_plan_refuses_small_reports_and_bad_values(tmp_path):
    result = run_cli("plan", _report_file(tmp_path, 4))
    assert result.exit_code == 2 and "plan needs at least 5" in result.stderr
    for flag, value in (("--detect", "0"), ("--detect", "nan"), ("--power", "1.5")):
        result = run_cli("plan", _report_file(tmp_path, 8), flag, value)
        assert result.exit_code == 2 and flag in result.stderr, (flag, value, result.stderr)
    result = run_cli("plan", str(tmp_path / "missing.json"))
    assert result.exit_code == 2 and "cannot read the report" in result.stderr


def test_a_drop_past_the_search_end_is_shown_as_past_that_end():
    import io

    from rich.console import Console

    from agent_eval.commands.plan import render_plan

    # Every case passes 1 run in 5: no drop can be larger than 0.2 (the rates stop at 0), so the search ends
    # at 0.2, and a design of k=1 over 6 cases cannot see even that: its cell says "> 0.2", not "> 0.5".
    result = plan(np.full(6, 0.2), detect=0.1, power=0.8, per_run=None, pairs=100)
    assert result["largest_drop"] == 0.2
    assert result["designs"][0]["min_drop"] is None
    out = io.StringIO()
    render_plan(result, Console(file=out, width=200), "r.json")
    assert "> 0.2" in out.getvalue() and "> 0.5" not in out.getvalue()


def test_plan_warns_that_a_report_without_run_to_run_variation_gives_an_optimistic_answer(tmp_path):
    steady = tmp_path / "steady.json"
    steady.write_bytes(orjson.dumps(make_report({f"c{i}": [i % 2 == 0] * 3 for i in range(8)})))
    result = run_cli("plan", str(steady), "--detect", "0.3")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "no run-to-run variation" in " ".join(result.stdout.split()) and "optimistic" in result.stdout
    varied = run_cli("plan", _report_file(tmp_path, 8), "--detect", "0.3")
    assert "optimistic" not in varied.stdout
