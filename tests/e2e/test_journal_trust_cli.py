"""The report never trusts a file others can write: an agent that truncates or overwrites the journal while
the command runs gets a warning naming it, and the report is still whole, valid JSON with every run."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.builders import run_cli, write_suite

AGENT = '''
import time
from pathlib import Path


def agent(task):
    if task.case_id == "c2":
        time.sleep(1.5)  # the journal flushes the runs before this one (at most a second apart)
        for journal in Path(task.metadata["out"]).glob("*.jsonl"):
            if task.metadata["how"] == "truncate":
                journal.write_bytes(b"")
            else:
                size = journal.stat().st_size
                journal.write_bytes(b"x" * size)  # the same length: every offset still "fits"
    return "done " + task.case_id
'''


@pytest.mark.parametrize("how", ["truncate", "overwrite"])
def test_a_journal_changed_under_the_command_is_named_and_the_report_is_whole(tmp_path: Path, how: str) -> None:
    out = tmp_path / "out"
    rows = [{"id": f"c{n}", "query": "go", "expect": {"icontains": "done"}, "metadata": {"out": str(out), "how": how}}
            for n in range(5)]
    cases = write_suite(tmp_path, rows, {"name": "journal", "agent": "agent.py:agent"}, {"agent.py": AGENT})
    done = run_cli("run", "--cases", cases, "--output-dir", out, "--no-html", "--concurrency", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    [report_path] = [p for p in out.glob("*.json")]
    report = orjson.loads(report_path.read_bytes())  # valid JSON
    runs = {c["id"]: c["runs"] for c in report["cases"]}
    assert sorted(runs) == [f"c{n}" for n in range(5)]
    assert all(len(r) == 1 and r[0]["trace"]["final_answer"] == f"done {case}" for case, r in runs.items())
    [journal] = out.glob("*.jsonl")
    warnings = [line for line in done.stderr.splitlines() if str(journal) in line and "warning" in line]
    assert len(warnings) == 1, done.stderr
