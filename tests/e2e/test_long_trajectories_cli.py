"""A run of 20,000 calls against 1,500 expected ones scores (no RecursionError), with section 6's metrics
computed exactly (section 12b, "Any length scores")."""
from __future__ import annotations

from pathlib import Path

from tests.builders import LOOKUP_TOOLS, write_suite
from tests.e2e.hardening import agent_eval, all_runs

AGENT = '''
def agent(task):
    for j in range(20000):
        task.call_tool("lookup", key=f"k{j % 2000}")
    return "done"
'''


def test_20000_calls_against_1500_expected_ones_score(tmp_path: Path) -> None:
    expected = [{"name": "lookup", "args": {"key": f"k{i}"}} for i in range(1500)]
    cases = [{"id": "long", "query": "look everything up", "expected_tools": expected, "trajectory": "unordered"},
             {"id": "long-subset", "query": "q", "expected_tools": expected, "trajectory": "subset"}]
    data = {f"k{i}": str(i) for i in range(2000)}
    cases_file = write_suite(tmp_path, cases, {"name": "long", "tools": "tools.py", "agent": "agent.py:agent",
                                               "initial_env": {"data": data}},
                             {"tools.py": LOOKUP_TOOLS, "agent.py": AGENT})
    done = agent_eval(tmp_path, "run", "--cases", cases_file, "--no-html", "--quiet")
    assert done.code == 1, done.err  # the subset case fails: 18,500 calls are not among the expected ones
    runs = all_runs(done.report)
    (run,) = runs["long"]
    assert run["status"] == "passed"
    assert run["checks"][0]["detail"] == "unordered: all 1500 expected calls matched among 20000 calls"
    metrics = run["metrics"]
    # E = 1,500 lookups, A = 20,000 lookups: |E ∩ A| = 1,500, recall 1500/1500, precision 1500/20000 = 0.075,
    # every expected key k0..k1499 is among the calls, so 1,500 of 1,500 fields match; efficiency 0.075
    assert metrics["tool_recall"] == 1.0 and metrics["tool_precision"] == 0.075
    assert metrics["param_accuracy"] == 1.0 and metrics["step_efficiency"] == 0.075
    (subset,) = runs["long-subset"]
    assert subset["status"] == "failed"
    assert subset["checks"][0]["detail"].startswith("subset: 18500 call(s) not allowed by expected_tools")
