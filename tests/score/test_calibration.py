"""Calibration math and the labels file: every figure computed by hand from docs/judge.md's definitions."""
from __future__ import annotations

import numpy as np
import pytest

from agent_eval.score.calibration import Pair, calibrate, exit_code, kappa_interval, kappa_of, report_verdicts
from agent_eval.score.labels import Label, LabelsError, parse_labels

pytestmark = pytest.mark.unit


def test_kappa_by_hand():
    # tp 4, fn 1, fp 2, tn 3: n = 10, po = 7/10; human passes h = 5, judge passes j = 6;
    # pe = (5*6 + 5*4) / 100 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    assert kappa_of(4, 1, 2, 3) == pytest.approx(0.4)
    # perfect agreement: po = 1, pe = (2*2 + 2*2)/16 = 0.5 -> kappa 1
    assert kappa_of(2, 0, 0, 2) == 1.0
    # one class on the human side (no human fail): null
    assert kappa_of(3, 1, 0, 0) is None
    # one class on the judge side (the judge always passes): null
    assert kappa_of(3, 0, 2, 0) is None
    # tp 1, fn 2, fp 2, tn 1: po = 2/6; h = 3, j = 3; pe = (9 + 9)/36 = 0.5; kappa = (1/3 - 1/2)/(1/2) = -1/3
    assert kappa_of(1, 2, 2, 1) == pytest.approx(-1 / 3)


def pairs(*rows):
    return [Pair(f"c{i}", 0, "rubric", h, j, None, None, None) for i, (h, j) in enumerate(rows)]


def test_kappa_interval_is_seeded_reproducible_and_holds_the_point():
    ps = pairs(*([(True, True)] * 4 + [(True, False)] + [(False, True)] * 2 + [(False, False)] * 3))
    low, high = kappa_interval(ps)
    assert kappa_interval(ps) == [low, high]
    assert low <= 0.4 <= high and low < high
    # The same by a loop over the same index matrix, dropping one-class resamples.
    idx = np.random.default_rng(0).integers(0, 10, size=(2000, 10))
    values = []
    for row in idx:
        chosen = [ps[i] for i in row]
        t = {"tp": 0, "fn": 0, "fp": 0, "tn": 0}
        for p in chosen:
            t[{(True, True): "tp", (True, False): "fn", (False, True): "fp", (False, False): "tn"}[
                (p.human_pass, p.judge_pass)]] += 1
        k = kappa_of(t["tp"], t["fn"], t["fp"], t["tn"])
        if k is not None:
            values.append(k)
    assert [low, high] == pytest.approx(list(np.percentile(values, [2.5, 97.5])))


def test_kappa_interval_of_one_class_is_null():
    assert kappa_interval(pairs((True, True), (True, False))) is None
    assert kappa_interval([]) is None


def label(case_id, trial, value, criterion="rubric", run_id="R", note=None, line=0):
    return Label(run_id=run_id, case_id=case_id, trial=trial, label=value, criterion=criterion, note=note, line=line)


def report():
    """Three cases of two trials; b#1 has no verdict; case c is judged on both criteria."""
    def run(trial, rubric, outcome=None):
        return {"trial": trial, "judge": rubric and {"verdict": rubric, "reason": f"said {rubric}"},
                "judge_expected_outcome": outcome and {"verdict": outcome, "reason": "outcome " + outcome}}
    return {"run_id": "R", "cases": [
        {"id": "a", "runs": [run(1, "FAIL"), run(0, "PASS")]},
        {"id": "b", "runs": [run(0, "PASS"), run(1, None)]},
        {"id": "c", "runs": [run(0, "PASS", "PASS"), run(1, "FAIL", "PASS")]},
    ]}


