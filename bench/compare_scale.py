"""How long does `agent-eval compare BASE NEW` take on two large reports, and how much memory?

Usage: .venv/bin/python bench/compare_scale.py [--cases 20000] [--repeat 1] [--keep DIR] [--profile]

Writes one suite of CASES cases and runs it twice with `agent-eval run` (two deterministic Python agents,
the second failing a few more cases), then times `agent-eval compare BASE NEW` as a child process and
reads its CPU time and peak RSS from os.wait4 (on a shared machine the CPU time is the steadier
figure). With --keep DIR the suite and both reports stay in DIR and are reused
on the next call (the runs take longer than the compare). With --profile, the compare also runs under
cProfile in this process and the 25 most expensive functions are printed.
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
    return env["records"][key]
'''

AGENT = '''
async def agent(task):
    n = int(task.case_id.split("-")[1])
    value = await task.acall_tool("lookup", key=str(n % 50))
    return value if n % FAIL_EVERY else "I do not know."
'''


def write_suite(folder: Path, cases: int) -> Path:
    """A suite of `cases` cases sharing a small env, with two agents: base fails 1 in 7, new 1 in 6."""
    (folder / "tools.py").write_text(TOOLS_PY)
    (folder / "base.py").write_text("FAIL_EVERY = 7\n" + AGENT)
    (folder / "new.py").write_text("FAIL_EVERY = 6\n" + AGENT)
    records = {str(i): f"value-{i}" for i in range(50)}
    rows = [{"id": f"case-{n:05d}", "query": f"What is record {n % 50}?", "tags": [f"t{n % 10}"],
             "expect": {"contains": f"value-{n % 50}"},
             "expected_tools": [{"name": "lookup", "args": {"key": str(n % 50)}}]} for n in range(cases)]
    path = folder / "cases.json"
    path.write_bytes(orjson.dumps({"suite": {"name": "scale", "tools": "tools.py",
                                             "initial_env": {"records": records}}, "cases": rows}))
    return path


def reports(folder: Path, cases: int, repeat: int) -> tuple[Path, Path]:
    """The base and new reports in folder, run once and reused."""
    found = [next((folder / name).glob("*.json"), None) for name in ("base", "new")]
    if all(found):
        return found[0], found[1]  # type: ignore[return-value]
    cases_file = write_suite(folder, cases)
    for name in ("base", "new"):
        done = subprocess.run([CLI, "run", "--cases", str(cases_file), "--agent", f"{folder / name}.py:agent",
                               "-k", str(repeat), "--output-dir", str(folder / name), "--quiet", "--no-html"],
                              capture_output=True, text=True)
        if done.returncode not in (0, 1):
            sys.exit(f"agent-eval run exited {done.returncode}: {done.stderr[-2000:]}")
    return reports(folder, cases, repeat)


def measure(base: Path, new: Path) -> tuple[float, float, float, int]:
    """(peak RSS in MiB, wall seconds, CPU seconds, exit code) of one `agent-eval compare` child."""
    started = time.perf_counter()
    proc = subprocess.Popen([CLI, "compare", str(base), str(new)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"agent-eval compare exited {code}: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
    return usage.ru_maxrss / 1024, wall, usage.ru_utime + usage.ru_stime, code


def profile(base: Path, new: Path) -> None:
    import cProfile
    import pstats

    from rich.console import Console

    from agent_eval.commands.compare import compare_command

    prof = cProfile.Profile()
    prof.enable()
    compare_command(base, [new], [], Console(file=open(os.devnull, "w")))
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="keep (and reuse) the suite and reports in this folder")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        base, new = reports(folder, args.cases, args.repeat)
        rss, wall, cpu, code = measure(base, new)
        print(f"{args.cases} cases x {args.repeat}: compare took {wall:.1f} s ({cpu:.1f} s of CPU), peak RSS "
              f"{rss:.0f} MiB, exit {code} (load average {os.getloadavg()[0]:.0f}) "
              f"(reports {base.stat().st_size / 1e6:.1f} MB each)")
        if args.profile:
            profile(base, new)


if __name__ == "__main__":
    main()
