"""What a new user and a CI log meet: tracebacks with file:line, whole reasons in a piped log, -v,
the short case list of a large suite, --lf, -x, not_run, and `run --gate`."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import orjson
import pytest

from tests.builders import CLI as BUILT_CLI
from tests.builders import LOOKUP_TOOLS
from tests.cli import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[2]
CLI = [BUILT_CLI]
TOOLS = LOOKUP_TOOLS

# Line numbers matter: the tests expect `bank_agent.py:3 in parse` and `bank_agent.py:11 in agent`.
AGENT = '''
def parse(text):
    return {"amount": 1}["missing"]


def agent(task):
    if task.input == "crash":
        return parse(task.input)
    if task.input == "tool":
        task.call_tool("lookup", key="nope")
    value = task.call_tool("lookup", key="a")
    if task.input == "long":
        raise ValueError("x" * 300)
    return "ok " + value if task.input.startswith("pass") else "no"
'''


def case(case_id: str, query: str) -> dict:
    return {"id": case_id, "query": query, "expect": {"contains": "ok"}}


@pytest.fixture
def suite(tmp_path):
    folder = tmp_path / "bank"
    folder.mkdir()
    (folder / "tools.py").write_text(TOOLS)
    (folder / "bank_agent.py").write_text(AGENT)

    def write(cases: list[dict]) -> Path:
        block = {"name": "bank", "tools": "tools.py", "agent": "bank_agent.py:agent",
                 "initial_env": {"data": {"a": "alpha"}}}
        path = folder / "cases.json"
        path.write_bytes(orjson.dumps({"suite": block, "cases": cases}))
        return path

    return write


def cli(*args, env_extra: dict | None = None, columns: str | None = "400") -> CliResult:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_", "COLUMNS"))}
    env["NO_COLOR"] = "1"
    if columns is not None:
        env["COLUMNS"] = columns
    env.update(env_extra or {})
    return run_cli(*args, cwd=ROOT, env=env, timeout=120)


def reports(out: Path) -> list[dict]:
    """Every JSON report in out, oldest first (two runs started in the same second share a run-id prefix,
    so the order is created_at's, which holds milliseconds)."""
    found = [orjson.loads(p.read_bytes()) for p in out.glob("2*.json")]
    return sorted(found, key=lambda r: (r["created_at"], r["run_id"]))


def test_a_crashing_agent_keeps_its_traceback_and_the_terminal_names_file_and_line(suite, tmp_path):
    out = tmp_path / "out"
    result = cli("run", "--cases", suite([case("crash", "crash"), case("tool", "tool")]), "--output-dir", out,
                 "--no-html")
    assert result.returncode == 1, result.stdout + result.stderr
    (report,) = reports(out)
    crash_trace = report["cases"][0]["runs"][0]["trace"]
    assert crash_trace["agent_error"] == "KeyError: 'missing'"
    text = crash_trace["agent_error_traceback"]
    # Only the user's frames: agent() then parse(); none of agent-eval's, asyncio's or threading's.
    assert text.startswith("Traceback (most recent call last):")
    assert text.count('File "') == 2 and "bank_agent.py\", line 8, in agent" in text
    assert "bank_agent.py\", line 3, in parse" in text and text.endswith("KeyError: 'missing'")
    assert "agent_eval" not in text and "threading" not in text and "asyncio" not in text
    assert "agent_error: KeyError: 'missing' (bank_agent.py:3 in parse)" in result.stdout
    # A tool that raises: its step keeps the tool's traceback; the agent's own frames are below ToolError.
    tool_trace = report["cases"][1]["runs"][0]["trace"]
    step = tool_trace["steps"][0]
    assert step["error"] == "KeyError: 'nope'"
    assert 'tools.py", line 8, in lookup' in step["error_traceback"]
    assert "bank_agent.py:10 in agent" in result.stdout  # the uncaught ToolError, where the agent called


def test_a_piped_log_is_160_wide_and_keeps_the_whole_reason(suite, tmp_path):
    result = cli("run", "--cases", suite([case("long", "long")]), "--output-dir", tmp_path / "out", "--no-html",
                 columns=None)
    assert result.returncode == 1
    width = max(len(line) for line in result.stdout.splitlines())
    assert 100 < width <= 160
    # The agent's error is 300 x: the reason wraps over lines of the table and is never cut with "…".
    assert "…" not in result.stdout
    assert sum(len(run) for run in re.findall(r"x{5,}", result.stdout)) == 300


def test_verbose_prints_every_failed_check_of_every_failed_run(suite, tmp_path):
    path = suite([{**case("two", "fail"), "expect": {"contains": "ok", "not_contains": "no"}}])
    quiet = cli("run", "--cases", path, "--output-dir", tmp_path / "a", "--no-html", "-k", "2")
    loud = cli("run", "--cases", path, "--output-dir", tmp_path / "b", "--no-html", "-k", "2", "-v")
    assert "Failed checks" not in quiet.stdout
    section = loud.stdout.split("Failed checks", 1)[1]
    assert "two #0 failed" in section and "two #1 failed" in section
    assert section.count("expect:contains") == 2 and section.count("expect:not_contains") == 2


def test_a_large_suite_lists_only_the_cases_that_did_not_pass(suite, tmp_path):
    cases = [case(f"p{i:02}", "pass") for i in range(52)] + [case("f1", "fail")]
    path = suite(cases)
    result = cli("run", "--cases", path, "--output-dir", tmp_path / "a", "--no-html")
    assert "│ f1 " in result.stdout and "│ p00 " not in result.stdout
    assert "52 passed case(s) not listed (-v lists every case)." in result.stdout
    everything = cli("run", "--cases", path, "--output-dir", tmp_path / "b", "--no-html", "-v")
    assert "│ p00 " in everything.stdout and "not listed" not in everything.stdout


def test_exitfirst_stops_taking_runs_and_marks_the_rest_not_run(suite, tmp_path):
    out = tmp_path / "out"
    path = suite([case("a", "pass"), case("b", "fail"), case("c", "pass"), case("d", "pass")])
    result = cli("run", "--cases", path, "--output-dir", out, "--no-html", "-x", "--concurrency", "1")
    assert result.returncode == 1, result.stdout + result.stderr
    (report,) = reports(out)
    assert report["stopped_early"] is True and report["interrupted"] is False and report["exit_code"] == 1
    assert [c["status"] for c in report["cases"]] == ["passed", "failed", "not_run", "not_run"]
    assert report["cases"][2]["runs"] == [] and report["cases"][2]["pass_rate"] is None
    s = report["summary"]
    assert (s["cases_not_run"], s["cases_passed"], s["cases_failed"], s["runs"]) == (2, 1, 1, 2)
    assert s["pass_at_1"] == 0.5  # (1/1 + 0/1) / 2 counted cases; not_run cases count in no figure
    assert "stopped early by -x" in result.stdout and "(2 cases not run)" in result.stdout


def test_exitfirst_is_not_triggered_by_a_passing_run(suite, tmp_path):
    out = tmp_path / "out"
    result = cli("run", "--cases", suite([case("a", "pass")]), "--output-dir", out, "--no-html", "-x")
    assert result.returncode == 0
    assert reports(out)[0]["stopped_early"] is False


def test_last_failed_runs_only_what_failed_and_baseline_last_skips_a_stopped_run(suite, tmp_path):
    out = tmp_path / "out"
    path = suite([case("a", "pass"), case("b", "fail"), case("c", "crash"), case("d", "pass")])
    first = cli("run", "--cases", path, "--output-dir", out, "--no-html", "--lf")
    assert "warning: --lf:" in first.stderr and "running every selected case" in first.stderr
    assert first.returncode == 1
    second = cli("run", "--cases", path, "--output-dir", out, "--no-html", "--lf")
    newest = reports(out)[-1]
    assert [c["id"] for c in newest["cases"]] == ["b", "c"]
    assert newest["settings"]["last_failed"] == ["b", "c"]
    assert second.returncode == 1
    # A stopped-early run is never `--baseline last`, nor a run that used --lf (the second run, of b and c
    # only): the gate compares with the first run, which found no earlier run to --lf and ran every case.
    cli("run", "--cases", path, "--output-dir", out, "--no-html", "-x", "--concurrency", "1")
    stopped = reports(out)[-1]
    assert stopped["stopped_early"] is True
    gated = cli("run", "--cases", path, "--output-dir", out, "--no-html", "--baseline", "last")
    first_run = reports(out)[0]
    assert first_run["settings"]["last_failed"] is None and len(first_run["cases"]) == 4
    assert reports(out)[-1]["gate"]["base_run_id"] == first_run["run_id"], gated.stdout


def test_run_gate_needs_a_baseline_and_chooses_the_gated_metrics(suite, tmp_path):
    out = tmp_path / "out"
    path = suite([case("a", "pass"), case("b", "fail")])
    missing = cli("run", "--cases", path, "--output-dir", out, "--gate", "tool_recall")
    assert missing.returncode == 2 and "--gate needs --baseline" in " ".join(missing.stderr.split())
    assert "Traceback" not in missing.stderr
    cli("run", "--cases", path, "--output-dir", out, "--no-html")
    base = reports(out)[0]
    cli("run", "--cases", path, "--output-dir", out, "--no-html", "--baseline", out / f"{base['run_id']}.json",
        "--gate", "pass_at_1=0.2", "--gate", "latency_p95_s=1")
    gate = reports(out)[-1]["gate"]
    assert [(m["metric"], m["max_drop"]) for m in gate["metrics"]] == [("pass_at_1", 0.2), ("latency_p95_s", 1.0)]
    unknown = cli("run", "--cases", path, "--output-dir", out, "--baseline", "last", "--gate", "nope")
    assert unknown.returncode == 2 and "unknown metric" in unknown.stderr


def test_prices_come_from_the_suite_then_genai_prices_and_a_missing_one_is_explained(suite, tmp_path, loopback):
    srv = loopback(lambda request, index: "ok")  # 10 prompt + 5 completion tokens per call
    path = suite([case("a", "pass")])
    block = orjson.loads(path.read_bytes())
    block["suite"]["pricing"] = {"my-model": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}}
    path.write_bytes(orjson.dumps(block))
    out = tmp_path / "out"
    runs = {}
    for model in ("my-model", "gpt-4o-mini", "llama-local-7b"):
        result = cli("run", "--cases", path, "--agent", "openai", "--model", model, "--base-url", srv.base_url,
                     "--output-dir", out, "--no-html", env_extra={"OPENAI_API_KEY": "sk-test"})
        runs[model] = (result, reports(out)[-1])
    result, report = runs["my-model"]
    assert report["settings"]["prices"] == {"my-model": "suite"}
    assert report["summary"]["cost_total_usd"] == 10 * 1.0 / 1e6 + 5 * 2.0 / 1e6  # $0.00002
    result, report = runs["gpt-4o-mini"]
    assert report["settings"]["prices"] == {"gpt-4o-mini": "genai-prices"}
    # genai-prices: gpt-4o-mini costs $0.15 per million prompt tokens and $0.60 per million completion.
    assert abs(report["summary"]["cost_total_usd"] - (10 * 0.15 + 5 * 0.6) / 1e6) < 1e-12
    result, report = runs["llama-local-7b"]
    assert report["settings"]["prices"] == {"llama-local-7b": None}
    assert report["summary"]["cost_total_usd"] is None
    text = " ".join(result.stdout.split())
    assert "cost n/a: no price for model 'llama-local-7b': add it to the suite block's pricing" in text
    assert "cost total n/a (no price for llama-local-7b)" in text


