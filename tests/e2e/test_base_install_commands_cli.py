"""Every command from the base install alone: the wheel in a new venv that sees only the declared runtime
dependencies (tests/e2e/installed.py builds it, once per pytest process), then each command a user runs without an
extra, `run --otlp-endpoint` included (it needs no extra: the sender uses aiohttp). A subprocess earns its
keep here: which modules the installed process can import is what is under test."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import orjson

from tests.e2e.installed import AGENT, TOOLS, BaseInstall
from tests.otlp_collector import OtlpCollector

def test_every_command_works_from_the_base_install(base_install: BaseInstall, tmp_path: Path) -> None:
    venv = base_install.venv
    work = tmp_path / "work"
    work.mkdir()
    (work / "tools.py").write_text(TOOLS)
    (work / "bank_agent.py").write_text(AGENT)
    suite = {"name": "bank", "tools": "tools.py", "agent": "bank_agent.py:agent",
             "initial_env": {"balances": {"alice": 42}}}
    cases = [{"id": f"balance-{n}", "query": "How much does Alice have?", "expected_tools": [{"name": "get_balance"}],
              "expect": {"contains": "42 euros"}} for n in range(5)]
    (work / "cases.json").write_bytes(orjson.dumps({"suite": suite, "cases": cases}))
    (work / "goldens.jsonl").write_bytes(orjson.dumps({"name": "g1", "input": "hi", "expected_output": "hello"}))
    (work / "evals.jsonl").write_bytes(orjson.dumps({"input": [{"role": "user", "content": "hi"}], "ideal": "hi"}))
    (work / "samples.jsonl").write_bytes(orjson.dumps({"id": "s1", "input": "hi", "target": "hello"}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", NO_COLOR="1", COLUMNS="200")
    cli = str(venv / "bin" / "agent-eval")

    def sh(*args: object) -> subprocess.CompletedProcess:
        done = subprocess.run([cli, *map(str, args)], cwd=work, env=env, capture_output=True, text=True, timeout=300)
        assert "Traceback" not in done.stderr and "ModuleNotFoundError" not in done.stderr, (args, done.stderr)
        return done

    collector = OtlpCollector()
    try:
        for n in (1, 2):
            ran = sh("run", "--cases", "cases.json", "--otlp-endpoint", collector.url, "--otel", f"runs{n}.jsonl",
                     "--junit", "junit.xml", "--markdown", "summary.md")
            assert ran.returncode == 0, ran.stdout + ran.stderr
        assert len(collector.bodies) >= 2 and "--otlp-endpoint" not in ran.stderr  # every run sent, no warning
    finally:
        collector.close()
    first, second = sorted((work / "reports").glob("*.json"))
    expected = {
        ("list", "--cases", "cases.json"): 0, ("validate", "--cases", "cases.json"): 0,
        ("compare", first, second): 0, ("view", second, "--out", "page.html"): 0,
        ("history", "--cases", "cases.json"): 0, ("plan", second): 0,
        ("rescore", second, "--no-judge", "--cases", "cases.json"): 0,
        ("import", "otel", "runs1.jsonl", "--out", "from_otel.json"): 0,
        ("import", "deepeval", "goldens.jsonl", "--out", "from_deepeval.json"): 0,
        ("import", "openai-evals", "evals.jsonl", "--out", "from_evals.json"): 0,
        ("import", "inspect", "samples.jsonl", "--out", "from_inspect.json"): 0,
        ("score", "runs1.jsonl", "--cases", "cases.json", "--output-dir", "scored", "--no-html"): 0,
    }
    codes = {args: sh(*args).returncode for args in expected}
    assert codes == expected
    # A format whose extra is missing is exit 2 naming the extra, never a traceback: OTLP protobuf needs
    # opentelemetry-proto (an export request: field 1, length 0).
    (work / "spans.pb").write_bytes(b"\x0a\x00")
    proto = sh("import", "otel", "spans.pb", "--out", "from_proto.json")
    assert proto.returncode == 2 and "pip install 'agent-eval-trials[otlp]'" in proto.stderr, proto.stderr
    # An Inspect .eval log whose members are zstd-compressed (as Inspect writes them) needs zstandard.
    from tests.inspect_gen import eval_log, sample

    (work / "run.eval").write_bytes(eval_log([sample()]))
    zstd = sh("import", "inspect", "run.eval", "--out", "from_eval.json")
    assert zstd.returncode == 2 and "pip install 'agent-eval-trials[inspect]'" in zstd.stderr, zstd.stderr
