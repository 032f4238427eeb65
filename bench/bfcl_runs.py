"""BFCL multi-turn through `agent-eval run`: the full oracle and agent-eval's own time per case.

    .venv/bin/python bench/bfcl_runs.py oracle      # each of the 4 categories imported fresh, all 200 gold runs
    .venv/bin/python bench/bfcl_runs.py speed [--repeats 3]

`oracle` imports every category into a new folder and runs `agent-eval run --agent gold --user gold
--no-judge` on it as a child process: every case must pass (exit 0), 200/200 per category.

`speed` times agent-eval's own work per case with a scripted agent and no model: the gold agent plays the
base category (200 cases, 734 turns, 1,142 calls of BFCL's own classes) in a child process; the figure is
the child's CPU time (user + system, os.wait4) less that of `agent-eval validate` on the same suite (the
start-up, the imports and loading the case file, paid once per command, not per case), divided by 200.
The CPU time is read first: with 2 cores shared, the wall time stretches with any other load.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.harness import child_env, runner_command, timed  # noqa: E402

CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")


def _cli() -> list[str]:
    command = runner_command()
    return command if command is not None else [sys.executable, "-m", "agent_eval.cli"]


def _import(category: str, folder: Path) -> Path:
    done = timed([*_cli(), "bench", "import", "bfcl", "--category", category, "--out", str(folder)], child_env(), 600)
    if done["code"] != 0:
        raise SystemExit(f"bench import {category} failed:\n{done['tail']}")
    return folder / "cases.json"


def _gold_command(cases: Path, out: Path) -> list[str]:
    return [*_cli(), "run", "--cases", str(cases), "--agent", "gold", "--user", "gold", "--no-judge", "--quiet",
            "--no-html", "--output-dir", str(out)]


def oracle() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for category in CATEGORIES:
            cases = _import(category, Path(tmp) / category)
            reports = Path(tmp) / f"{category}-reports"
            done = timed(_gold_command(cases, reports), child_env(), 1200)
            report = orjson.loads(next(reports.glob("*.json")).read_bytes()) if done["code"] in (0, 1) else {}
            passed = sum(1 for case in report.get("cases", []) if case["status"] == "passed")
            print(f"{category}: {passed}/{len(report.get('cases', []))} passed, exit {done['code']}, "
                  f"{done['wall_s']:.1f} s wall, {done['cpu_s']:.1f} s CPU", flush=True)
            if done["code"] != 0:
                print(done["tail"])


def speed(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cases = _import("multi_turn_base", Path(tmp) / "base")
        runs, floors = [], []
        for attempt in range(repeats):
            floor = timed([*_cli(), "validate", "--cases", str(cases)], child_env(), 600)
            done = timed(_gold_command(cases, Path(tmp) / f"reports-{attempt}"), child_env(), 1200)
            if done["code"] != 0 or floor["code"] != 0:
                raise SystemExit(f"a run failed:\n{done['tail']}\n{floor['tail']}")
            runs.append(done)
            floors.append(floor)
            print(f"run {attempt}: {done['wall_s']:.2f} s wall, {done['cpu_s']:.2f} s CPU; validate "
                  f"{floor['cpu_s']:.2f} s CPU; peak RSS {done['rss_mib']:.0f} MiB", flush=True)
        cpu = statistics.median(r["cpu_s"] for r in runs)
        start = statistics.median(f["cpu_s"] for f in floors)
        print(f"median: {cpu:.2f} s CPU for 200 cases, {start:.2f} s of it start-up and loading; "
              f"agent-eval's own time per case {(cpu - start) / 200 * 1000:.1f} ms CPU "
              f"({cpu / 200 * 1000:.1f} ms with the start-up)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("oracle", "speed"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    oracle() if args.what == "oracle" else speed(args.repeats)


if __name__ == "__main__":
    main()
