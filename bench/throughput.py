"""Completions per second of `agent-eval run` at --workers 1, --workers 2 and --ray with 2 workers.

Usage: .venv/bin/python bench/overhead.py --throughput [--cases 2000] [--concurrency 32] [--repeats 2]

The overhead benchmark's suite and stateless router (two completions per case), served with no
latency, so that the runner's CPU, not the model, sets the pace. The server runs in a process of its
own, keeps no request bodies (only a count and the first and last arrival) and freezes its start-up
heap, so that it stays as light as a loopback server can be; its CPU is measured and printed, so that
a saturated server shows. Each configuration runs as a child process. Two rates are printed: end to
end (start-up included: Ray's takes seconds) and steady (the server's first request to its last).
See bench/README.md.
"""
from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.harness import answer, child_env, runner_command, timed, write_suite
from tests.loopback import LoopbackServer

CONFIGS = {"workers 1": [], "workers 2": ["--workers", "2"], "ray, 2 workers": ["--ray", "--workers", "2"]}


class Stamped:
    """The router, counting requests and noting the first and the last arrival (the steady window)."""

    def __init__(self) -> None:
        self.count, self.first, self.last = 0, 0.0, 0.0
        self._lock = threading.Lock()

    def __call__(self, request: dict, index: int):
        now = time.perf_counter()
        with self._lock:
            if self.count == 0:
                self.first = now
            self.count, self.last = self.count + 1, now
        return answer(request, index)


def _serve(conn) -> None:
    """The server process: answer chat completions; on "reset" zero the stamps, on "stats" report them."""
    stamps = Stamped()
    with LoopbackServer(stamps, latency_s=0.0, keep_requests=False) as srv:
        gc.collect()
        gc.freeze()  # the server's start-up heap is never rescanned
        conn.send(srv.base_url)
        cpu = time.process_time()
        while True:
            command = conn.recv()
            if command == "reset":
                stamps.count, cpu = 0, time.process_time()
                conn.send(None)
            elif command == "stats":
                conn.send({"served": stamps.count, "first": stamps.first, "last": stamps.last,
                           "cpu_s": time.process_time() - cpu})
            else:
                return


class ServerProcess:
    """The loopback server in a spawned process of its own: it shares no GIL with the harness."""

    def __enter__(self) -> ServerProcess:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child,), daemon=True)
        self.process.start()
        self.base_url = self.conn.recv()
        return self

    def ask(self, command: str):
        self.conn.send(command)
        return self.conn.recv()

    def __exit__(self, *exc: object) -> None:
        self.conn.send("stop")
        self.process.join(10)


def measure(label: str, extra: list[str], args: argparse.Namespace, srv: ServerProcess, cases_path: Path,
            out: Path) -> dict:
    command = [*(runner_command() or []), "run", "--cases", str(cases_path), "--agent", "openai",
               "--model", "bench", "--base-url", srv.base_url, "--concurrency", str(args.concurrency),
               "--output-dir", str(out), "--quiet", "--no-html", *extra]
    env = {k: v for k, v in child_env().items() if not k.startswith("RAY_")}
    srv.ask("reset")
    result = timed_driver(command, env, limit_s=600)
    stats = srv.ask("stats")
    served, server_s = stats["served"], stats["cpu_s"]
    steady = (served - 1) / (stats["last"] - stats["first"]) if served > 1 else 0.0
    row = {"wall_s": result["wall_s"], "end_to_end": served / result["wall_s"], "steady": steady,
           "server_core": server_s / result["wall_s"], "code": result["code"], "served": served,
           "driver_ms_per_run": 1000 * result["driver_cpu_s"] / args.cases}
    print(f"  {label:15} {row['wall_s']:6.2f} s wall  {row['end_to_end']:6.1f} cmpl/s end to end  "
          f"{steady:6.1f} cmpl/s steady  server {100 * row['server_core']:4.1f}% of a core  "
          f"driver {row['driver_ms_per_run']:.2f} ms CPU/run  exit {result['code']}  {served} requests")
    if result["code"] != 0 or served != 2 * args.cases:
        print(result["tail"], file=sys.stderr)
    return row


def timed_driver(command: list[str], env: dict[str, str], limit_s: float) -> dict:
    """`timed`, plus the CPU of the driver process alone (its workers excluded), read from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    driver_cpu = 0.0
    result: dict = {}

    def watch() -> None:
        nonlocal driver_cpu
        while "code" not in result:
            for pid in list(_children()):
                try:
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                except (FileNotFoundError, IndexError):
                    continue
                if "agent-eval" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                    driver_cpu = max(driver_cpu, (int(fields[11]) + int(fields[12])) / ticks)
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    result.update(timed(command, env, limit_s))
    watcher.join()
    return {**result, "driver_cpu_s": driver_cpu}


def _children() -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            found += [int(pid) for pid in (task / "children").read_text().split()]
        except FileNotFoundError:
            continue
    return found


def throughput_main(args: argparse.Namespace) -> int:
    """Run every configuration `--repeats` times, interleaved; print medians and the speed-ups.

    The speed-up is given two ways: the ratio of the median rates, and the median of each attempt's
    own ratio to the `--workers 1` run just before it. The second is the one to quote: this machine's
    speed drifts by up to 2x over minutes (a CPU-bound loop took 2.5 s or 4.7 s), and adjacent runs
    share the drift.
    """
    if runner_command() is None:
        print("throughput: the agent-eval CLI is not installed")
        return 1
    print(f"throughput: {args.cases} cases x 2 completions, no latency, concurrency {args.concurrency}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, Python {sys.version.split()[0]}")
    rows: dict[str, list[dict]] = {label: [] for label in CONFIGS}
    with tempfile.TemporaryDirectory(prefix="agent-eval-throughput-") as tmp, ServerProcess() as srv:
        cases_path = write_suite(Path(tmp), args.cases)
        for attempt in range(args.repeats):
            for label, extra in CONFIGS.items():
                if "--ray" in extra and args.no_ray:
                    continue
                rows[label].append(measure(label, extra, args, srv, cases_path,
                                           Path(tmp) / f"out-{attempt}-{len(rows[label])}-{label[0]}"))
    print(f"(load average now {os.getloadavg()[0]:.2f})")
    base = None
    for label, found in rows.items():
        if not found:
            continue
        steady = statistics.median(r["steady"] for r in found)
        end_to_end = statistics.median(r["end_to_end"] for r in found)
        server = max(r["server_core"] for r in found)
        driver = statistics.median(r["driver_ms_per_run"] for r in found)
        base = base or steady
        pairs = [r["steady"] / b["steady"] for r, b in zip(found, rows["workers 1"], strict=True)
                 if b["steady"]]
        print(f"{label:15} median {steady:6.1f} cmpl/s steady ({steady / base:.2f}x), {end_to_end:6.1f} "
              f"end to end; driver {driver:.2f} ms CPU per run; server at most {100 * server:.0f}% of a core")
        if label != "workers 1" and pairs:
            print(f"{'':15} attempt by attempt: {', '.join(f'{x:.2f}x' for x in pairs)}; "
                  f"median {statistics.median(pairs):.2f}x")
    return 0 if all(r["code"] == 0 for found in rows.values() for r in found) else 1
