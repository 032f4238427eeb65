"""A real run's summary.ci and flaky cases, and `history --case-id`, as subprocesses."""
from __future__ import annotations

from pathlib import Path

import orjson

from tests.builders import LOOKUP_TOOLS, write_suite
from tests.cli import run_cli

# Case "mixed" passes on its first and third runs only (a counter file per case); "steady" always
# passes; "broken" always fails.
AGENT = '''
from pathlib import Path


def agent(task):
    counter = Path(__file__).parent / f"count-{task.case_id}"
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    if task.case_id == "broken" or (task.case_id == "mixed" and n % 2 == 1):
        return "no"
    return "yes"
'''


def test_flaky_cases_and_intervals_of_a_real_run(tmp_path: Path) -> None:
    cases = [{"id": i, "query": "answer", "expect": {"contains": "yes"}} for i in ("steady", "mixed", "broken")]
    cases_file = write_suite(tmp_path, cases, {"name": "flaky", "tools": "tools.py", "agent": "agent.py:agent",
                                              "initial_env": {"data": {}}},
                             {"tools.py": LOOKUP_TOOLS, "agent.py": AGENT})
    out_dir = tmp_path / "reports"
    done = run_cli("run", "--cases", cases_file, "--repeat", "3", "--concurrency", "1", "--output-dir", out_dir,
                   "--no-html")
    assert done.returncode == 1, done.stderr
    report = orjson.loads(next(out_dir.glob("*.json")).read_bytes())
    flaky = {c["id"]: c["flaky"] for c in report["cases"]}
    assert flaky == {"steady": False, "mixed": True, "broken": False}  # mixed: pass, fail, pass
    summary = report["summary"]
    assert summary["cases_flaky"] == 1
    # pass@1 = (3/3 + 2/3 + 0/3) / 3 = 5/9; its interval holds it
    assert abs(summary["pass_at_1"] - 5 / 9) < 1e-12
    low, high = summary["ci"]["pass_at_1"]
    assert low <= round(5 / 9, 4) <= high and low < high
    assert "1 flaky case: mixed (2/3)" in done.stdout
    assert f"0.556 [{low:.2f}, {high:.2f}]" in done.stdout

    done = run_cli("history", "--cases", cases_file, "--output-dir", out_dir, "--case-id", "mixed")
    assert done.returncode == 0, done.stderr
    assert "history of case mixed: 1 run(s)" in done.stdout and report["run_id"] in done.stdout
    assert "0.667" in done.stdout

    # compare: both reports' intervals side by side (the second run alternates the other way round)
    done = run_cli("run", "--cases", cases_file, "--repeat", "3", "--concurrency", "1", "--output-dir", out_dir,
                   "--no-html")
    second = orjson.loads(next(p for p in out_dir.glob("*.json") if p.stem != report["run_id"]).read_bytes())
    base_path = out_dir / f"{report['run_id']}.json"
    done = run_cli("compare", base_path, out_dir / f"{second['run_id']}.json")
    assert "95% intervals" in done.stdout, done.stdout + done.stderr
    table = done.stdout.split("95% intervals")[1]
    line = next(row for row in table.splitlines() if row.strip().startswith("pass@1 "))
    b_low, b_high = report["summary"]["ci"]["pass_at_1"]
    n_low, n_high = second["summary"]["ci"]["pass_at_1"]
    assert f"[{b_low:.2f}, {b_high:.2f}]" in line and f"[{n_low:.2f}, {n_high:.2f}]" in line
    assert "pass^3" in table
