"""The pytest plugin against `agent-eval run`: the same suite, the same model latency, the same concurrency.

Usage: .venv/bin/python bench/pytest_plugin.py [--cases 50] [--latency-ms 50] [--concurrency 10] [--repeats 3]

The overhead benchmark's suite and stateless router (a tool call, then a text answer: two completions per
case), served by the loopback server with `--latency-ms` on every reply. Interleaved `--repeats` times:
`agent-eval run` and `pytest --agent-eval` on it, each a child process (start-up included), with the
`openai` agent at `--concurrency`. pytest loads only this plugin (PYTEST_DISABLE_PLUGIN_AUTOLOAD, then
`-p agent_eval.pytest_plugin`): other installed plugins are not ours to time. For pytest it also reads
the first item's setup time (`--durations`), which is where the plugin plays every case. It prints each
wall and CPU time and the medians. The target: pytest takes about what `run` takes, not
the cases' latencies one after another (cases x 2 x latency). See bench/README.md.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import answer, child_env, runner_command, timed, write_suite
from tests.loopback import LoopbackServer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=50)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, LoopbackServer(answer, latency_s=args.latency_ms / 1000,
                                                              keep_requests=False) as srv:
        folder = Path(tmp)
        cases = write_suite(folder, args.cases)
        agent = ["openai", "bench", srv.base_url]
        run_cmd = [*(runner_command() or []), "run", "--cases", str(cases), "--agent", agent[0], "--model", agent[1],
                   "--base-url", agent[2], "--concurrency", str(args.concurrency), "--quiet",
                   "--output-dir", str(folder / "run")]
        pytest_cmd = [sys.executable, "-m", "pytest", str(cases), "-p", "agent_eval.pytest_plugin",
                      "-p", "no:cacheprovider", "-q", "--durations=1",
                      "--durations-min=0", "--rootdir", str(folder), "-c", str(folder / "pytest.ini"),
                      "--agent-eval", str(cases), "--agent-eval-agent", agent[0], "--agent-eval-model", agent[1],
                      "--agent-eval-base-url", agent[2], "--agent-eval-concurrency", str(args.concurrency),
                      "--agent-eval-output-dir", str(folder / "pytest")]
        (folder / "pytest.ini").write_text("[pytest]\n")
        completions = args.cases * 2
        print(f"{args.cases} cases x 2 completions, {args.latency_ms:g} ms a reply, concurrency {args.concurrency}: "
              f"floor {completions * args.latency_ms / 1000 / args.concurrency:.2f} s, "
              f"in sequence {completions * args.latency_ms / 1000:.2f} s")
        rows: dict[str, list[dict]] = {"run": [], "pytest": []}
        for _ in range(args.repeats):
            for label, command in (("run", run_cmd), ("pytest", pytest_cmd)):
                before = srv.count
                # Only this plugin: other installed ones (langsmith's takes 2.5 s to import) are not ours to time.
                env = child_env() if label == "run" else {**child_env(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
                result = timed(command, env, limit_s=600)
                served = srv.count - before
                setup = re.search(r"([\d.]+)s setup", result["tail"])
                result["play_s"] = float(setup.group(1)) if setup else None
                shown = f"  play {result['play_s']:.2f} s" if result["play_s"] is not None else ""
                print(f"  {label:7} {result['wall_s']:6.2f} s wall  {result['cpu_s']:5.2f} s CPU  exit "
                      f"{result['code']}  {served} requests{shown}", flush=True)
                if result["code"] != 0 or served != completions:
                    print(result["tail"], file=sys.stderr)
                    return 1
                rows[label].append(result)
        run_wall = statistics.median(r["wall_s"] for r in rows["run"])
        pytest_wall = statistics.median(r["wall_s"] for r in rows["pytest"])
        play = statistics.median(r["play_s"] for r in rows["pytest"] if r["play_s"] is not None)
        print(f"median wall: run {run_wall:.2f} s, pytest {pytest_wall:.2f} s "
              f"(pytest/run {pytest_wall / run_wall:.2f}); "
              f"pytest's play (first item's setup) {play:.2f} s; "
              f"CPU run {statistics.median(r['cpu_s'] for r in rows['run']):.2f} s, "
              f"pytest {statistics.median(r['cpu_s'] for r in rows['pytest']):.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
