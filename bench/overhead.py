"""How much slower (or faster) is `agent-eval run` than the minimal loops anyone would write by hand?

Usage: .venv/bin/python bench/overhead.py [--cases 1000] [--concurrency 50] [--latency-ms 50] [--repeats 5]

One loopback server (in this process) answers every case with one tool call, then with a text
answer: two completions per case. Three contenders run as child processes, so each pays its own
start-up imports and none shares a GIL with the server:
  (a) bare create() loop: asyncio, one AsyncOpenAI client, a semaphore; per case a
      `chat.completions.create`, the tool run in-process on a copy of the env, a second completion,
      the `expect` check. The loop users write, and the number they compare with.
  (b) runner: `agent-eval run ... --quiet [--no-html]` on the same suite.
  (c) bare lean loop: (a) with agent-eval's own request path and nothing around it: the SDK's
      escape hatch `client.post("/chat/completions", content=orjson.dumps(body),
      cast_to=httpx.Response)`, orjson parsing, and the SDK's aiohttp transport
      (`http_client=DefaultAioHttpClient()`). The floor.
Each is run `--repeats` times, interleaved (a, b, c, a, b, c, ...); the medians of wall time and of
the child's CPU time (less sensitive to other load on the machine) are reported, with the child's
peak RSS, and the ratios runner/(a) and runner/(c). See bench/README.md.
"""
from __future__ import annotations

import argparse
import os
import runpy
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.harness import answer, child_env, runner_command, timed, write_suite  # noqa: E402
from tests.loopback import LoopbackServer  # noqa: E402


# --- (a) and (c), the bare loops, run as child processes -------------------------------------------
def bare_child(base_url: str, cases_path: str, concurrency: int, lean: bool = False) -> None:
    """The minimal hand-written loop (`lean`: over the SDK's `post`); prints a JSON line with the pass count."""
    import asyncio

    import openai

    if lean:
        lean_child(base_url, cases_path, concurrency)
        return

    document = orjson.loads(Path(cases_path).read_bytes())
    namespace = runpy.run_path(str(Path(cases_path).parent / "tools.py"))
    tools, registry = namespace["TOOLS_SCHEMA"], namespace["TOOL_REGISTRY"]
    base_env = orjson.dumps(document["suite"]["initial_env"])

    async def run_case(client: openai.AsyncOpenAI, gate: asyncio.Semaphore, case: dict) -> bool:
        async with gate:
            env = orjson.loads(base_env)
            messages: list = [{"role": "user", "content": case["query"]}]
            for _ in range(4):
                response = await client.chat.completions.create(
                    model="bench", messages=messages, tools=tools, temperature=0)
                message = response.choices[0].message
                if not message.tool_calls:
                    return case["expect"]["contains"] in (message.content or "")
                messages.append(message.model_dump(exclude_none=True))
                for call in message.tool_calls:
                    args = orjson.loads(call.function.arguments)
                    output = registry[call.function.name](env=env, **args)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
            return False

    async def main() -> int:
        gate = asyncio.Semaphore(concurrency)
        async with openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=8) as client:
            results = await asyncio.gather(*[run_case(client, gate, case) for case in document["cases"]])
        return sum(results)

    print(orjson.dumps({"passed": asyncio.run(main()), "cases": len(document["cases"])}).decode())


def lean_child(base_url: str, cases_path: str, concurrency: int) -> None:
    """(c): the loop of (a) over `client.post` with orjson in and out; prints a JSON line."""
    import asyncio

    import openai
    from openai._httpx2 import http_response_types

    response_type = http_response_types()[0]
    document = orjson.loads(Path(cases_path).read_bytes())
    namespace = runpy.run_path(str(Path(cases_path).parent / "tools.py"))
    tools, registry = namespace["TOOLS_SCHEMA"], namespace["TOOL_REGISTRY"]
    base_env = orjson.dumps(document["suite"]["initial_env"])

    async def run_case(client: openai.AsyncOpenAI, gate: asyncio.Semaphore, case: dict) -> bool:
        async with gate:
            env = orjson.loads(base_env)
            messages: list = [{"role": "user", "content": case["query"]}]
            body = {"model": "bench", "messages": messages, "tools": tools, "temperature": 0}
            for _ in range(4):
                response = await client.post("/chat/completions", content=orjson.dumps(body),
                                             cast_to=response_type)
                message = orjson.loads(response.content)["choices"][0]["message"]
                calls = message.get("tool_calls")
                if not calls:
                    return case["expect"]["contains"] in (message.get("content") or "")
                messages.append({"role": "assistant", "content": message.get("content"), "tool_calls": calls})
                for call in calls:
                    args = orjson.loads(call["function"]["arguments"])
                    output = registry[call["function"]["name"]](env=env, **args)
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
            return False

    async def main() -> int:
        gate = asyncio.Semaphore(concurrency)
        async with openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=8,
                                      http_client=openai.DefaultAioHttpClient()) as client:
            results = await asyncio.gather(*[run_case(client, gate, case) for case in document["cases"]])
        return sum(results)

    print(orjson.dumps({"passed": asyncio.run(main()), "cases": len(document["cases"])}).decode())