def _on_a_terminal(*args) -> str:
    """stdout of the CLI when it writes to a pseudo-terminal, as a user at a shell sees it (a subprocess: the
    terminal is the process's own stdout)."""
    import pty

    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    env.update(NO_COLOR="1", COLUMNS="120", TERM="xterm")
    master, slave = pty.openpty()
    proc = subprocess.Popen([*CLI, *map(str, args)], stdout=slave, stderr=subprocess.PIPE, cwd=ROOT, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode()


def test_list_is_a_table_on_a_terminal_and_tsv_when_piped(suite, tmp_path):
    path = suite([{**case("a", "pass"), "tags": ["smoke", "fast"]}, {"id": "b", "messages": ["hi", "again"],
                                                                      "expect": {"contains": "ok"}}])
    piped = cli("list", "--cases", path)
    assert piped.returncode == 0
    assert piped.stdout == "a\tquery\tsmoke,fast\nb\tmessages\t\n"
    table = _on_a_terminal("list", "--cases", path)
    assert "\t" not in table and "2 case(s) of" in table
    assert re.search(r"│ a\s+│ query\s+│ smoke,fast\s+│", table), table


def test_history_without_runs_hints_at_the_case_file(suite, tmp_path):
    result = cli("history", "--cases", suite([case("a", "pass")]), "--output-dir", tmp_path / "none")
    assert result.returncode == 0
    assert "pass the --cases that your runs used" in " ".join(result.stdout.split())


def test_an_lf_run_that_selected_every_filtered_case_counts_as_full(suite, tmp_path):
    out = tmp_path / "out"
    path = suite([case("a", "pass"), case("b", "fail")])
    cli("run", "--cases", path, "--output-dir", out, "--no-html")
    # Only b failed, and --filter b keeps only b: --lf selects the whole filtered selection.
    lf = cli("run", "--cases", path, "--output-dir", out, "--no-html", "--lf", "--filter", "b")
    assert "every selected case failed or errored in the last run" in " ".join(lf.stderr.split())
    lf_run = reports(out)[-1]
    assert [c["id"] for c in lf_run["cases"]] == ["b"] and lf_run["settings"]["last_failed"] is None
    cli("run", "--cases", path, "--output-dir", out, "--no-html", "--filter", "b", "--baseline", "last")
    assert reports(out)[-1]["gate"]["base_run_id"] == lf_run["run_id"]