def test_calibrate_by_hand():
    order, verdicts = report_verdicts(report())
    assert order == [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("c", 0), ("c", 1)]
    labels = [
        label("c", 1, "fail", "expected_outcome", note="refund never made", line=1),  # judge PASS: disagree
        label("a", 0, "pass", line=2),  # judge PASS
        label("a", 1, "pass", note="it did refund", line=3),  # judge FAIL: disagree
        label("b", 0, "fail", line=4),  # judge PASS: disagree
        label("b", 1, "pass", line=5),  # no verdict
        label("c", 0, "pass", line=6),  # judge PASS
        label("c", 1, "fail", line=7),  # judge FAIL
        label("c", 0, "pass", "expected_outcome", line=8),  # judge PASS
        label("z", 0, "pass", line=9),  # no such case
        label("a", 0, "fail", run_id="OTHER", line=10),
    ]
    doc = calibrate("R", order, verdicts, labels)
    # overall: a0 (P,P) tp, a1 (P,F) fn, b0 (F,P) fp, c0 (P,P) tp, c0 outcome (P,P) tp, c1 (F,F) tn,
    # c1 outcome (F,P) fp -> tp 3, fn 1, fp 2, tn 1; n = 7; agreement 4/7
    overall = doc["overall"]
    assert overall["confusion"] == {"tp": 3, "fn": 1, "fp": 2, "tn": 1}
    assert overall["n"] == 7 and overall["agreement"] == pytest.approx(4 / 7)
    # h = 4, j = 5: pe = (4*5 + 3*2)/49 = 26/49; po = 28/49; kappa = (28/49 - 26/49)/(23/49) = 2/23
    assert overall["kappa"] == pytest.approx(2 / 23)
    assert overall["tpr"] == pytest.approx(3 / 4) and overall["tnr"] == pytest.approx(1 / 3)
    # rubric: a0 tp, a1 fn, b0 fp, c0 tp, c1 tn -> tp 2, fn 1, fp 1, tn 1; n 5, agreement 3/5;
    # h = 3, j = 3: pe = (9 + 4)/25 = 13/25; kappa = (15/25 - 13/25)/(12/25) = 1/6
    rubric = doc["criteria"]["rubric"]
    assert rubric["confusion"] == {"tp": 2, "fn": 1, "fp": 1, "tn": 1}
    assert rubric["kappa"] == pytest.approx(1 / 6) and rubric["agreement"] == pytest.approx(3 / 5)
    assert rubric["tpr"] == pytest.approx(2 / 3) and rubric["tnr"] == pytest.approx(1 / 2)
    # expected_outcome: c0 tp, c1 fp: the judge has one class -> kappa null
    outcome = doc["criteria"]["expected_outcome"]
    assert outcome["confusion"] == {"tp": 1, "fn": 0, "fp": 1, "tn": 0}
    assert outcome["kappa"] is None and outcome["kappa_ci"] is None and outcome["tnr"] == 0.0
    # disagreements in report order: a1, b0, then c1's expected_outcome
    assert [(d["case_id"], d["trial"], d["criterion"]) for d in doc["disagreements"]] == [
        ("a", 1, "rubric"), ("b", 0, "rubric"), ("c", 1, "expected_outcome")]
    assert doc["disagreements"][0] == {"case_id": "a", "trial": 1, "criterion": "rubric", "label": "pass",
                                       "note": "it did refund", "verdict": "FAIL", "reason": "said FAIL"}
    assert doc["disagreements"][2]["note"] == "refund never made"
    assert [(x["case_id"], x["trial"]) for x in doc["no_verdict"]] == [("b", 1)]
    assert [x["case_id"] for x in doc["unknown_runs"]] == ["z"]
    assert [(x["run_id"], x["case_id"]) for x in doc["other_run"]] == [("OTHER", "a")]
    assert exit_code(doc, 0.6) == 1  # 2/23 < 0.6
    assert exit_code(doc, 0.05) == 0


def test_exit_2_when_kappa_is_null():
    order, verdicts = report_verdicts(report())
    doc = calibrate("R", order, verdicts, [label("a", 0, "pass"), label("c", 0, "pass")])
    assert doc["overall"]["kappa"] is None and exit_code(doc, 0.6) == 2


def test_labels_last_line_wins_and_defaults():
    data = b"\n".join([
        b'{"run_id": "R", "case_id": "a", "trial": 0, "label": "fail"}',
        b'',
        b'{"run_id": "R", "case_id": "a", "trial": 0, "label": "pass", "criterion": "expected_outcome"}',
        b'{"run_id": "R", "case_id": "a", "trial": 0, "label": "pass", "note": "second thoughts"}',
        b'{"run_id": "R", "case_id": "a", "trial": 0, "label": "fail", "labeler": "ann"}',
    ])
    labels = parse_labels(data, "x.jsonl")
    # (R, a, 0, rubric, None) twice: line 4 wins; expected_outcome and labeler ann are their own keys
    assert [(lab.criterion, lab.label, lab.labeler, lab.note) for lab in labels] == [
        ("expected_outcome", "pass", None, None), ("rubric", "pass", None, "second thoughts"),
        ("rubric", "fail", "ann", None)]


@pytest.mark.parametrize("line, words", [
    (b'not json', "line 2 is not JSON"),
    (b'[1, 2]', "line 2 is not a label: it is not a JSON object"),
    (b'{"run_id": "R", "case_id": "a", "trial": 0, "label": "maybe"}', '"label" must be "pass" or "fail"'),
    (b'{"run_id": "R", "case_id": "a", "trial": -1, "label": "pass"}', '"trial" must be a whole number'),
    (b'{"run_id": "R", "case_id": "a", "trial": true, "label": "pass"}', '"trial" must be a whole number'),
    (b'{"case_id": "a", "trial": 0, "label": "pass"}', '"run_id" must be a non-empty string'),
    (b'{"run_id": "R", "case_id": "a", "trial": 0, "label": "pass", "criterion": "tone"}', '"criterion" must be'),
    (b'{"run_id": "R", "case_id": "a", "trial": 0, "label": "pass", "note": 3}', '"note" must be a string'),
])
def test_a_malformed_line_is_named_by_its_number(line, words):
    good = b'{"run_id": "R", "case_id": "a", "trial": 0, "label": "pass"}'
    with pytest.raises(LabelsError) as exc:
        parse_labels(good + b"\n" + line + b"\n" + good, "labels.jsonl")
    assert words in str(exc.value) and "labels.jsonl" in str(exc.value)