# --- measuring --------------------------------------------------------------------------------------
def runner_factory(args: argparse.Namespace, srv: LoopbackServer, cases_path: Path, tmp: Path):
    """The CLI command for attempt n, or None after saying clearly why it cannot be timed yet."""
    command = runner_command()
    if command is None:
        print("runner: not measured: the agent-eval CLI does not exist yet (no agent_eval/cli.py, no "
              "agent-eval script). Install it with `make test` or `pip install -e .` once it lands.")
        return None
    probe = subprocess.run([*command, "run", "--help"], capture_output=True, text=True, env=child_env(),
                           cwd=ROOT, timeout=120, check=False)
    if probe.returncode != 0:
        print(f"runner: not measured: `agent-eval run --help` exited {probe.returncode}:\n"
              f"{(probe.stderr or probe.stdout)[-1500:]}")
        return None
    flags = ["--quiet"] + (["--no-html"] if "--no-html" in probe.stdout else [])
    if "--no-html" not in flags:
        print("runner: `run --help` lists no --no-html; running without it")

    def make_command(attempt: int) -> list[str]:
        return [*command, "run", "--cases", str(cases_path), "--agent", "openai", "--model", "bench",
                "--base-url", srv.base_url, "--concurrency", str(args.concurrency),
                "--output-dir", str(tmp / f"reports-{attempt}"), *flags]

    return make_command


def run_once(label: str, command: list[str], srv: LoopbackServer, expected: int, limit_s: float,
             code: Path = ROOT) -> dict:
    before = srv.count
    result = timed(command, child_env(code), limit_s)
    served = srv.count - before
    last = result["tail"].strip().splitlines()[-1] if result["tail"].strip() else ""
    print(f"  {label:9} {result['wall_s']:6.2f} s wall  {result['cpu_s']:6.2f} s CPU  "
          f"{result['rss_mib']:6.1f} MiB  exit {result['code']}  {served} requests  {last}"[:170])
    if served != expected:
        print(f"  {label}: warning: {served} requests served, expected {expected}", file=sys.stderr)
    # exit 1 means some case failed: the benchmark suite is wrong, so the time means nothing
    if result["code"] != 0:
        print(f"{label}: exit {result['code']}\n{result['tail']}", file=sys.stderr)
    return result


def against(args: argparse.Namespace, make_runner, srv: LoopbackServer, expected: int, limit: float) -> int:
    """--against DIR: the runner of DIR and this tree's, interleaved; medians and their ratio."""
    if make_runner is None:
        return 1
    other, mine = args.against.resolve(), ROOT
    runs: dict[Path, list[dict]] = {other: [], mine: []}
    for attempt in range(args.repeats):
        for code in (other, mine):
            label = "against" if code == other else "this tree"
            runs[code].append(run_once(label, make_runner(2 * attempt + (code == mine)), srv, expected, limit, code))
    print(f"(load average now {os.getloadavg()[0]:.2f})")
    if any(r["code"] != 0 for r in runs[other] + runs[mine]):
        return 1
    before, after = median_of(runs[other]), median_of(runs[mine])
    for name, m in ((f"runner of {other}", before), ("runner of this tree", after)):
        print(f"{name}: median {m['wall_s']:.2f} s wall, {m['cpu_s']:.2f} s CPU, peak RSS {m['rss_mib']:.1f} MiB")
    print(f"this tree / {other}: {after['wall_s'] / before['wall_s']:.3f} wall, "
          f"{after['cpu_s'] / before['cpu_s']:.3f} CPU")
    return 0


