"""The gate's false-alarm rate and power on simulated report pairs (docs/ci.md, "What the gate does").

50 cases, k = 3, per-case success probabilities from Beta(2,1), uniform, Beta(0.5,0.5) or a constant 0.9;
PAIRS pairs each with nothing changed (false alarms), and with every case 25 points worse (power).
Run: .venv/bin/python bench/gate_false_alarms.py [PAIRS]
"""
from __future__ import annotations

import sys

import numpy as np

from agent_eval.report.gate import compare_reports
from tests.builders import make_report

DRAWS = {"Beta(2,1)": lambda rng, n: rng.beta(2, 1, n), "uniform": lambda rng, n: rng.uniform(0, 1, n),
         "Beta(0.5,0.5)": lambda rng, n: rng.beta(0.5, 0.5, n), "constant 0.9": lambda rng, n: np.full(n, 0.9)}


def pair(rng: np.random.Generator, p: np.ndarray, drop: float, k: int = 3) -> tuple[dict, dict]:
    reports = []
    for prob in (p, np.clip(p - drop, 0, 1)):
        hits = rng.random((p.size, k)) < prob[:, None]
        recall = np.where(hits, 1.0, rng.choice([0.0, 0.5, 1.0], size=hits.shape))
        report = make_report({f"c{i}": list(hits[i]) for i in range(p.size)})
        for case, rec in zip(report["cases"], recall, strict=True):
            for run, r in zip(case["runs"], rec, strict=True):
                run["metrics"]["tool_recall"] = float(r)
        reports.append(report)
    return reports[0], reports[1]


def main(pairs: int) -> None:
    rng = np.random.default_rng(2026)
    for name, draw in DRAWS.items():
        alarms = sum(compare_reports(*pair(rng, draw(rng, 50), 0.0))["regression"] for _ in range(pairs))
        caught = sum(compare_reports(*pair(rng, draw(rng, 50), 0.25))["regression"] for _ in range(pairs))
        print(f"{name:14} false alarms {alarms / pairs:6.1%}   caught a 25-point drop {caught / pairs:6.1%}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
