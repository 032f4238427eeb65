"""Output paths a new user types: `-q` for `--quiet`, and every output flag creating its missing folders.

The CLI is called in-process (tests/cli.py); the suite is a one-case Python agent in a temporary folder.
"""
from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from tests.builders import LOOKUP_TOOLS, write_suite
from tests.cli import run_cli

AGENT = "def agent(task):\n    return 'ok ' + task.call_tool('lookup', key='a')\n"


def cli(*args: object) -> tuple[int, str]:
    result = run_cli(*args)
    return result.exit_code, result.stdout + result.stderr


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    cases = [{"id": "greets", "query": "hi", "expect": {"contains": "ok"}}]
    block = {"name": "door", "tools": "tools.py", "agent": "agent.py:agent", "initial_env": {"data": {"a": "A"}}}
    return write_suite(tmp_path / "suite", cases, block, files={"tools.py": LOOKUP_TOOLS, "agent.py": AGENT})


def test_q_is_quiet_on_run_rescore_and_score(suite: Path, tmp_path: Path):
    code, long_form = cli("run", "--cases", suite, "--output-dir", tmp_path / "r1", "--quiet")
    assert code == 0
    code, short_form = cli("run", "--cases", suite, "--output-dir", tmp_path / "r2", "-q")
    assert code == 0
    same = re.compile(r"\S*r[12]\S*|\d+(\.\d+)?\s*s\b|[0-9a-f]{6,}")  # paths, durations and run ids differ
    assert same.sub("_", short_form) == same.sub("_", long_form)
    assert "greets" not in short_form  # no case table: only the verdict line and the written paths
    code, loud = cli("run", "--cases", suite, "--output-dir", tmp_path / "r0")
    assert code == 0 and "greets" in loud
    (report,) = (tmp_path / "r2").glob("*.json")
    code, rescored = cli("rescore", report, "-q")
    assert code == 0 and "greets" not in rescored
    code, scored = cli("score", report, "--cases", suite, "--output-dir", tmp_path / "r3", "-q")
    assert code == 0 and "greets" not in scored


def test_every_output_flag_creates_its_missing_folders(suite: Path, tmp_path: Path):
    out = tmp_path / "new"
    code, text = cli("run", "--cases", suite, "--output-dir", out / "reports", "-q",
                     "--junit", out / "ci" / "results.xml", "--markdown", out / "md" / "summary.md",
                     "--otel", out / "otel" / "traces.jsonl")
    assert code == 0, text
    assert (out / "ci" / "results.xml").read_bytes().startswith(b"<?xml")
    assert "1 passed" in (out / "md" / "summary.md").read_text()
    assert orjson.loads((out / "otel" / "traces.jsonl").read_bytes().splitlines()[0])["resourceSpans"]
    (report,) = (out / "reports").glob("*.json")

    code, text = cli("rescore", report, "-q", "--junit", out / "re" / "ci" / "r.xml",
                     "--markdown", out / "re" / "md" / "r.md", "--otel", out / "re" / "otel" / "r.jsonl")
    assert code == 0, text
    assert all((out / "re" / sub).is_dir() for sub in ("ci", "md", "otel"))
    code, text = cli("view", report, "--out", out / "pages" / "deep" / "page.html")
    assert code == 0 and (out / "pages" / "deep" / "page.html").read_text().startswith("<!DOCTYPE html>")
    code, text = cli("compare", report, report, report, "--markdown", out / "cmp" / "m.md",
                     "--html", out / "cmp" / "html" / "m.html")
    assert code == 0, text
    assert (out / "cmp" / "m.md").stat().st_size and (out / "cmp" / "html" / "m.html").stat().st_size
    code, text = cli("score", report, "--cases", suite, "--output-dir", out / "scored", "-q",
                     "--junit", out / "sc" / "j.xml", "--markdown", out / "sc" / "m.md")
    assert code == 0, text
    assert (out / "sc" / "j.xml").is_file() and (out / "sc" / "m.md").is_file()


def test_a_labels_file_in_a_missing_folder_is_created(tmp_path: Path):
    from agent_eval.score.labels import Label, append_label

    target = tmp_path / "labels" / "deep" / "run.labels.jsonl"
    append_label(target, Label(run_id="r", case_id="c", trial=0, label="pass", criterion="rubric", note=""))
    assert orjson.loads(target.read_bytes())["case_id"] == "c"
