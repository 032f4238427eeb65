"""`import otel` of agent-eval's own `--otel` file: one case per `agent_eval.case_id` (from its lowest trial);
the other trials are listed as `another trial of <id>`, never as records that could not be mapped."""
from __future__ import annotations

from pathlib import Path

import orjson

from tests.builders import run_cli, write_suite

AGENT = "def agent(task):\n    return 'done ' + task.case_id\n"


def test_import_of_our_own_otel_file_with_two_trials_lists_the_second_as_another_trial(tmp_path: Path) -> None:
    rows = [{"id": f"c{n}", "query": f"question {n}", "expect": {"icontains": "done"}} for n in range(2)]
    cases = write_suite(tmp_path, rows, {"name": "own", "agent": "agent.py:agent"}, {"agent.py": AGENT})
    spans = tmp_path / "runs.otel.jsonl"
    done = run_cli("run", "--cases", cases, "-k", "2", "--output-dir", tmp_path / "out", "--no-html",
                   "--otel", spans, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "imported.json"
    done = run_cli("import", "otel", spans, "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    written = orjson.loads(out.read_bytes())
    assert sorted(c["id"] for c in (written["cases"] if isinstance(written, dict) else written)) == ["c0", "c1"]
    assert "could not be mapped" not in done.stderr
    assert done.stderr.count("another trial of") == 2 and "another trial of c0" in done.stderr
