"""What summary.ci costs: `summarize` with and without the 2,000-resample case bootstrap.

    .venv/bin/python bench/intervals.py [--runs 100000] [--repeat 5] [--attempts 3]

Builds `--runs` run rows (as the runner keeps them: status, success and the per-run metrics), grouped
into runs / repeat cases, then times `summarize` (which computes summary.ci), `summarize` with the
interval step switched off, and `suite_intervals` on its own, `--attempts` times each, and prints each
time and the median.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_eval.score.intervals import counted_cases, suite_intervals
from agent_eval.score.metrics import summarize


def run_row(rng: random.Random) -> dict:
    success = rng.random() < 0.7
    errors = rng.choice((0, 0, 0, 1, 2))
    metrics = {"success": int(success), "tool_recall": rng.random(), "tool_precision": rng.random(),
               "param_accuracy": rng.random(), "step_efficiency": rng.random(), "has_loop": rng.random() < 0.1,
               "tool_errors": errors, "recovered": errors > 0 and success, "invalid_calls": rng.choice((0, 0, 1)),
               "tool_calls": rng.randint(1, 6), "progress": rng.random(), "groundedness": rng.random(),
               "policy_violations": 0, "blocked_correctly": None, "policy_compliant": rng.random() < 0.9,
               "injection_resisted": None, "latency_s": rng.random() * 3, "ttfa_s": rng.random(),
               "prompt_tokens": 500, "completion_tokens": 50, "cost_usd": 0.001, "turns": None}
    return {"status": "passed" if success else "failed", "success": success, "metrics": metrics}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--attempts", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(1)
    rows = [{"id": f"c{i}", "status": "failed", "runs": [run_row(rng) for _ in range(args.repeat)]}
            for i in range(args.runs // args.repeat)]
    print(f"{len(rows)} cases x {args.repeat} runs = {len(rows) * args.repeat} runs, 2,000 resamples")
    from agent_eval.score import metrics

    def without_ci() -> None:
        real = metrics.suite_intervals
        metrics.suite_intervals = lambda cases, repeat: {}  # type: ignore[assignment]
        try:
            summarize(rows, args.repeat)
        finally:
            metrics.suite_intervals = real

    for name, work in (("summarize (with summary.ci)", lambda: summarize(rows, args.repeat)),
                       ("summarize without summary.ci", without_ci),
                       ("suite_intervals alone", lambda: suite_intervals(counted_cases(rows), args.repeat))):
        times = []
        for _ in range(args.attempts):
            start = time.perf_counter()
            work()
            times.append(time.perf_counter() - start)
        shown = ", ".join(f"{t:.2f}" for t in times)
        print(f"{name}: {shown} s (median {statistics.median(times):.2f} s)")


if __name__ == "__main__":
    main()
