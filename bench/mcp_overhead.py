"""What does an MCP tool server cost? Per run (a per_run stdio server) and per call (a shared session).

Usage: .venv/bin/python bench/mcp_overhead.py [--runs 12] [--calls 400]

The server is cases/mcp_server.py (Python, the `mcp` package's server API, the support-demo shop).
  1. Per run, cold: ServerPool.open_run with no server started ahead, then the two state reads and the
     close, as a run with no prestart pays them; wall time and the server's CPU time (RUSAGE_CHILDREN).
  2. Per run, prestarted: the next run's server is started while the current run "plays" (a sleep of
     --play-s), as the runner does; the wall time left on the critical path is what open_run still waits.
  3. Per call: the same get_order call as a Python tool (Sandbox.acall on cases/tools.py), through the
     SDK's ClientSession alone (the bare MCP round trip), and through Sandbox.acall on a shared session
     (the two interleaved); then agent-eval's own share, the same path with a session that answers at once.
Medians are reported. See bench/README.md.
"""
from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agent_eval.run.mcp_sessions import ServerPool  # noqa: E402
from agent_eval.run.sandbox import Sandbox  # noqa: E402
from agent_eval.run.world import EnvTemplate  # noqa: E402
from agent_eval.suite.cases import load_suite  # noqa: E402

CASES = ROOT / "cases" / "mcp_cases.json"
PY_CASES = ROOT / "cases" / "test_cases.json"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def per_run(pool: ServerPool, blob: bytes, runs: int, play_s: float, prestart: bool) -> tuple[list, list]:
    """(critical-path seconds per run, whole-run seconds per run)."""
    waits, totals = [], []
    if prestart:
        pool.prestart(blob)
    for _ in range(runs):
        started = time.perf_counter()
        run = await pool.open_run(blob)
        waited = time.perf_counter() - started
        if prestart:
            pool.prestart(blob)  # the next run's server starts while this one plays
        await run.read_state()
        await asyncio.sleep(play_s)
        await run.read_state()
        run.release()
        waits.append(waited)
        totals.append(time.perf_counter() - started - play_s)
    await pool.aclose()
    return waits, totals


async def per_call(calls: int) -> dict[str, float]:
    mcp_suite = load_suite(CASES)
    py_suite = load_suite(PY_CASES)
    template = EnvTemplate(mcp_suite.initial_env)
    out = {}
    python = Sandbox(py_suite.tools, template.fresh())
    out["python tool (Sandbox.acall)"] = await timed(lambda: python.acall("get_order", {"order_id": "ORD_1001"}),
                                                     calls)
    spec = mcp_suite.servers[0]
    shared = ServerPool([type(spec)(**{**spec.__dict__, "isolation": "shared"})])
    run = await shared.open_run(None)
    connection = run.connections[spec.index]
    session = connection._session
    sandbox = Sandbox(mcp_suite.tools, {}, servers=run)
    # Interleaved, so that the load of the moment weighs on both alike.
    bare, ours = await timed_pair(lambda: session.call_tool("get_order", {"order_id": "ORD_1001"}),
                                  lambda: sandbox.acall("get_order", {"order_id": "ORD_1001"}), calls)
    out["bare MCP round trip (ClientSession.call_tool)"] = bare
    out["MCP tool, shared session (Sandbox.acall)"] = ours
    # agent-eval's own share, without the wire: the same path with a session that answers at once.
    answer = await session.call_tool("get_order", {"order_id": "ORD_1001"})

    class Instant:
        async def call_tool(self, name: str, args: dict) -> object:
            return answer

    connection._session = Instant()
    out["agent-eval's own share of an MCP call (no wire)"] = await timed(
        lambda: sandbox.acall("get_order", {"order_id": "ORD_1001"}), calls)
    connection._session = session
    await shared.aclose()
    return out


async def timed(make, calls: int) -> float:
    for _ in range(20):
        await make()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await make()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


async def timed_pair(first, second, calls: int) -> tuple[float, float]:
    samples: tuple[list, list] = ([], [])
    for i in range(calls + 20):
        pair = ((first, samples[0]), (second, samples[1]))
        for make, out in (pair if i % 2 else pair[::-1]):
            started = time.perf_counter()
            await make()
            if i >= 20:
                out.append(time.perf_counter() - started)
    return statistics.median(samples[0]), statistics.median(samples[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--play-s", type=float, default=2.0)
    args = parser.parse_args()
    suite = load_suite(CASES)
    blob = EnvTemplate(suite.initial_env).blob
    for prestart in (False, True):
        cpu = children_cpu()
        waits, totals = asyncio.run(per_run(ServerPool(suite.servers), blob, args.runs, args.play_s, prestart))
        cpu = (children_cpu() - cpu) / (args.runs + prestart)
        print(f"per run, {'prestarted' if prestart else 'cold'}: critical path {statistics.median(waits) * 1000:.0f} ms"
              f" (median of {args.runs}); open+2 reads+release {statistics.median(totals) * 1000:.0f} ms; "
              f"server CPU {cpu * 1000:.0f} ms per run")
    for name, seconds in asyncio.run(per_call(args.calls)).items():
        print(f"per call, {name}: {seconds * 1e6:.0f} us (median of {args.calls})")


if __name__ == "__main__":
    main()
