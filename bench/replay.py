"""Replay against live: `agent-eval run --replay DIR` of the suite `--record DIR` recorded.

Usage: .venv/bin/python bench/replay.py [--cases 1000] [--latency-ms 50] [--repeats 2]

The overhead benchmark's suite and stateless router (a tool call, then a text answer: two completions
per case), served by the loopback server with `--latency-ms` on every reply, at the default
concurrency (8). It records the suite once (`--record`, live), then runs, interleaved `--repeats`
times: the plain live run, and the replay with the server's URL still given but no request reaching
it (checked: the server's count does not move, and the replay's summary has no miss). Each run is a
child process (start-up included). It prints each wall and CPU time, the medians, and replay/live.
The target (section 22): replay wall at most half the live wall. See bench/README.md.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import answer, child_env, runner_command, timed, write_suite
from tests.loopback import LoopbackServer


def run(label: str, srv: LoopbackServer, cases_path: Path, out: Path, extra: list[str]) -> dict:
    command = [*(runner_command() or []), "run", "--cases", str(cases_path), "--agent", "openai", "--model",
               "bench", "--base-url", srv.base_url, "--output-dir", str(out), "--quiet", "--no-html", *extra]
    before = srv.count
    result = timed(command, child_env(), limit_s=900)
    served = srv.count - before
    print(f"  {label:8} {result['wall_s']:7.2f} s wall  {result['cpu_s']:6.2f} s CPU  "
          f"{result['rss_mib']:6.1f} MiB  exit {result['code']}  {served} requests served", flush=True)
    if result["code"] != 0:
        print(result["tail"], file=sys.stderr)
        raise SystemExit(1)
    return {**result, "served": served}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, LoopbackServer(answer, latency_s=args.latency_ms / 1000,
                                                              keep_requests=False) as srv:
        folder = Path(tmp)
        cases_path = write_suite(folder, args.cases)
        tape = folder / "tape"
        print(f"{args.cases} cases x 2 completions, {args.latency_ms:g} ms a reply, concurrency 8 "
              f"(floor {args.cases * 2 * args.latency_ms / 1000 / 8:.1f} s live)")
        recorded = run("record", srv, cases_path, folder / "out", ["--record", str(tape)])
        assert recorded["served"] == 2 * args.cases, recorded["served"]
        rows: dict[str, list[dict]] = {"live": [], "replay": []}
        for _ in range(args.repeats):
            rows["live"].append(run("live", srv, cases_path, folder / "out", []))
            replayed = run("replay", srv, cases_path, folder / "out", ["--replay", str(tape)])
            assert replayed["served"] == 0, "a replayed request reached the server"
            report = max((folder / "out").glob("*.json"), key=lambda p: p.stat().st_mtime)
            counts = orjson.loads(report.read_bytes())["summary"]["replay"]
            assert counts["hits"] == 2 * args.cases and counts["misses"] == 0, counts
            rows["replay"].append(replayed)
        live = statistics.median(r["wall_s"] for r in rows["live"])
        replay = statistics.median(r["wall_s"] for r in rows["replay"])
        print(f"medians: live {live:.2f} s wall ({statistics.median(r['cpu_s'] for r in rows['live']):.2f} s CPU), "
              f"replay {replay:.2f} s wall ({statistics.median(r['cpu_s'] for r in rows['replay']):.2f} s CPU)")
        print(f"replay / live wall: {replay / live:.3f} (target: at most 0.5)")
        return 0 if replay <= live / 2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
