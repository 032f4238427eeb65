"""Calibration: the judge's verdicts against human labels (docs/judge.md, "Calibrating the judge").

Per criterion and overall: n, agreement, Cohen's kappa with a 95% percentile-bootstrap interval, the
true-positive and true-negative rates, the 2x2 confusion matrix (positive = pass), and every
disagreement. Labels of another run, of no run of the report, or of a run without a usable verdict are
listed apart and never used.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agent_eval.errors import EXIT_ERROR, EXIT_FAILED, EXIT_PASSED
from agent_eval.score.labels import CRITERIA, Label

RESAMPLES = 2000
SEED = 0

Verdict = tuple[str, str | None]
"""A usable judge verdict: ("PASS" | "FAIL", its reason)."""
RunKey = tuple[str, int]
"""(case id, trial) of a run of the report."""


@dataclass(frozen=True)
class Pair:
    """One labelled run's criterion: the human label beside the judge's verdict."""

    case_id: str
    trial: int
    criterion: str
    human_pass: bool
    judge_pass: bool
    note: str | None
    labeler: str | None
    reason: str | None


def kappa_of(tp: int, fn: int, fp: int, tn: int) -> float | None:
    """Cohen's kappa of the 2x2 table; None when either side has only one class.

    With n = tp+fn+fp+tn, h = human passes and j = judge passes: kappa = (po - pe) / (1 - pe), where
    po = (tp+tn)/n and pe = (h*j + (n-h)*(n-j))/n^2, computed as one ratio of integers.
    """
    n = tp + fn + fp + tn
    h, j = tp + fn, tp + fp
    if h in (0, n) or j in (0, n):
        return None
    chance = h * j + (n - h) * (n - j)
    return (n * (tp + tn) - chance) / (n * n - chance)


def confusion(pairs: Sequence[Pair]) -> dict[str, int]:
    """{tp, fn, fp, tn}; tp is human pass and judge pass."""
    out = {"tp": 0, "fn": 0, "fp": 0, "tn": 0}
    for p in pairs:
        out[("t" if p.human_pass == p.judge_pass else "f") + ("p" if p.judge_pass else "n")] += 1
    return out


def kappa_interval(pairs: Sequence[Pair], resamples: int = RESAMPLES, seed: int = SEED) -> list[float] | None:
    """[low, high]: the 2.5th and 97.5th percentiles of kappa over resamples of the pairs, in their order
    (idx = default_rng(seed).integers(0, n, (resamples, n))); a resample with one class on either side
    is dropped; None when every resample is."""
    n = len(pairs)
    if n == 0:
        return None
    human = np.asarray([p.human_pass for p in pairs], dtype=np.int64)
    judge = np.asarray([p.judge_pass for p in pairs], dtype=np.int64)
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    h, j = human[idx], judge[idx]
    tp = (h & j).sum(axis=1)
    tn = ((1 - h) & (1 - j)).sum(axis=1)
    hs, js = h.sum(axis=1), j.sum(axis=1)
    kept = (hs > 0) & (hs < n) & (js > 0) & (js < n)
    if not kept.any():
        return None
    chance = hs * js + (n - hs) * (n - js)
    values = (n * (tp + tn) - chance)[kept] / (n * n - chance)[kept]
    low, high = np.percentile(values, [2.5, 97.5])
    return [float(low), float(high)]


def figures(pairs: Sequence[Pair]) -> dict[str, Any]:
    """{n, agreement, kappa, kappa_ci, tpr, tnr, confusion} of these pairs (nulls where undefined)."""
    table = confusion(pairs)
    tp, fn, fp, tn = table["tp"], table["fn"], table["fp"], table["tn"]
    n = len(pairs)
    return {
        "n": n,
        "agreement": (tp + tn) / n if n else None,
        "kappa": kappa_of(tp, fn, fp, tn),
        "kappa_ci": kappa_interval(pairs),
        "tpr": tp / (tp + fn) if tp + fn else None,
        "tnr": tn / (tn + fp) if tn + fp else None,
        "confusion": table,
    }


def _where(label: Label) -> dict[str, Any]:
    out: dict[str, Any] = {"run_id": label.run_id, "case_id": label.case_id, "trial": label.trial,
                           "criterion": label.criterion, "label": label.label, "line": label.line}
    if label.labeler is not None:
        out["labeler"] = label.labeler
    return out


def calibrate(run_id: str, run_order: Sequence[RunKey], verdicts: Mapping[tuple[str, int, str], Verdict | None],
              labels: Sequence[Label]) -> dict[str, Any]:
    """The calibration document: {"overall", "criteria", "disagreements", "other_run", "unknown_runs",
    "no_verdict"}.

    `run_order` lists the report's runs as (case id, trial), cases in report order and trials ascending;
    `verdicts` maps (case id, trial, criterion) to the usable verdict, or None when the run has none.
    """
    known = set(run_order)
    position = {key: i for i, key in enumerate(run_order)}
    other_run, unknown, no_verdict, used = [], [], [], []
    for label in labels:
        run = (label.case_id, label.trial)
        if label.run_id != run_id:
            other_run.append(_where(label))
        elif run not in known:
            unknown.append(_where(label))
        elif verdicts.get((label.case_id, label.trial, label.criterion)) is None:
            no_verdict.append(_where(label))
        else:
            used.append(label)
    # Report order: cases as in the report, trials ascending, rubric before expected_outcome.
    used.sort(key=lambda lab: (position[(lab.case_id, lab.trial)], CRITERIA.index(lab.criterion),
                               lab.labeler or "", lab.line))
    pairs = []
    for label in used:
        verdict, reason = verdicts[(label.case_id, label.trial, label.criterion)]  # type: ignore[misc]
        pairs.append(Pair(label.case_id, label.trial, label.criterion, label.is_pass, verdict == "PASS",
                          label.note, label.labeler, reason))
    disagreements = [{"case_id": p.case_id, "trial": p.trial, "criterion": p.criterion,
                      "label": "pass" if p.human_pass else "fail", "note": p.note,
                      **({"labeler": p.labeler} if p.labeler is not None else {}),
                      "verdict": "PASS" if p.judge_pass else "FAIL", "reason": p.reason}
                     for p in pairs if p.human_pass != p.judge_pass]
    return {
        "overall": figures(pairs),
        "criteria": {c: figures([p for p in pairs if p.criterion == c]) for c in CRITERIA},
        "disagreements": disagreements,
        "other_run": other_run,
        "unknown_runs": unknown,
        "no_verdict": no_verdict,
    }


def report_verdicts(report: Mapping[str, Any]) -> tuple[list[RunKey], dict[tuple[str, int, str], Verdict | None]]:
    """The report's runs in order (cases as listed, trials ascending) and each run's usable verdicts."""
    from agent_eval.score.judge import CRITERIA as JUDGED

    order: list[RunKey] = []
    verdicts: dict[tuple[str, int, str], Verdict | None] = {}
    for case in report.get("cases") or []:
        case_id = str(case.get("id"))
        for run in sorted(case.get("runs") or [], key=lambda r: r.get("trial") or 0):
            trial = run.get("trial")
            if not isinstance(trial, int):
                continue
            order.append((case_id, trial))
            for criterion in JUDGED:
                verdicts[(case_id, trial, criterion.field)] = usable_verdict(run.get(criterion.record))
    return order, verdicts


def usable_verdict(record: Any) -> Verdict | None:
    """(verdict, reason) of a judge record whose verdict is PASS or FAIL; None otherwise."""
    if isinstance(record, dict) and record.get("verdict") in ("PASS", "FAIL"):
        reason = record.get("reason")
        return record["verdict"], reason if isinstance(reason, str) else None
    return None


def exit_code(document: Mapping[str, Any], min_kappa: float) -> int:
    """2 when the overall kappa is null (one class on a side, or nothing labelled), 1 below min_kappa, else 0."""
    kappa = document["overall"]["kappa"]
    if kappa is None:
        return EXIT_ERROR
    return EXIT_FAILED if kappa < min_kappa else EXIT_PASSED
