"""Are the reports of this tree the same as those of another checkout, byte for byte, on the same suites?

Usage: .venv/bin/python bench/same_reports.py --against DIR [--keep OUT]

DIR is a checkout (or `git archive` export) of another commit. One loopback server (in this process)
plays the model, the judge and the simulator, deterministically. Each tree runs the same commands in a
copy of the repo's demo cases of its own:
  1. the demo suite (Python agent, Python simulator), -k 3, judged, with --markdown, --junit and -v;
  2. the MCP demo suite, -k 2, no judge;
  3. the built-in openai agent on 12 cases, -k 2; then the same again with --baseline last and gates;
  4. `rescore --no-judge` of run 1's report; `compare` of run 3's two reports; `history`.
Each command's stdout, exit code and the files it writes (JSON, Markdown, JUnit, HTML) are compared after
masking what must differ: run ids, timestamps, wall-clock figures (latencies, durations) and the temporary
folder. Prints each file that differs with its first differing lines; exit 1 when any differs.
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.harness import answer, write_suite  # noqa: E402
from tests.loopback import LoopbackServer, text  # noqa: E402

VOLATILE_KEY = re.compile(r"(^|_)(latency|ttfa|t_start|created|finished|started|duration|elapsed|wall|"
                          r"run_id|timestamp|time)|_at$|_s$|_ms$|^id$|^trace_id$|^span_id$")
RUN_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")
SECONDS = re.compile(r"\d+(\.\d+)?\s?(ms|s)\b|\b(time|timestamp)=\"[^\"]*\"")
PAGE_DATA = re.compile(r'(<script type="application/json" id="report-data">)(.*?)(</script>)', re.S)
SPARKLINE = re.compile(r"[▁▂▃▄▅▆▇█]+")
IGNORED: frozenset[str] = frozenset()  # --ignore-page-key
CLOCK = re.compile(r"(\d{4}-)?\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)?")


def route(request: dict, index: int) -> Any:
    """The judge and the simulator by their prompts, else the overhead suite's agent (tool, then text)."""
    messages = request.get("messages") or []
    system = str(messages[0].get("content", "")) if messages else ""
    if "PASS or FAIL" in system or "PASS or FAIL" in str(messages[-1:]):
        verdict = "FAIL" if sum(map(ord, str(messages[-1:]))) % 3 == 0 else "PASS"
        return text(f"{verdict}\nThe reply {'misses' if verdict == 'FAIL' else 'meets'} the criterion.")
    return answer(request, index)


def commands(base_url: str) -> list[tuple[str, list[str]]]:
    demo = ["--cases", "cases/test_cases.json", "--output-dir", "out", "--judge-model", "judge-m"]
    return [
        ("demo", ["run", *demo, "-k", "3", "-v", "--markdown", "out/demo.md", "--junit", "out/demo.xml"]),
        ("mcp", ["run", "--cases", "cases/mcp_cases.json", "--output-dir", "out-mcp", "-k", "2", "--no-judge"]),
        ("openai", ["run", "--cases", "lb/test_cases.json", "--output-dir", "out-lb", "--agent", "openai",
                    "--model", "m", "--base-url", base_url, "-k", "2", "--no-judge", "--markdown", "out-lb/a.md"]),
        ("openai-gated", ["run", "--cases", "lb/test_cases.json", "--output-dir", "out-lb", "--agent", "openai",
                          "--model", "m", "--base-url", base_url, "-k", "2", "--no-judge", "--baseline", "last",
                          "--gate", "pass_at_1", "--gate", "tool_recall", "-v"]),
        ("history", ["history", "--cases", "lb/test_cases.json", "--output-dir", "out-lb"]),
    ]


