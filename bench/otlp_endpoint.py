"""What does `--otlp-endpoint` cost a run, and do the traces arrive while it runs?

    .venv/bin/python bench/otlp_endpoint.py [--cases 2000] [--repeats 3]

A suite of `--cases` cases played by a Python agent that answers at once (so the figure is agent-eval's
own cost per run, with no model in the way), at --concurrency 32, as a child process: without the flag,
with a loopback OTLP/HTTP collector in this process, with a collector that takes 50 ms per POST, and
with an endpoint nobody listens on. Interleaved `--repeats` times; prints each variant's median wall
time, the runs phase (the first run's start to the last run's end, from the journal: the hot path),
the child's CPU time (user + system), the run traces the collector received, and when the first and
last POST arrived as a share of the child's wall time.
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import child_env, runner_command, timed  # noqa: E402
from tests.otlp_collector import OtlpCollector  # noqa: E402

AGENT = "def agent(task):\n    return 'done'\n"


def dead_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1/traces"


def runs_phase(out: Path) -> float:
    """Seconds from the first run's start to the last run's end, from the newest journal's traces."""
    journal = max(out.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    starts, ends = [], []
    for line in journal.read_bytes().splitlines()[1:]:
        trace = orjson.loads(line)["run"]["trace"]
        starts.append(trace["started_at_unix_ns"])
        ends.append(trace["started_at_unix_ns"] + trace["latency_s"] * 1e9)
    return (max(ends) - min(starts)) / 1e9


def write_suite(folder: Path, cases: int) -> Path:
    (folder / "agent.py").write_text(AGENT)
    rows = [{"id": f"c{n:05d}", "query": "go", "expect": {"contains": "done"}} for n in range(cases)]
    path = folder / "cases.json"
    path.write_bytes(orjson.dumps({"suite": {"name": "otlp", "agent": "agent.py:agent"}, "cases": rows}))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cli = runner_command()
    assert cli is not None
    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = write_suite(folder, args.cases)
        for _ in range(args.repeats):
            for variant in ("none", "collector", "slow collector (50 ms a POST)", "dead endpoint"):
                collector = (OtlpCollector(0.05 if variant.startswith("slow") else 0.0) if "collector" in variant
                             else None)
                url = collector.url if collector else dead_url() if variant == "dead endpoint" else None
                command = [*cli, "run", "--cases", str(cases), "--concurrency", "32", "--no-html", "--quiet",
                           "--output-dir", str(folder / "out"), *(["--otlp-endpoint", url] if url else [])]
                started = time.perf_counter()
                row = timed(command, child_env(), limit_s=600)
                assert row["code"] == 0, row["tail"]
                row["runs_s"] = runs_phase(folder / "out")
                if collector is not None:
                    collector.close()
                    wall = row["wall_s"]
                    row.update(runs=len(collector.run_spans()), first=(collector.arrivals[0] - started) / wall,
                               last=(collector.arrivals[-1] - started) / wall)
                results.setdefault(variant, []).append(row)
    print(f"{args.cases} cases, --concurrency 32, a Python agent that answers at once; medians of {args.repeats}")
    print(f"{'variant':32} {'wall s':>8} {'runs s':>8} {'CPU s':>8} {'runs received':>14} "
          f"{'first / last POST (share of wall)':>34}")
    for variant, rows in results.items():
        wall = statistics.median(r["wall_s"] for r in rows)
        cpu = statistics.median(r["cpu_s"] for r in rows)
        received = "/".join(str(r["runs"]) for r in rows) if "runs" in rows[0] else "-"
        when = (f"{statistics.median(r['first'] for r in rows):.2f} / {statistics.median(r['last'] for r in rows):.2f}"
                if "first" in rows[0] else "-")
        runs = statistics.median(r["runs_s"] for r in rows)
        print(f"{variant:32} {wall:8.2f} {runs:8.2f} {cpu:8.2f} {received:>14} {when:>34}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
