"""How long does `agent-eval` take to start? The whole process, from exec to exit, median of N.

Usage: .venv/bin/python bench/startup.py [--repeats 10]

Five commands run as child processes, interleaved (one of each, then again, `--repeats` times), so a
change of machine load hits all alike:
  help       agent-eval --help
  version    agent-eval --version
  validate   agent-eval validate --cases cases/test_cases.json   (the demo suite)
  openai     python -c "import openai"                            (the floor of the next one)
  run        agent-eval run --agent openai on a one-case suite, against a loopback server in this process
One round is run first and not counted: it writes the bytecode caches (__pycache__) as a user's first
start does (PYTHONDONTWRITEBYTECODE is dropped from the children's environment). For each: the median
wall time and the median CPU time (user + system of the child, from os.wait4; less
sensitive to other load). The budgets (bench/README.md): help and version <= 0.20 s, validate <= 0.35 s,
run <= openai + 0.40 s, and run <= 1.6 x openai where openai is over 0.5 s. Exit 1 when a median is over
its budget.

`--against DIR` (another checkout, a `git worktree` of the commit to compare with) also runs help,
version, validate and run with DIR's agent_eval, interleaved with this tree's, and prints both.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.harness import answer, child_env, runner_command, timed, write_suite  # noqa: E402
from tests.loopback import LoopbackServer  # noqa: E402

BUDGETS = {"help": 0.20, "version": 0.20, "validate": 0.35}
RUN_OVER_OPENAI = 0.40
RUN_TIMES_OPENAI, SLOW_IMPORT_S = 1.6, 0.5  # run <= 1.6 x openai wherever openai is over 0.5 s


def commands(cli: list[str], base_url: str, folder: Path) -> dict[str, list[str]]:
    cases = write_suite(folder, 1)
    return {
        "help": [*cli, "--help"],
        "version": [*cli, "--version"],
        "validate": [*cli, "validate", "--cases", str(ROOT / "cases" / "test_cases.json")],
        "openai": [sys.executable, "-c", "import openai"],
        "run": [*cli, "run", "--cases", str(cases), "--agent", "openai", "--model", "bench", "--base-url", base_url,
                "--no-judge", "--no-html", "--quiet", "--output-dir", str(folder / "reports")],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--against", type=Path, help="another tree, run interleaved with this one")
    options = parser.parse_args()
    cli = runner_command()
    if cli is None:
        print("agent-eval is not installed: make .venv/.installed", file=sys.stderr)
        return 2
    load_before = _load()
    env = child_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    server = LoopbackServer(answer).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            todo = {name: (command, env) for name, command in commands(cli, server.base_url, Path(tmp)).items()}
            if options.against is not None:
                other = {**env, "PYTHONPATH": str(options.against.resolve())}
                todo.update({f"{name}@other": (command, other) for name, command
                             in commands(cli, server.base_url, Path(tmp)).items() if name != "openai"})
            samples: dict[str, list[dict]] = {name: [] for name in todo}
            for round_ in range(options.repeats + 1):
                for name, (command, child) in todo.items():
                    result = timed(command, child, limit_s=60)
                    if round_ == 0:
                        continue  # the warm-up: bytecode written
                    if result["code"] not in (0, 1):
                        print(f"{name}: exit {result['code']}\n{result['tail']}", file=sys.stderr)
                        return 2
                    samples[name].append(result)
    finally:
        server.stop()
    wall = {name: statistics.median(s["wall_s"] for s in runs) for name, runs in samples.items()}
    cpu = {name: statistics.median(s["cpu_s"] for s in runs) for name, runs in samples.items()}
    run_budget = wall["openai"] + RUN_OVER_OPENAI
    if wall["openai"] > SLOW_IMPORT_S:
        run_budget = min(run_budget, RUN_TIMES_OPENAI * wall["openai"])
    budgets = {**BUDGETS, "run": run_budget}
    over = False
    print(f"{'command':<16} {'wall (median)':>14} {'cpu (median)':>13} {'budget':>8}")
    for name in todo:
        limit = budgets.get(name)
        verdict = "" if limit is None else ("ok" if wall[name] <= limit else "OVER")
        over = over or verdict == "OVER"
        shown = "" if limit is None else f"{limit:.3f}"
        print(f"{name:<16} {wall[name]:>13.3f}s {cpu[name]:>12.3f}s {shown:>8} {verdict}")
    for run in [name for name in todo if name.startswith("run")]:
        print(f"{run} - openai: {wall[run] - wall['openai']:.3f} s wall, {cpu[run] - cpu['openai']:.3f} s cpu "
              f"(budget {RUN_OVER_OPENAI} s); {wall[run] / wall['openai']:.2f}x the import "
              f"(budget {RUN_TIMES_OPENAI}x where the import is over {SLOW_IMPORT_S} s)")
    print(f"{options.repeats} repeats; load average before {load_before}, after {_load()}")
    return 1 if over else 0


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