def play(code: Path, work: Path, base_url: str) -> dict[str, bytes]:
    """Run every command with the agent_eval of `code` in `work`; each output's masked bytes, by name."""
    shutil.copytree(ROOT / "cases", work / "cases", ignore=shutil.ignore_patterns("__pycache__"))
    (work / "lb").mkdir()
    write_suite(work / "lb", 12)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    env.update(XDG_CACHE_HOME=str(work / "cache"), PYTHONPATH=str(code), COLUMNS="160",
               NO_COLOR="1", OPENAI_API_KEY="bench", OPENAI_BASE_URL=base_url)
    cli = [sys.executable, "-c", "import sys; from agent_eval.cli import main; sys.exit(main())"]
    outputs: dict[str, bytes] = {}
    steps = commands(base_url)
    for name, args in steps:
        done = subprocess.run([*cli, *args], cwd=work, env=env, capture_output=True, timeout=600)
        outputs[f"{name}.stdout"] = f"exit {done.returncode}\n".encode() + done.stdout
        if name == "demo":
            report = _newest(work / "out")
            steps.append(("rescore", ["rescore", str(report), "--no-judge"]))
        if name == "openai-gated":
            first, second = sorted((work / "out-lb").glob("*.json"), key=_written)[:2]
            steps.append(("compare", ["compare", str(first), str(second), "--gate", "pass_at_1"]))
    written = (p for p in work.rglob("*") if p.suffix in (".json", ".md", ".xml", ".html")
               and p.parent.name.startswith("out"))
    for path in sorted(written, key=_written):  # two runs' reports have one masked name: number them in order
        name, n = _named(path, work), 1
        while name in outputs:  # out-lb/<run>.json, then out-lb/<run>#2.json
            n += 1
            name = f"{_named(path.with_suffix(''), work)}#{n}{path.suffix}"
        outputs[name] = path.read_bytes()
    return {name: mask(name, data, work) for name, data in outputs.items()}


def _written(path: Path) -> int:
    """When a file was last written: the order of two reports whose run ids start in the same second (the
    ids' random part would order them at random)."""
    return path.stat().st_mtime_ns


def _newest(folder: Path) -> Path:
    return max((p for p in folder.glob("*.json") if RUN_ID.search(p.name)), key=lambda p: p.stat().st_mtime)


def _named(path: Path, work: Path) -> str:
    """The output's name with its run id masked, so that the two trees' files pair up."""
    return RUN_ID.sub("<run>", str(path.relative_to(work)))


def mask(name: str, data: bytes, work: Path) -> bytes:
    """The bytes with what must differ between two runs replaced by placeholders."""
    if name.endswith(".json"):
        data = _mask_json(data)
    textual = data.decode("utf-8", "replace").replace(str(work.resolve()), "<dir>").replace(str(work), "<dir>")
    textual = PAGE_DATA.sub(lambda m: m.group(1) + _mask_json(m.group(2).encode(), IGNORED).decode() + m.group(3),
                            textual)
    if name.startswith("history"):  # the sparkline of a latency column moves with the latencies
        textual = SPARKLINE.sub("<trend>", textual)
    textual = CLOCK.sub("<clock>", RUN_ID.sub("<run>", textual))
    return SECONDS.sub("<t>", textual).encode()


def _mask_json(data: bytes, dropped: frozenset[str] = frozenset()) -> bytes:
    """JSON with its volatile values masked (and its top-level keys `dropped` left out), indented so that a
    difference shows as a line."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return data
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k not in dropped}
    return orjson.dumps(_mask_value(value), option=orjson.OPT_INDENT_2)


def _mask_value(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _mask_value(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_value(v, key) for v in value]
    if VOLATILE_KEY.search(key) and isinstance(value, (int, float, str)) and not isinstance(value, bool):
        return "<v>"
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", type=Path, required=True, metavar="DIR")
    parser.add_argument("--ignore-page-key", action="append", default=[], metavar="KEY",
                        help="Leave this top-level key of the page's embedded data out (one the other tree lacks).")
    parser.add_argument("--keep", type=Path, metavar="OUT", help="Keep both trees' work folders here.")
    args = parser.parse_args(argv)
    global IGNORED
    IGNORED = frozenset(args.ignore_page_key)
    results = {}
    with LoopbackServer(route) as server, tempfile.TemporaryDirectory() as tmp:
        for label, code in (("before", args.against.resolve()), ("after", ROOT)):
            work = Path(tmp) / "w"  # the same path for both, so that paths in outputs are equal
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            results[label] = play(code, work, server.base_url)
            if args.keep:
                shutil.copytree(work, args.keep / label, dirs_exist_ok=True)
    before, after = results["before"], results["after"]
    differing = 0
    for name in sorted(before.keys() | after.keys()):
        if before.get(name) == after.get(name):
            print(f"same     {name}")
            continue
        differing += 1
        print(f"DIFFERS  {name}")
        old = (before.get(name) or b"<missing>").decode().splitlines()
        new = (after.get(name) or b"<missing>").decode().splitlines()
        for line in list(difflib.unified_diff(old, new, "before", "after", n=1, lineterm=""))[:40]:
            print("    " + line[:200])
    print(f"{len(before.keys() | after.keys())} outputs, {differing} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
