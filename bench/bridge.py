"""What does the recording endpoint cost? A framework agent through task.base_url against straight at the model.

Usage: .venv/bin/python bench/bridge.py [--cases 60] [--latency-ms 20] [--repeats 3]

The loopback server of tests/loopback.py answers each case with one `lookup` tool call, then a text
answer (two completions per case), each after --latency-ms. Three contenders run `agent-eval run
--concurrency 1` as child processes, interleaved --repeats times:
  builtin   the built-in `openai` agent;
  bridged   a pydantic-ai agent on agent_eval.bridge (model and tools through the run's endpoint);
  direct    the same agent with its model client pointed straight at the server (tools still bridged),
            built as a user writes it (a new AsyncOpenAI, with its own HTTP client, per run);
  shared    the same, on the bridge's shared transport (bridge/_transport.py), as bridge.model builds
            its client: bridged against shared is the endpoint's cost alone.
For each: the span from the first model request the server saw to its last answer (the done-when
measure), the child's CPU time (os.wait4) per completion. The endpoint's cost per completion is
bridged minus shared; its wall overhead is bridged span / shared span - 1. See bench/README.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from tests.loopback import LoopbackServer, text, tool_calls  # noqa: E402

TOOLS = '''
from agent_eval import tool


@tool
def lookup(key: str, env: dict) -> str:
    """Look a key up."""
    return env["data"][key]
'''

AGENT = '''
import os

from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from agent_eval.bridge import pydantic_ai as bridge


async def bridged(task):
    agent = Agent(bridge.model(task), instructions=task.system_prompt, toolsets=[bridge.toolset(task)])
    return (await agent.run(task.input)).output


async def direct(task):
    client = AsyncOpenAI(base_url=os.environ["BENCH_MODEL_URL"], api_key="bench", max_retries=0)
    model = OpenAIChatModel(task.model, provider=OpenAIProvider(openai_client=client))
    agent = Agent(model, instructions=task.system_prompt, toolsets=[bridge.toolset(task)])
    return (await agent.run(task.input)).output


async def direct_shared(task):
    from agent_eval.bridge._transport import async_http_client

    client = AsyncOpenAI(base_url=os.environ["BENCH_MODEL_URL"], api_key="bench", max_retries=0,
                         http_client=async_http_client())
    model = OpenAIChatModel(task.model, provider=OpenAIProvider(openai_client=client))
    agent = Agent(model, instructions=task.system_prompt, toolsets=[bridge.toolset(task)])
    return (await agent.run(task.input)).output
'''


class Stamps:
    """When the server's script was asked (after the scripted latency): first and last answers."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.times: list[float] = []
        self.lock = threading.Lock()

    def __call__(self, request: dict, index: int) -> object:
        with self.lock:
            self.times.append(time.perf_counter())
        messages = request.get("messages") or []
        if messages and messages[-1].get("role") == "tool":
            return text("the value is 1")
        return tool_calls([("lookup", {"key": "a"}, f"call_{index}")])

    def span(self) -> float:
        return self.times[-1] - self.times[0] + self.latency_s  # the first request arrived latency_s earlier


def play(folder: Path, spec: str, base_url: str) -> tuple[float, int]:
    """Run the suite once in a child process: (its CPU seconds, exit code)."""
    out = folder / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    env.update(OPENAI_API_KEY="bench", PYTHONPATH=str(ROOT), BENCH_MODEL_URL=base_url)
    cli = str(Path(sys.executable).parent / "agent-eval")
    child = subprocess.Popen([cli, "run", "--cases", str(folder / "cases.json"), "--agent", spec, "--model", "bench",
                              "--base-url", base_url, "--concurrency", "1", "--quiet", "--no-html",
                              "--output-dir", str(out)], cwd=folder, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.exit(f"{spec}: exit {child.returncode}: {child.stderr.read().decode()[-2000:] if child.stderr else ''}")
    return usage.ru_utime + usage.ru_stime, child.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-bridge-"))
    (folder / "tools.py").write_text(TOOLS)
    (folder / "agent.py").write_text(AGENT)
    cases = [{"id": f"c{n}", "query": f"what is a? ({n})", "expect": {"contains": "1"}} for n in range(args.cases)]
    (folder / "cases.json").write_bytes(orjson.dumps({"suite": {"tools": "tools.py", "initial_env": {
        "data": {"a": "1"}}, "system_prompt": "Answer from the tools."}, "cases": cases}))
    contenders = {"builtin": "openai", "bridged": "agent.py:bridged", "direct": "agent.py:direct",
                  "shared": "agent.py:direct_shared"}
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in contenders}
    completions = 2 * args.cases
    for attempt in range(args.repeats):
        for name, spec in contenders.items():
            stamps = Stamps(args.latency_ms / 1000)
            with LoopbackServer(stamps, latency_s=args.latency_ms / 1000, keep_requests=False) as srv:
                cpu, _ = play(folder, spec, srv.base_url)
                if srv.count != completions:
                    sys.exit(f"{name}: the server saw {srv.count} requests, not {completions}")
            results[name].append((stamps.span(), cpu))
            print(f"attempt {attempt + 1} {name:8} span {stamps.span():7.3f} s   CPU {cpu:6.3f} s   "
                  f"CPU/completion {1000 * cpu / completions:6.2f} ms", flush=True)
    medians = {name: (statistics.median(s for s, _ in rows), statistics.median(c for _, c in rows))
               for name, rows in results.items()}
    print(f"\nmedians over {args.repeats} attempts, {args.cases} cases, {completions} completions each, "
          f"{args.latency_ms:g} ms model latency, --concurrency 1")
    for name, (span, cpu) in medians.items():
        print(f"  {name:8} span {span:7.3f} s   CPU/completion {1000 * cpu / completions:6.2f} ms")
    bridged, direct, shared = medians["bridged"], medians["direct"], medians["shared"]
    print(f"against the agent written by hand (bridged / direct span - 1): {100 * (bridged[0] / direct[0] - 1):+.1f}%"
          f", CPU per completion {1000 * (bridged[1] - direct[1]) / completions:+.2f} ms")
    print(f"the endpoint alone (bridged / shared span - 1): {100 * (bridged[0] / shared[0] - 1):+.1f}%"
          f", CPU per completion {1000 * (bridged[1] - shared[1]) / completions:+.2f} ms")
    print(f"built-in agent CPU per completion: {1000 * medians['builtin'][1] / completions:.2f} ms")


if __name__ == "__main__":
    main()
