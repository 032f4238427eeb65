"""How close to a provider's rate limit does `agent-eval run` go, and does any run end in error?

Usage: .venv/bin/python bench/rate_limits.py [--cases 300] [--only NAME ...]

A rate-limited loopback provider (tests/ratelimited.py: a token bucket of 50 requests a second,
burst 10, 50 ms a completion, 429 with a hint past the bucket) runs in a process of its own. The
overhead benchmark's suite (two completions a case) runs against it with the CLI as a child process,
in each configuration below; the floor is completions / 50 (12 s for 300 cases). Printed per
configuration: the wall time of the whole command (start-up included) and its ratio to the floor, the
server's span (first request to last) and its ratio, the 429s the server sent and the ones
summary.provider counted, the runs in error and the exit code. See bench/README.md.
"""
from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import answer, child_env, runner_command, timed, write_suite  # noqa: E402
from tests.ratelimited import serve_in_process  # noqa: E402

RATE, BURST, SERVE_S = 50.0, 10, 0.05
CONFIGS = [  # (name, hint, CLI arguments)
    ("concurrency 8", "retry-after", ["--concurrency", "8"]),
    ("concurrency 50", "retry-after", ["--concurrency", "50"]),
    ("concurrency 200", "retry-after", ["--concurrency", "200"]),
    ("workers 2 (concurrency 50)", "retry-after", ["--concurrency", "50", "--workers", "2"]),
    ("retry-after-ms only", "retry-after-ms", ["--concurrency", "50"]),
    ("HTTP-date Retry-After", "http-date", ["--concurrency", "50"]),
    ("x-ratelimit-reset-requests only", "reset-requests", ["--concurrency", "50"]),
    ("--rate-limit 3000 (concurrency 50)", "retry-after", ["--concurrency", "50", "--rate-limit", "3000"]),
]


class Provider:
    """The rate-limited server in a spawned process (it shares no GIL with the harness or the CLI)."""

    def __init__(self, hint: str, rate: float = RATE) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        kwargs = {"rate": rate, "burst": BURST, "latency_s": SERVE_S, "hint": hint}
        self.process = context.Process(target=serve_in_process, args=(child, kwargs, answer), daemon=True)

    def __enter__(self) -> Provider:
        self.process.start()
        self.base_url = self.conn.recv()
        return self

    def ask(self, command: str):
        self.conn.send(command)
        return self.conn.recv()

    def __exit__(self, *exc: object) -> None:
        self.conn.send("stop")
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()


def run_once(command: list[str], cases: Path, out: Path, base_url: str, args: list[str],
             limit_s: float = 300.0) -> tuple[dict, dict | None]:
    env = {**child_env(), "OPENAI_BASE_URL": base_url}
    result = timed([*command, "run", "--cases", str(cases), "--agent", "openai", "--model", "bench",
                    "--output-dir", str(out), "--quiet", "--no-html",
                    *args], env, limit_s)
    reports = sorted(out.glob("*.json"), key=lambda p: p.stat().st_mtime)
    report = orjson.loads(reports[-1].read_bytes()) if reports else None
    for path in out.glob("*"):
        if path.is_file():
            path.unlink()
    return result, report


def fixed_cost(command: list[str], tmp: Path) -> float:
    """The wall time of a one-case run against an unlimited provider: start-up, loading, reports."""
    cases = write_suite(tmp / "one", 1)
    with Provider("retry-after", rate=1e9) as provider:
        result, _ = run_once(command, cases, tmp / "out-one", provider.base_url, [])
    return result["wall_s"]


def describe(name: str, result: dict, report: dict | None, stats: dict, floor: float, fixed: float) -> str:
    summary = (report or {}).get("summary") or {}
    counted = sum(e.get("rate_limited") or 0 for e in summary.get("provider") or ())
    lows = [e.get("min_concurrency") for e in summary.get("provider") or () if e.get("role") == "agent"]
    requests = stats["served"] + stats["rate_limited"]
    share = 100.0 * stats["rate_limited"] / requests if requests else 0.0
    net = result["wall_s"] - fixed
    return (f"{name:<36} wall {result['wall_s']:6.1f} s ({result['wall_s'] / floor:4.2f}x), less the fixed cost "
            f"{net:5.1f} s ({net / floor:4.2f}x)  span "
            f"{stats['span_s']:6.1f} s ({stats['span_s'] / floor:4.2f}x)  429s sent {stats['rate_limited']:5d} "
            f"({share:4.1f}%) counted {counted:5d}  min window {lows[0] if lows else '-'}  errored runs "
            f"{summary.get('runs_errored', '?')}  exit {result['code']}")


def always_429(command: list[str], tmp: Path) -> str:
    cases = write_suite(tmp / "three", 3)
    with Provider("always-429") as provider:
        result, report = run_once(command, cases, tmp / "out-429", provider.base_url,
                                  ["--concurrency", "8", "--retry-budget", "5"])
    errors = [run["error"] for case in (report or {}).get("cases", []) for run in case["runs"]]
    named = all("Retry-After: 2" in e and "--retry-budget 5s" in e for e in errors) and len(errors) == 3
    return (f"{'always 429, --retry-budget 5, 3 cases':<36} wall {result['wall_s']:5.1f} s  exit "
            f"{result['code']}  runs in error {len(errors)}, each naming hint and budget: {named}\n"
            f"    e.g. {errors[0] if errors else '-'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--only", nargs="*", default=None, help="names (substrings) of configurations to run")
    args = parser.parse_args()
    command = runner_command()
    if command is None:
        raise SystemExit("the agent-eval CLI is not installed in this venv")
    floor = 2 * args.cases / RATE
    print(f"{args.cases} cases x 2 completions against {RATE:g} requests/s (burst {BURST}, {SERVE_S * 1000:.0f} ms "
          f"a completion): floor {floor:.1f} s")
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        for folder_name in ("suite", "one", "three"):
            (tmp / folder_name).mkdir()
        cases = write_suite(tmp / "suite", args.cases)
        fixed = fixed_cost(command, tmp)
        print(f"fixed cost (start-up, loading, reports: a one-case run, no limit): {fixed:.1f} s", flush=True)
        for name, hint, cli_args in CONFIGS:
            if args.only and not any(part in name for part in args.only):
                continue
            with Provider(hint) as provider:
                result, report = run_once(command, cases, tmp / "out", provider.base_url, cli_args)
                stats = provider.ask("stats")
            print(describe(name, result, report, stats, floor, fixed), flush=True)
            if result["code"] not in (0, 1) or report is None:
                print("    " + result["tail"][-800:].replace("\n", "\n    "), flush=True)
        if not args.only or any("429" in part for part in args.only):
            print(always_429(command, tmp), flush=True)


if __name__ == "__main__":
    main()
