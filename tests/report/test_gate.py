"""The regression gate: hand-checked verdicts, exact Fisher listing, a simulation of its error rates."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import orjson
import pytest

from agent_eval.report import gate
from agent_eval.commands.compare import compare_command
from tests.builders import make_report, make_run, vary_metrics  # noqa: F401
from agent_eval.report.gate_stats import Stat, resample_weights
from agent_eval.report.gate import (
    ReportError,
    compare_reports,
    evaluate,
    fisher_fell_p,
    load_report,
    metric_direction,
    parse_gate_spec,
)


def verdicts(g: dict) -> dict[str, str]:
    return {row["metric"]: row["verdict"] for row in g["metrics"]}


# --- hand-checked cases ----------------------------------------------------------------------


def test_identical_pair_has_no_regression() -> None:
    outcomes = {f"c{i}": [i % 2 == 0, True, i % 3 == 0] for i in range(12)}
    report = make_report(outcomes)
    g = compare_reports(report, report)
    assert g["regression"] is False
    assert set(verdicts(g).values()) == {"no significant change"}
    assert g["m"] == 5 and g["cases_common"] == 12
    assert all(row["delta"] == 0 and row["ci"] == [0.0, 0.0] for row in g["metrics"])
    assert g["regressed_cases"] == []


def test_full_flip_at_k3_is_flagged_and_listed() -> None:
    base = make_report({f"c{i}": [True] * 3 for i in range(10)})
    new = make_report({f"c{i}": [False] * 3 for i in range(10)})
    g = compare_reports(base, new)
    assert verdicts(g)["pass_at_1"] == "regressed" and verdicts(g)["pass_hat_k"] == "regressed"
    assert g["regression"] is True
    # Fisher, one-sided: C(3,3)C(3,0)/C(6,3) = 1/20 = 0.05 for every case.
    assert [c["p_value"] for c in g["regressed_cases"]] == [0.05] * 10
    assert g["regressed_cases"][0] == {"id": "c0", "base_successes": 3, "base_runs": 3, "new_successes": 0,
                                       "new_runs": 3, "p_value": 0.05}
    assert g["note"] is None


def test_fisher_exact_values() -> None:
    assert fisher_fell_p(3, 3, 0, 3) == Fraction(1, 20)
    # 3/3 -> 1/3: s=4, P(X<=1) = [C(4,0)C(2,3) + C(4,1)C(2,2)] / C(6,3) = (0 + 4)/20 = 1/5
    assert fisher_fell_p(3, 3, 1, 3) == Fraction(1, 5)
    # 2/2 -> 0/2: C(2,0)C(2,2)/C(4,2) = 1/6 > 0.05, so k=2 can never qualify
    assert fisher_fell_p(2, 2, 0, 2) == Fraction(1, 6)
    # successes rose: 0/3 -> 3/3 gives P(X<=3) = 1
    assert fisher_fell_p(0, 3, 3, 3) == 1


def test_k2_note_says_no_case_can_qualify() -> None:
    base = make_report({f"c{i}": [True, True] for i in range(8)})
    new = make_report({f"c{i}": [False, False] for i in range(8)})
    g = compare_reports(base, new)
    assert g["regressed_cases"] == []
    assert g["note"] is not None and "k=2" in g["note"] and "--repeat 3" in g["note"]
    assert g["regression"] is True  # the metric still regresses; only the case listing is impossible


def test_cost_rise_is_a_regression_and_fall_an_improvement() -> None:
    outcomes = {f"c{i}": [True, True, False] for i in range(20)}
    cheap, dear = make_report(outcomes, cost_usd=0.001), make_report(outcomes, cost_usd=0.002)
    gates = [("cost_per_success_usd", 0.0)]
    g = compare_reports(cheap, dear, gates)
    row = g["metrics"][0]
    # 60 runs at $0.002 over 40 successes = $0.003 per success, against $0.0015 before.
    assert row["direction"] == "lower"
    assert row["new"] == pytest.approx(0.003) and row["base"] == pytest.approx(0.0015)
    assert row["verdict"] == "regressed" and g["regression"]
    assert compare_reports(dear, cheap, gates)["metrics"][0]["verdict"] == "improved"
    # A tolerance wider than the rise lets it through: delta is $0.0015 exactly in every resample.
    assert compare_reports(cheap, dear, [("cost_per_success_usd", 0.002)])["regression"] is False


def test_point_estimates_equal_the_summary_over_common_cases() -> None:
    from agent_eval.score.metrics import SUITE_METRICS, summarize

    rng = np.random.default_rng(7)
    report = vary_metrics(make_report({f"c{i}": list(rng.random(3) < 0.6) for i in range(30)}), rng,
                          tool_calls=False)
    # Every numeric suite metric is gateable (pass_hat is the dict behind pass_hat.<k>).
    names = [n for n in SUITE_METRICS if n != "pass_hat"] + ["pass_hat.2"]
    g = compare_reports(report, report, [(n, 0.0) for n in names])
    summary = summarize(report["cases"], 3)
    for row in g["metrics"]:
        want = summary["pass_hat"]["2"] if row["metric"] == "pass_hat.2" else summary[row["metric"]]
        assert want is not None and row["base"] == pytest.approx(want, rel=1e-12), row["metric"]


def test_weighted_percentile_matches_numpy_on_expanded_data() -> None:
    rng = np.random.default_rng(1)
    values, owner = rng.random(12), np.repeat(np.arange(4), 3)
    weights = rng.integers(0, 3, size=(50, 4)).astype(float)
    weights[:, 0] += 1  # never an empty resample
    for q in (50, 95, 99):
        got = evaluate([Stat("percentile", values=values, owner=owner, q=q)], weights)[0]
        want = [np.percentile(np.repeat(values, w[owner].astype(int)), q) for w in weights]
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_cases_in_one_report_and_skipped_cases_are_listed_not_gated() -> None:
    base = make_report({"a": [True] * 3, "b": [True] * 3, "s": [True] * 3})
    new = make_report({"a": [True] * 3, "c": [False] * 3, "s": [True] * 3})
    new["cases"][2].update(status="skipped", runs=[], skip_reason="needs KEY")
    g = compare_reports(base, new)
    assert g["only_in_base"] == ["b"] and g["only_in_new"] == ["c"] and g["excluded_cases"] == ["s"]
    assert g["cases_common"] == 1 and not g["regression"]


def test_different_repeat_uses_smaller_k() -> None:
    # base k=3: per case C(2,2)/C(3,2) = 1/3 at k=2; new k=2, both succeed: 1. With k=2 both are defined.
    base = make_report({"a": [True, True, False]})
    new = make_report({"a": [True, True]})
    g = compare_reports(base, new, [("pass_hat_k", 0.0)])
    assert g["k"] == 2 and g["metrics"][0]["base"] == pytest.approx(1 / 3) and g["metrics"][0]["new"] == 1.0


def test_null_metric_is_na_and_not_counted_in_m() -> None:
    report = make_report({"a": [True] * 3}, tool_recall=None)
    g = compare_reports(report, report)
    assert verdicts(g)["tool_recall"] == "n/a" and g["m"] == 4


def test_scorer_path_is_recomputed_from_run_values() -> None:
    base = make_report({"a": [True] * 2, "b": [True] * 2})
    new = make_report({"a": [True] * 2, "b": [True] * 2})
    for report, spent in ((base, [1, 2, 3, 4]), (new, [5, 6, 7, 8])):
        runs = [r for c in report["cases"] for r in c["runs"]]
        for run, value in zip(runs, spent, strict=True):
            run["scorers"] = {"budget": {"spent": value, "ok": value > 2}}
    gates = [("scorers.budget.spent.mean", 0.0), ("scorers.budget.ok.true_fraction", 0.0)]
    g = compare_reports(base, new, gates)
    spent, ok = g["metrics"]
    assert (spent["base"], spent["new"]) == (2.5, 6.5)  # (1+2+3+4)/4, (5+6+7+8)/4
    assert (ok["base"], ok["new"]) == (0.5, 1.0)  # 2 of 4 above 2, then 4 of 4
    assert spent["direction"] == "higher"
    with pytest.raises(ReportError, match="no run"):
        compare_reports(base, new, [("scorers.nope.x.mean", 0.0)])


# --- specs, direction, loading, CLI glue -----------------------------------------------------


def test_parse_gate_spec_and_direction() -> None:
    assert parse_gate_spec("cost_per_success_usd=0.01") == ("cost_per_success_usd", 0.01)
    assert parse_gate_spec("pass_at_1") == ("pass_at_1", 0.0)
    for name in ("cost_total_usd", "latency_p95_s", "ttfa_mean_s", "tokens_total", "loop_rate",
                 "invalid_call_rate", "turns_mean"):
        assert metric_direction(name) == "lower", name
    for name in ("pass_at_1", "recovery_rate", "scorers.budget.spent.mean", "pass_hat.2"):
        assert metric_direction(name) == "higher", name
    for bad in ("nonsense", "pass_at_1=-1", "pass_at_1=abc", "scorers.x.median", "=1"):
        with pytest.raises(ReportError):
            parse_gate_spec(bad)


@pytest.mark.parametrize("content, message", [
    (b"{not json", "not a JSON"),
    (orjson.dumps({"schema_version": 2, "cases": []}), "schema_version 2"),
    (orjson.dumps({"schema_version": 1}), "no `cases`"),
])
def test_load_report_errors(tmp_path, content: bytes, message: str) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(content)
    with pytest.raises(ReportError, match=message) as info:
        load_report(path)
    assert str(path) in str(info.value)


def test_compare_command_exit_codes(tmp_path, capsys) -> None:
    from rich.console import Console

    base_path, new_path, bad = tmp_path / "b.json", tmp_path / "n.json", tmp_path / "x.json"
    base_path.write_bytes(orjson.dumps(make_report({f"c{i}": [True] * 3 for i in range(5)})))
    new_path.write_bytes(orjson.dumps(make_report({f"c{i}": [False] * 3 for i in range(5)})))
    bad.write_bytes(b"[]")
    console = Console(record=True, width=120)
    assert compare_command(base_path, [base_path], [], console) == 0
    assert compare_command(base_path, [new_path], [], console) == 1
    text = console.export_text()
    assert "regressed" in text and "REGRESSION" in text and "c0: 3/3 -> 0/3" in text
    assert compare_command(base_path, [bad], [], console) == 2
    assert compare_command(base_path, [new_path], ["bogus"], console) == 2
    assert "unknown metric" in capsys.readouterr().err


# --- simulation: false alarms and power ------------------------------------------------------


def _simulated_pair(rng: np.random.Generator, drop: float, n_cases: int = 50, k: int = 3) -> tuple[dict, ...]:
    """Two reports of the same cases; per-run success p per case, then p - drop in the new one."""
    p = rng.uniform(0.3, 1.0, n_cases) if drop else rng.beta(2, 1, n_cases)
    reports = []
    for prob in (p, np.clip(p - drop, 0, 1)):
        hits = rng.random((n_cases, k)) < prob[:, None]
        recall = np.where(hits, 1.0, rng.choice([0.0, 0.5, 1.0], size=hits.shape))
        report = make_report({f"c{i}": list(hits[i]) for i in range(n_cases)})
        for case, rec in zip(report["cases"], recall, strict=True):
            for run, r in zip(case["runs"], rec, strict=True):
                run["metrics"]["tool_recall"] = float(r)
        reports.append(report)
    return reports[0], reports[1]


@pytest.mark.slow
def test_simulated_false_alarm_rate_and_power() -> None:
    # The real 10,000 resamples: the weight matrix for 50 cases is drawn once (seed 0) and cached,
    # so each comparison is a handful of (10,000 x 50) matrix-vector products.
    rng = np.random.default_rng(2024)
    n_pairs = 200
    alarms = sum(compare_reports(*_simulated_pair(rng, 0.0))["regression"] for _ in range(n_pairs))
    # Power is near 1 (the drop is about five standard errors), so fewer pairs tell it apart from 0.95.
    caught = sum(compare_reports(*_simulated_pair(rng, 0.25))["regression"] for _ in range(100))
    assert alarms / n_pairs <= 0.08, alarms
    assert caught >= 95, caught


@pytest.mark.slow
def test_simulated_false_alarm_rate_of_holm_over_a_matrix_and_it_flags_what_bonferroni_flags() -> None:
    # Holm's step-down procedure over the m tests keeps the family-wise false-alarm bound: with nothing
    # changed, a matrix of two new reports (m = 5 metrics x 2 = 10 tests) raises an alarm at most ~5% of
    # the time; and every metric Bonferroni (p <= 0.05 / m) flags, Holm flags too.
    rng = np.random.default_rng(7)
    n_matrices, alarms = 100, 0
    for _ in range(n_matrices):
        base, new1 = _simulated_pair(rng, 0.0)
        _, new2 = _simulated_pair(rng, 0.0)
        new2["cases"] = [dict(c, id=b["id"]) for c, b in zip(new2["cases"], base["cases"], strict=True)]
        gated = gate.compare_many(base, [new1, new2])
        alarms += any(g["regression"] for g in gated)
    assert alarms / n_matrices <= 0.08, alarms
    for drop in (0.0, 0.05, 0.1, 0.25):
        for _ in range(20):
            result = compare_reports(*_simulated_pair(rng, drop))
            rows = [r for r in result["metrics"] if r.get("p_value") is not None]
            m = len(rows)
            for row in rows:
                if row["p_value"] <= 0.05 / m:
                    assert row["verdict"] == "regressed", row


def test_resample_weights_are_paired_counts() -> None:
    w = resample_weights(7)
    assert w.shape == (gate.RESAMPLES, 7) and (w.sum(axis=1) == 7).all()
    assert math.isclose(w.mean(), 1.0, rel_tol=0.01)
    np.testing.assert_array_equal(w, resample_weights.__wrapped__(7))  # seed 0 repeats exactly


def test_listed_cases_under_a_passing_gate_are_explained_in_one_line() -> None:
    base = make_report({f"c{i}": [True] * 3 for i in range(10)})
    new = make_report({"c0": [False] * 3, **{f"c{i}": [True] * 3 for i in range(1, 10)}})
    gate = compare_reports(base, new)
    assert [c["id"] for c in gate["regressed_cases"]] == ["c0"] and not gate["regression"]
    row = next(r for r in gate["metrics"] if r["metric"] == "pass_at_1")
    # delta = 0.9 - 1.0 = -0.1. A resample leaves c0 out with probability 0.9**10 = 0.35, far above the
    # 1% of the bound's tail (alpha 0.05 / m 5), so the upper bound is 0.0; the distance is 0.0 - (-0.1).
    assert row["delta"] == pytest.approx(-0.1) and row["ci"][1] == 0.0
    assert row["min_detectable_drop"] == pytest.approx(0.1)
    from agent_eval.report.gate_table import gate_notes

    (line,) = [n for n in gate_notes(gate) if "no metric regressed" in n]
    assert line.startswith("1 case(s) listed as regressed, but no metric regressed")
    assert "pass_at_1 would have had to fall about 0.100 further than it did (delta -0.100)" in line
    regressed = compare_reports(base, make_report({f"c{i}": [False] * 3 for i in range(10)}))
    assert not [n for n in gate_notes(regressed) if "no metric regressed" in n]


def test_the_matrix_base_column_is_the_base_s_own_figure_and_m_counts_every_pair() -> None:
    from agent_eval.report.compare import build_matrix, cell_text
    from agent_eval.report.gate import compare_many

    base = make_report({"a": [True], "b": [False], "c": [True], "d": [True]})
    base["summary"] = {"pass_at_1": 0.75}  # (1 + 0 + 1 + 1) / 4
    partial = make_report({"a": [True], "b": [True]}, run_id="p")
    full = make_report({"a": [True], "b": [True], "c": [True], "d": [True]}, run_id="f")
    gated = compare_many(base, [partial, full], [("pass_at_1", 0.0)])
    assert [g["m"] for g in gated] == [2, 2]  # 1 gated metric x 2 reports
    matrix = build_matrix(base, [partial, full], gated, ["b.json", "p.json", "f.json"])
    (row,) = matrix["rows"]
    # The base column: 0.75 over its 4 cases, not the 0.5 it has over the 2 cases it shares with "p".
    assert [c["value"] for c in row["cells"]] == [0.75, 1.0, 1.0]
    assert gated[0]["metrics"][0]["base"] == 0.5
    assert cell_text("pass_at_1", row["cells"][0]) == "0.750"
    assert [c["id"] for c in matrix["cases_differing"]] == ["b", "c", "d"]  # failed->passed, absent in "p"


def test_holm_steps_down_where_bonferroni_stops() -> None:
    # Three tests with p-values 0.001, 0.02 and 0.04 (m = 3): Bonferroni rejects only p <= 0.05/3 = 0.0167,
    # the first. Holm: 0.001 <= 0.05/3 rejected; 0.02 <= 0.05/2 = 0.025 rejected; 0.04 <= 0.05/1 rejected.
    # A p-value is (1 + resamples not worse than -MAX_DROP) / (1 + resamples); with 999 resamples,
    # p = 0.001 needs 0 such resamples, p = 0.02 needs 19, p = 0.04 needs 39.
    def test_row(not_worse: int) -> tuple[dict, np.ndarray]:
        deltas = np.array([0.0] * not_worse + [-0.5] * (999 - not_worse))
        return {"metric": f"m{not_worse}", "direction": "higher", "max_drop": 0.0, "delta": -0.4}, deltas

    tests = [test_row(0), test_row(19), test_row(39)]
    gate.holm_decide(tests, 3)
    assert [row["p_value"] for row, _ in tests] == pytest.approx([0.001, 0.02, 0.04])
    assert [row["verdict"] for row, _ in tests] == ["regressed"] * 3
    # One more resample not worse at the second step (p = 21/1000 = 0.021 still <= 0.025) keeps it; at
    # 0.03 (29 not worse) the second step fails, and Holm stops: the third is not rejected either.
    tests = [test_row(0), test_row(29), test_row(39)]
    gate.holm_decide(tests, 3)
    assert [row["verdict"] for row, _ in tests] == ["regressed", "no significant change", "no significant change"]


def test_a_lower_is_better_p_value_counts_resamples_at_or_below_the_tolerance() -> None:
    # cost rose: deltas 0.02 in 90 resamples, 0.001 in 9 (<= MAX_DROP 0.005): p = (1 + 9) / (1 + 99) = 0.1.
    row = {"metric": "cost_total_usd", "direction": "lower", "max_drop": 0.005, "delta": 0.02}
    deltas = np.array([0.02] * 90 + [0.001] * 9)
    assert gate.p_value(row, deltas) == pytest.approx(0.1)


def test_compare_many_notes_each_column_and_names_the_correction() -> None:
    from agent_eval.report.compare import build_matrix, matrix_notes

    # c0..c9 pass 3/3 in the base. "lazy" fails c0 only: c0 flips (Fisher p = 1/20) but no metric regresses.
    # "broken" fails every case: each of its 5 metrics has p = 1/10,001 and regresses.
    base = make_report({f"c{i}": [True] * 3 for i in range(10)}, run_id="base")
    lazy = make_report({"c0": [False] * 3, **{f"c{i}": [True] * 3 for i in range(1, 10)}}, run_id="lazy")
    broken = make_report({f"c{i}": [False] * 3 for i in range(10)}, run_id="broken")
    lazy["agent"], broken["agent"] = "lazy", "broken"
    gated = gate.compare_many(base, [lazy, broken])
    matrix = build_matrix(base, [lazy, broken], gated, ["b.json", "l.json", "x.json"])
    notes = matrix_notes(matrix)
    assert "m = 10 tests; compared alone with the base, each report would get the same verdict." in notes
    assert "#1: regressed case c0: 3/3 -> 0/3 (Fisher p = 0.05)" in notes
    (drop,) = [n for n in notes if n.startswith("#1: 1 case(s) listed as regressed, but no metric regressed")]
    assert "pass_at_1 would have had to fall about 0.100 further than it did (delta -0.100)" in drop
    assert sum(n.startswith("#2: regressed case") for n in notes) == 10


def test_the_correction_line_names_a_report_whose_verdict_the_matrix_changed() -> None:
    from agent_eval.report.compare import correction_line

    matrix = {"m": 10, "columns": [{"path": "b.json"}, {"agent": "lazy", "path": "l.json"},
                                   {"agent": "good", "path": "g.json"}],
              "alone": [True, False], "regressed": [False, False]}
    assert correction_line(matrix) == "m = 10 tests; alone, #1 lazy would be: regressed"


@pytest.mark.parametrize("name", ["tokens_total", "tokens_per_success"])
def test_a_token_figure_the_summary_leaves_null_is_null_in_the_gate_too(name: str) -> None:
    from agent_eval.report.gate_stats import build_stat
    from agent_eval.score.metrics import summarize

    # One run's prompt tokens are null (an invalid count) while its cost is known: the summary's sums of
    # tokens are null, and so is the gate's statistic (it used to add the null as 0 and gate 140 + 120).
    report = make_report({"a": [True, False], "b": [True]})
    report["cases"][0]["runs"][1]["metrics"]["prompt_tokens"] = None
    assert summarize(report["cases"], 2)[name] is None
    assert build_stat(name, [c["runs"] for c in report["cases"]], 2).is_null


def test_loop_rate_counts_the_runs_where_has_loop_is_recorded() -> None:
    from agent_eval.report.gate_stats import build_stat
    from agent_eval.score.metrics import summarize

    # has_loop: True, False, and null (not recorded: a hand-made report), so loop_rate = 1 / 2 = 0.5 in the
    # summary and the gate alike (a share over every run, 1 / 3, was the summary's rule before the table).
    report = make_report({"a": [True, True], "b": [True]})
    for run, flag in zip([r for c in report["cases"] for r in c["runs"]], [True, False, None], strict=True):
        run["metrics"]["has_loop"] = flag
    assert summarize(report["cases"], 2)["loop_rate"] == 0.5
    stat = build_stat("loop_rate", [c["runs"] for c in report["cases"]], 2)
    assert (list(stat.num), list(stat.den)) == ([1.0, 0.0], [2.0, 0.0])


def test_recovery_rate_s_gate_counts_recoveries_among_the_runs_with_a_tool_error_only() -> None:
    from agent_eval.report.gate_stats import build_stat
    from agent_eval.score.metrics import summarize

    # (tool_errors, recovered): (1, True), (0, True), (2, False): 1 recovery among 2 runs with an error = 0.5;
    # the (0, True) run counts in neither part (the gate's numerator counted it before the table: 2 / 2).
    report = make_report({"a": [True, True, False]})
    for run, (errors, recovered) in zip(report["cases"][0]["runs"], [(1, True), (0, True), (2, False)], strict=True):
        run["metrics"].update(tool_errors=errors, recovered=recovered)
    assert summarize(report["cases"], 3)["recovery_rate"] == 0.5
    stat = build_stat("recovery_rate", [report["cases"][0]["runs"]], 3)
    assert (list(stat.num), list(stat.den)) == ([1.0], [2.0])


def test_an_unknown_gate_says_a_plugin_s_metric_needs_its_plugin() -> None:
    from agent_eval.report.gate import parse_gate_spec
    from agent_eval.report.model import ReportError

    # `--gate answer_words` of a report made with a plugin, compared without it: the list alone did not say why.
    with pytest.raises(ReportError) as refused:
        parse_gate_spec("answer_words=0.5")
    assert str(refused.value).startswith("--gate answer_words: unknown metric; gateable metrics are pass_at_1, ")
    assert str(refused.value).endswith("(a plugin's metric, with its plugin loaded: its package, or "
                                       "AGENT_EVAL_PLUGINS).")
