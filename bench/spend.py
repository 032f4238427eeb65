"""What `plan` and `--max-cost` cost (docs/budgets-and-decisions.md).

1. `plan` on reports of 20, 50 and 100 cases (k = 3, per-case rates from Beta(2,1)): wall and CPU time of
   the 18 designs x 1,000 simulated pairs.
2. `run --max-cost` against the same run without it: a Python agent recording 1,000 + 500 priced tokens
   per run, no model call, RUNS runs at --concurrency 8, interleaved REPEATS times; the budget is never
   reached, so the difference is the bookkeeping (the spend read as each run finishes).
Run: PYTHONPATH=. .venv/bin/python bench/spend.py [RUNS] [REPEATS]
"""
from __future__ import annotations

import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console

from agent_eval.commands.run import run_command
from agent_eval.report.plan import case_rates, plan
from tests.builders import flags_of, make_report, write_suite

AGENT = '''
def agent(task):
    task.record_usage(1000, 500, model="m")
    return "ok"
'''


def bench_plan() -> None:
    rng = np.random.default_rng(5)
    for cases in (20, 50, 100):
        p = rng.beta(2, 1, cases)
        report = make_report({f"c{i}": list(rng.random(3) < p[i]) for i in range(cases)})
        wall, cpu = time.perf_counter(), time.process_time()
        result = plan(case_rates(report), 0.05, 0.8, 0.001)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        best = result["cheapest"]
        shown = f"k={best['repeat']} x {best['cases']} cases" if best else "none"
        print(f"plan, {cases:3} cases: wall {wall:5.2f} s, CPU {cpu:5.2f} s; cheapest for a 0.05 drop: {shown}")


def one_run(folder: Path, cases: Path, max_cost: float | None) -> tuple[float, float]:
    flags = {"cases": cases, "output_dir": folder / "out", "quiet": True, "no_html": True, "concurrency": 8}
    if max_cost is not None:
        flags["max_cost"] = max_cost
    quiet = Console(file=io.StringIO())
    wall, cpu = time.perf_counter(), time.process_time()
    code = run_command(flags_of(**flags), quiet, quiet)
    assert code == 0, code
    return time.perf_counter() - wall, time.process_time() - cpu


def bench_budget(runs: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rows = [{"id": f"c{i}", "query": "go", "expect": {"contains": "ok"}} for i in range(runs)]
        pricing = {"m": {"input_per_mtok": 2.0, "output_per_mtok": 10.0}}
        block = {"name": "spend", "agent": "agent.py:agent", "pricing": pricing}
        cases = write_suite(folder / "suite", rows, block, {"agent.py": AGENT})
        one_run(folder, cases, None)  # warm-up: imports
        times: dict[str, list[tuple[float, float]]] = {"without": [], "with --max-cost": []}
        for _ in range(repeats):
            times["without"].append(one_run(folder, cases, None))
            times["with --max-cost"].append(one_run(folder, cases, 1e6))
        for name, got in times.items():
            print(f"{runs} runs {name:16}: median wall {statistics.median(w for w, _ in got):.2f} s, "
                  f"median CPU {statistics.median(c for _, c in got):.2f} s")


if __name__ == "__main__":
    bench_plan()
    bench_budget(int(sys.argv[1]) if len(sys.argv) > 1 else 2000, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