def median_of(results: list[dict]) -> dict:
    return {key: statistics.median(r[key] for r in results) for key in ("wall_s", "cpu_s", "rss_mib")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--bare-child", nargs=3, metavar=("BASE_URL", "CASES", "CONCURRENCY"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--lean", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="Time only the runner: this tree's against the agent_eval of checkout DIR, interleaved.")
    parser.add_argument("--throughput", action="store_true",
                        help="Completions/s at --workers 1, --workers 2 and --ray (bench/throughput.py).")
    parser.add_argument("--no-ray", action="store_true", help="--throughput without the Ray configuration.")
    args = parser.parse_args(argv)
    if args.throughput:
        from bench.throughput import throughput_main

        if "--cases" not in (argv if argv is not None else sys.argv):
            args.cases = 2000
        if "--concurrency" not in (argv if argv is not None else sys.argv):
            args.concurrency = 32
        return throughput_main(args)
    if args.bare_child:
        bare_child(args.bare_child[0], args.bare_child[1], int(args.bare_child[2]), lean=args.lean)
        return 0

    floor = args.cases * 2 * args.latency_ms / 1000 / args.concurrency
    limit = 120 + 20 * floor  # a bound on every child, far above any sane run
    print(f"{args.cases} cases x 2 completions, concurrency {args.concurrency}, "
          f"latency {args.latency_ms:g} ms (latency floor {floor:.2f} s), "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="agent-eval-bench-") as tmp, \
            LoopbackServer(answer, latency_s=args.latency_ms / 1000) as srv:
        cases_path = write_suite(Path(tmp), args.cases)
        expected = 2 * args.cases
        bare_command = [sys.executable, str(Path(__file__).resolve()), "--bare-child", srv.base_url,
                        str(cases_path), str(args.concurrency)]
        make_runner = runner_factory(args, srv, cases_path, Path(tmp))
        if args.against is not None:
            return against(args, make_runner, srv, expected, limit)
        lean_command = [*bare_command, "--lean"]
        bare_runs: list[dict] = []
        lean_runs: list[dict] = []
        runner_runs: list[dict] = []
        # interleaved, so that a change of machine load hits every contender alike
        for attempt in range(args.repeats):
            bare_runs.append(run_once("bare loop", bare_command, srv, expected, limit))
            if make_runner is not None:
                runner_runs.append(run_once("runner", make_runner(attempt), srv, expected, limit))
            lean_runs.append(run_once("lean loop", lean_command, srv, expected, limit))
        print(f"(load average now {os.getloadavg()[0]:.2f})")
        if any(r["code"] != 0 for r in bare_runs + lean_runs + runner_runs):
            return 1
        bare, lean = median_of(bare_runs), median_of(lean_runs)
        print(f"bare create() loop: median {bare['wall_s']:.2f} s wall, {bare['cpu_s']:.2f} s CPU, "
              f"peak RSS {bare['rss_mib']:.1f} MiB")
        print(f"bare lean loop:     median {lean['wall_s']:.2f} s wall, {lean['cpu_s']:.2f} s CPU, "
              f"peak RSS {lean['rss_mib']:.1f} MiB")
        if not runner_runs:
            return 0
        runner = median_of(runner_runs)
        print(f"runner:             median {runner['wall_s']:.2f} s wall, {runner['cpu_s']:.2f} s CPU, "
              f"peak RSS {runner['rss_mib']:.1f} MiB")
        print(f"ratio runner/bare create() loop: {runner['wall_s'] / bare['wall_s']:.2f} wall, "
              f"{runner['cpu_s'] / bare['cpu_s']:.2f} CPU")
        pairs = sorted(r["wall_s"] / b["wall_s"] for r, b in zip(runner_runs, bare_runs, strict=True))
        print(f"median of the {len(pairs)} side-by-side pairs, runner/bare create() wall: "
              f"{statistics.median(pairs):.2f} (each: {', '.join(f'{p:.2f}' for p in pairs)})")
        print(f"ratio runner/bare lean loop (the floor): {runner['wall_s'] / lean['wall_s']:.2f} wall, "
              f"{runner['cpu_s'] / lean['cpu_s']:.2f} CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
