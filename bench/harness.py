"""What the benchmarks share: the overhead suite and its stateless router, timing a child process, and
how to start the CLI. bench/overhead.py and bench/throughput.py both import it (and not each other)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.loopback import text, tool_calls  # noqa: E402

RECORDS = 200
TOOLS_PY = '''"""The overhead benchmark's one tool."""

TOOLS_SCHEMA = [{"type": "function", "function": {
    "name": "lookup", "description": "Read one record.",
    "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}}}]


def lookup(key: str, env: dict) -> str:
    return env["records"].get(key, {}).get("value", "missing")


TOOL_REGISTRY = {"lookup": lookup}
'''


def write_suite(directory: Path, cases: int) -> Path:
    """A tools.py and a case file of `cases` cases sharing a ~40 KB initial_env."""
    (directory / "tools.py").write_text(TOOLS_PY)
    records = {f"k{i}": {"value": f"value-{i}", "note": "x" * 120, "tags": ["a", "b", i]}
               for i in range(RECORDS)}
    suite = {"name": "overhead", "tools": "tools.py", "initial_env": {"records": records}}
    rows = [{"id": f"case-{n:05d}", "query": f"What is the value of k{n % RECORDS}?",
             "expect": {"contains": f"value-{n % RECORDS}"}} for n in range(cases)]
    path = directory / "test_cases.json"
    path.write_bytes(orjson.dumps({"suite": suite, "cases": rows}))
    return path


def answer(request: dict, index: int):
    """Tool call after the user's message, text after the tool's; stateless, as both loops need."""
    messages = request.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return text(f"The value is {last.get('content')}.")
    match = re.search(r"k\d+", str(last.get("content", "")))
    return tool_calls([("lookup", {"key": match.group(0) if match else "k0"})])


def timed(command: list[str], env: dict[str, str], limit_s: float) -> dict:
    """Run a child to completion (killed after `limit_s`): wall and CPU seconds, peak RSS, exit code."""
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        child = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        while True:
            pid, wait_status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - started > limit_s:
                child.kill()
                pid, wait_status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.005)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(wait_status)
        out.seek(0)
        tail = out.read().decode("utf-8", "replace")[-2000:]
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024,
            "code": child.returncode, "tail": tail}


def runner_command() -> list[str] | None:
    """How to start the CLI: the venv's script, else the module, else None (not written yet)."""
    script = Path(sys.executable).parent / "agent-eval"
    if script.exists():
        return [str(script)]
    if shutil.which("agent-eval"):
        return ["agent-eval"]
    if (ROOT / "agent_eval" / "cli.py").exists():
        return [sys.executable, "-c", "import sys; from agent_eval.cli import main; sys.exit(main())"]
    return None


def child_env(code: Path = ROOT) -> dict[str, str]:
    """The environment of a benchmark's child: no user keys, and agent_eval imported from `code`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    env.update(OPENAI_API_KEY="bench", PYTHONPATH=str(code), COLUMNS="200", NO_COLOR="1")
    return env
