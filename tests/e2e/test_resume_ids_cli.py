"""--resume refuses a journal whose run id is not YYYYmmdd-HHMMSS-<6 hex> (exit 2), so a forged `../../x`
writes nothing outside the output folder (section 12b, "Ids are checked where they become file names")."""
from __future__ import annotations

from pathlib import Path

import orjson

from tests.builders import LOOKUP_TOOLS, write_suite
from tests.e2e.hardening import agent_eval


def test_a_forged_run_id_in_a_journal_is_refused(tmp_path: Path) -> None:
    agent = "def agent(task):\n    return 'ok'\n"
    cases_file = write_suite(tmp_path, [{"id": "a", "query": "q", "expect": {"contains": "ok"}}],
                             {"name": "demo", "tools": "tools.py", "agent": "agent.py:agent"},
                             {"tools.py": LOOKUP_TOOLS, "agent.py": agent})
    done = agent_eval(tmp_path, "run", "--cases", cases_file, "--no-html", "-x")
    assert done.code == 0, done.err
    run_id = done.report["run_id"]
    journal = tmp_path / "reports" / f"{run_id}.jsonl"
    lines = journal.read_bytes().splitlines()
    header = orjson.loads(lines[0])
    header["run_id"] = "../../escaped"
    journal.write_bytes(b"\n".join([orjson.dumps(header), *lines[1:]]) + b"\n")
    before = set(tmp_path.parent.rglob("escaped*"))
    resumed = agent_eval(tmp_path, "run", "--resume", run_id, "--output-dir", "reports")
    assert resumed.code == 2
    assert "is not a run id" in resumed.err and "YYYYmmdd-HHMMSS-<6 hex>" in resumed.err
    assert set(tmp_path.parent.rglob("escaped*")) == before
    bad_flag = agent_eval(tmp_path, "run", "--resume", "../../x", "--output-dir", "reports")
    assert bad_flag.code == 2 and "is not a run id" in bad_flag.err
