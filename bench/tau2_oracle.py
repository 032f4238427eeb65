"""The tau2 oracle and agent-eval's own time per tau2 case.

    python bench/tau2_oracle.py [--domain airline] [--domain retail] [--keep DIR]

For each domain: a fresh `agent-eval bench import tau2` of every task (tau2's own evaluator grades each gold at
import), then `agent-eval run --agent gold --user gold --no-judge`, which must pass every case. The gold agent
and user are scripted (no model), so the run's time is agent-eval's own: the tools, a database per run, the
snapshots, the gold replay and the checks. Per case = (time of the whole run - time of a one-case run) /
(cases - 1), which takes out the start-up both pay (importing tau2, reading and validating db.json once).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "agent_eval.cli"]


def _timed(args: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall and CPU (user + system) seconds of `agent-eval ARGS` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(CLI + args, capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def oracle(domain: str, work: Path, cases: Path | None = None) -> dict[str, object]:
    wall_import = 0.0
    if cases is None:
        suite = work / f"tau2-{domain}"
        wall_import, _, done = _timed(["bench", "import", "tau2", "--domain", domain, "--out", str(suite)])
        if done.returncode != 0:
            raise SystemExit(done.stdout + done.stderr)
        cases = suite / "cases.json"
    ids = [case["id"] for case in json.loads(cases.read_text())["cases"]]
    alone = next(i for i in reversed(ids) if sum(i in other for other in ids + ["tau2", domain]) == 1)
    run = ["run", "--cases", str(cases), "--agent", "gold", "--user", "gold", "--no-judge", "--quiet", "--no-html"]
    wall_one, cpu_one, _ = _timed(run + ["--filter", alone, "--output-dir", str(work / f"{domain}-one")])
    wall_all, cpu_all, done = _timed(run + ["--output-dir", str(work / f"{domain}-all")])
    report = json.loads(next((work / f"{domain}-all").glob("*.json")).read_text())
    statuses = [row["status"] for row in report["cases"]]
    n = len(statuses)
    return {"domain": domain, "cases": n, "passed": statuses.count("passed"), "exit": done.returncode,
            "import_s": round(wall_import, 1), "run_all_s": round(wall_all, 2), "run_one_s": round(wall_one, 2),
            "per_case_wall_s": round((wall_all - wall_one) / max(1, n - 1), 4),
            "per_case_cpu_s": round((cpu_all - cpu_one) / max(1, n - 1), 4)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", action="append", choices=["airline", "retail"])
    parser.add_argument("--keep", type=Path, help="write the suites and reports here (default: a temporary folder)")
    parser.add_argument("--cases", type=Path, help="time this imported suite (of the one --domain) instead")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="tau2-oracle-"))
    work.mkdir(parents=True, exist_ok=True)
    failed = False
    for domain in args.domain or ["airline", "retail"]:
        result = oracle(domain, work, args.cases)
        print(json.dumps(result), flush=True)
        failed |= result["passed"] != result["cases"]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
