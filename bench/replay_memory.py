"""Peak memory of `agent-eval run --replay DIR` when DIR holds about 1 GB of cassettes.

Usage: .venv/bin/python bench/replay_memory.py [--gb 1] [--cases 100] [--code PATH]

The overhead benchmark's suite (a tool call, then a text answer), recorded live against the loopback
server whose text answers carry a field the agent never reads (`padding`) sized so that the recording
folder holds `--gb` GiB; the trace and the report stay small, so what the replay holds in memory is
the cassettes. It then replays the folder in a child process (start-up included) and prints its wall
time, CPU time and peak RSS (ru_maxrss). `--code PATH` replays with another checkout's agent_eval
(for a before/after: cassettes read whole before the run, or per run a line at a time). The target
(section 12d): lazy reading keeps the peak far below 3 GB. See bench/README.md.
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import ROOT, child_env, runner_command, timed, write_suite
from tests.loopback import LoopbackServer, raw, tool_calls


def padded(size: int):
    """The harness's stateless answers, the text one carrying `size` bytes the agent never reads."""
    pad = "x" * size

    def answer(request: dict, index: int):
        last = (request.get("messages") or [{}])[-1]
        if last.get("role") == "tool":
            return raw({"id": f"c{index}", "object": "chat.completion", "model": "bench", "padding": pad,
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": f"The value is {last['content']}."}}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
        match = re.search(r"k\d+", str(last.get("content", "")))
        return tool_calls([("lookup", {"key": match.group(0) if match else "k0"})])

    return answer


def run(label: str, base_url: str, cases: Path, out: Path, extra: list[str], code: Path) -> dict:
    command = [*(runner_command() or []), "run", "--cases", str(cases), "--agent", "openai", "--model", "bench",
               "--base-url", base_url, "--output-dir", str(out), "--quiet", "--no-html", *extra]
    result = timed(command, child_env(code), limit_s=1800)
    print(f"  {label:8} {result['wall_s']:7.2f} s wall  {result['cpu_s']:6.2f} s CPU  "
          f"{result['rss_mib']:7.1f} MiB peak RSS  exit {result['code']}", flush=True)
    if result["code"] != 0:
        print(result["tail"], file=sys.stderr)
        raise SystemExit(1)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=1.0)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout whose agent_eval replays")
    args = parser.parse_args()
    size = int(args.gb * 2**30 / args.cases)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = write_suite(folder, args.cases)
        tape = folder / "tape"
        with LoopbackServer(padded(size), keep_requests=False) as srv:
            run("record", srv.base_url, cases, folder / "out", ["--record", str(tape)], ROOT)
        total = sum(p.stat().st_size for p in tape.rglob("*.jsonl"))
        print(f"{args.cases} cassettes, {total / 2**30:.2f} GiB in all ({total / args.cases / 2**20:.1f} MiB each)")
        (tape / ".lock").unlink()  # a checkout from before the lock would not know it
        replayed = run("replay", "http://127.0.0.1:9", cases, folder / "out", ["--replay", str(tape)], args.code)
        print(f"replay peak RSS: {replayed['rss_mib']:.0f} MiB for {total / 2**20:.0f} MiB of cassettes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
