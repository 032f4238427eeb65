"""Does `agent-eval run` keep its memory flat as the number of runs grows?

Usage: .venv/bin/python bench/memory.py [--sizes 1000x2,1000x20,10000x2] [--sync] [--concurrency 8]
                                         [--payload-kb 0]

Each size is CASESxREPEAT. Every size runs `agent-eval run --quiet --no-html` as a child process on a
generated suite with a fast, deterministic Python agent (one tool call, a reply, no LLM), and reads the
child's peak RSS from os.wait4. Runs of the same suite with more trials show what each extra run
costs; a suite with more cases shows what each extra case costs. See bench/MEMORY.md.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

CLI = str(Path(sys.executable).parent / "agent-eval")

TOOLS_PY = '''
from agent_eval import tool


@tool
def lookup(key: str, env: dict) -> str:
    """Read one record."""
    return env["records"][key] + " " + "x" * PAYLOAD
'''

ASYNC_AGENT = '''
async def agent(task):
    key = task.case_id.split("-")[1]
    value = await task.acall_tool("lookup", key=str(int(key) % 50))
    return value if int(key) % 7 else "I do not know."
'''

SYNC_AGENT = '''
def agent(task):
    key = task.case_id.split("-")[1]
    value = task.call_tool("lookup", key=str(int(key) % 50))
    return value if int(key) % 7 else "I do not know."
'''


def write_suite(folder: Path, cases: int, sync: bool, payload_kb: int = 0) -> Path:
    """A suite of `cases` cases sharing a small env; one in seven fails, so failures are reported too.

    Each tool observation carries `payload_kb` KiB of filler: traces that stayed in memory would show.
    """
    (folder / "tools.py").write_text(f"PAYLOAD = {payload_kb * 1024}\n" + TOOLS_PY)
    (folder / "agent.py").write_text(SYNC_AGENT if sync else ASYNC_AGENT)
    records = {str(i): f"value-{i}" for i in range(50)}
    rows = [{"id": f"case-{n:05d}", "query": f"What is record {n % 50}?", "tags": [f"t{n % 10}"],
             "expect": {"contains": f"value-{n % 50}"},
             "expected_tools": [{"name": "lookup", "args": {"key": str(n % 50)}}]} for n in range(cases)]
    block = {"name": "memory", "tools": "tools.py", "agent": "agent.py:agent",
             "initial_env": {"records": records}}
    path = folder / "cases.json"
    path.write_bytes(orjson.dumps({"suite": block, "cases": rows}))
    return path


def measure(cases_file: Path, out: Path, repeat: int, concurrency: int) -> tuple[float, float, int]:
    """(peak RSS in MiB, wall seconds, exit code) of one `agent-eval run` child."""
    started = time.perf_counter()
    proc = subprocess.Popen([CLI, "run", "--cases", str(cases_file), "--repeat", str(repeat), "--output-dir",
                             str(out), "--concurrency", str(concurrency), "--quiet", "--no-html"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        sys.exit(f"agent-eval exited {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
    return usage.ru_maxrss / 1024, wall, proc.returncode  # ru_maxrss is in KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000x2,1000x20,10000x2", help="CASESxREPEAT, comma-separated")
    parser.add_argument("--sync", action="store_true", help="a sync agent (one worker thread per run)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--payload-kb", type=int, default=0, help="KiB of filler in every tool observation")
    args = parser.parse_args()
    print(f"{'cases':>7} {'repeat':>6} {'runs':>7} {'peak RSS MiB':>13} {'wall s':>7}  report MB")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes.split(","):
            cases, repeat = (int(x) for x in size.split("x"))
            folder = Path(tmp) / size
            folder.mkdir()
            cases_file = write_suite(folder, cases, args.sync, args.payload_kb)
            rss, wall, _ = measure(cases_file, folder / "out", repeat, args.concurrency)
            (report,) = (folder / "out").glob("*.json")
            print(f"{cases:>7} {repeat:>6} {cases * repeat:>7} {rss:>13.1f} {wall:>7.1f}  "
                  f"{report.stat().st_size / 1e6:.1f}")


if __name__ == "__main__":
    main()
