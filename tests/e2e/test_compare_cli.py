"""`agent-eval compare BASE NEW1 NEW2 ...`: one matrix in the terminal, Markdown and HTML; exit 1 if any
new report regressed."""
from __future__ import annotations

import os
from pathlib import Path

import orjson

from tests.builders import LOOKUP_TOOLS
from tests.cli import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[2]
TOOLS = LOOKUP_TOOLS

# Three agents over one suite: `good` passes everything, `same` too, `broken` fails the "b" cases.
AGENTS = '''
def good(task):
    return "ok " + task.call_tool("lookup", key="a")


def same(task):
    return good(task)


def broken(task):
    return "no" if task.input.startswith("b") else good(task)
'''


def cli(*args) -> CliResult:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    env.update(COLUMNS="1000", NO_COLOR="1")  # the headers hold the agents' full paths (long under xdist)
    return run_cli(*args, cwd=ROOT, env=env, timeout=120)


def test_three_reports_make_one_matrix_and_a_regression_exits_1(tmp_path):
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "tools.py").write_text(TOOLS)
    (folder / "agents.py").write_text(AGENTS)
    cases = [{"id": f"{x}{i}", "query": f"{x}{i}", "expect": {"contains": "ok"},
              "expected_tools": [{"name": "lookup", "args": {"key": "a"}}]} for x in "ab" for i in range(6)]
    path = folder / "cases.json"
    path.write_bytes(orjson.dumps({"suite": {"name": "bank", "tools": "tools.py",
                                             "initial_env": {"data": {"a": "alpha"}}}, "cases": cases}))
    out = tmp_path / "out"
    paths = []
    for agent in ("good", "same", "broken"):
        cli("run", "--cases", path, "--agent", f"{folder}/agents.py:{agent}", "-k", "3", "--output-dir", out,
            "--no-html", "--quiet")
        paths.append(max(out.glob("2*.json"), key=lambda p: p.stat().st_mtime_ns))
    md, page = tmp_path / "cmp.md", tmp_path / "cmp.html"
    result = cli("compare", *paths, paths[0], "--markdown", md, "--html", page)
    # base=good, #1=same, #2=broken, #3=good again: only #2 regressed.
    assert result.returncode == 1, result.stdout + result.stderr
    text = result.stdout
    assert text.count("Comparison against the base") == 1  # one matrix, not one table per report
    assert "agents.py:broken" in text and "agents.py:same" in text
    pass_row = next(line for line in text.splitlines() if line.strip().startswith("pass_at_1"))
    # base 1.000; #1 1.000; #2: 6 of 12 cases pass every run, so 0.500, regressed; #3 1.000.
    assert pass_row.split() == ["pass_at_1", "1.000", "1.000", "~", "0.500", "▼", "regressed", "1.000", "~"]
    # m = 5 default gated metrics x 3 reports = 15.
    assert "m=15" in text
    differ = text.split("case(s) whose status differs", 1)[1].split("Gate:")[0]
    rows = [line.split() for line in differ.splitlines() if line.strip().startswith(("a", "b"))]
    assert rows == [[f"b{i}", "passed", "passed", "failed", "passed"] for i in range(6)]
    assert "Gate: REGRESSION in #2 (exit 1)" in text
    markdown = md.read_text()
    assert markdown.count("| pass_at_1 |") == 1 and "0.500 ▼ regressed" in markdown
    html = page.read_text()
    assert "<script" not in html and "http" not in html.replace("http-equiv", "")
    assert 'class="regressed">0.500 ▼ regressed<' in html and "agents.py:broken" in html


def test_a_bad_report_among_several_exits_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    good = ROOT / "tests" / "fixtures" / "sample_report.json"
    result = cli("compare", good, good, bad)
    assert result.returncode == 2 and "bad.json" in result.stderr and "Traceback" not in result.stderr


def test_a_judge_flag_without_pairwise_is_exit_2_naming_the_fix():
    # --judge-model and --judge-repeat set the pairwise judge: alone they would be silently ignored.
    sample = ROOT / "tests" / "fixtures" / "sample_report.json"
    for flag, value in (("--judge-model", "m"), ("--judge-repeat", "3"), ("--cases", "cases.json")):
        result = cli("compare", sample, sample, flag, value)
        assert result.returncode == 2, result.stdout + result.stderr
        assert f"{flag} is for the judge of the pairwise comparison: add --pairwise" in result.stderr
        assert "Traceback" not in result.stderr
