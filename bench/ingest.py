"""What do `agent-eval import otel` and `agent-eval score` cost per trace?

    .venv/bin/python bench/ingest.py [--traces 2000] [--repeats 3]

Writes an OTLP/JSON Lines file of `--traces` agent traces (an agent span, two chat spans in the
current convention, one tool span: four spans a trace, one export request a line), then runs
`import otel FILE --out cases.json` and `score FILE --cases cases.json --no-html --quiet` as child
processes, interleaved `--repeats` times, and prints each one's wall time, CPU time (user + system,
from os.wait4) and peak RSS, with the medians. A bare `agent-eval --help` is timed too: the start-up
cost every command pays.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.otlp_gen import Trace, assistant, calls, export_request, jsonl, system, tool_result, user  # noqa: E402

CLI = Path(sys.executable).with_name("agent-eval")


def write_traces(path: Path, n: int) -> None:
    requests = []
    for i in range(n):
        t = Trace(f"{i:012x}" + "ab" * 10, offset_ms=i * 10)
        agent = t.agent(0, 1000)
        t.chat(10, 100, [system("Be brief."), user(f"Refund order {i}")],
               [calls((f"c{i}", "lookup_order", {"order_id": i}))], usage=(100, 20), parent=agent)
        t.tool(110, 150, "lookup_order", f"c{i}", arguments={"order_id": i}, result="paid", parent=agent)
        t.chat(160, 300, [user(f"Refund order {i}"), calls((f"c{i}", "lookup_order", {"order_id": i})),
                          tool_result(f"c{i}", "paid")], [assistant("Refunded.")], usage=(150, 30), parent=agent)
        requests.append(export_request(t.spans))
    path.write_bytes(jsonl(requests))


def timed(args: list[str], cwd: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one child process; a non-zero exit stops the benchmark."""
    started = time.perf_counter()
    proc = subprocess.Popen([str(CLI), *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"agent-eval {' '.join(args)} exited {code}: {proc.stderr.read().decode()[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        traces = folder / "traces.jsonl"
        write_traces(traces, opts.traces)
        print(f"{opts.traces} traces, {opts.traces * 4} spans, {traces.stat().st_size / 1e6:.1f} MB")
        commands = {"start-up (--help)": ["--help"],
                    "import otel": ["import", "otel", str(traces), "--out", "cases.json"],
                    "score": ["score", str(traces), "--cases", "cases.json", "--output-dir", "out", "--no-html",
                              "--quiet"]}
        results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
        for _ in range(opts.repeats):
            for name, args in commands.items():
                results[name].append(timed(args, folder))
        for name, rows in results.items():
            wall, cpu, rss = (statistics.median(col) for col in zip(*rows, strict=True))
            print(f"{name:18} wall {wall:6.2f} s   CPU {cpu:6.2f} s   peak RSS {rss:6.0f} MB   "
                  f"(medians of {len(rows)})")


if __name__ == "__main__":
    main()
