"""The terminal report at a high -k: every label readable in 100 columns and more, pass^k as pass^1, pass^K
and a sparkline, the whole curve under -v. In-process."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.builders import write_suite
from tests.cli import run_cli

# Trial t of every case succeeds unless t % 4 == 3: 3 successes in every 4 runs, the same each time.
AGENT = '''
def agent(task):
    return "ok" if task.trial % 4 != 3 else "no"
'''
LABELS = ["pass@1", "cases", "runs", "tool recall", "tool precision", "param accuracy", "step efficiency",
          "progress", "loop rate", "recovery rate", "invalid-call rate", "tokens total", "cost total",
          "cost per success", "tokens per success", "latency P50", "latency P95", "latency P99", "mean TTFA"]


@pytest.mark.parametrize("k, columns", [(40, 100), (100, 100), (100, 160)])
def test_every_label_is_whole_at_a_high_k(tmp_path: Path, k: int, columns: int) -> None:
    cases = [{"id": f"case-{i}", "query": "q", "expect": {"contains": "ok"}} for i in range(3)]
    path = write_suite(tmp_path, cases, {"name": "k", "agent": "agent.py:agent"}, {"agent.py": AGENT})
    env = {k_: v for k_, v in os.environ.items() if not k_.startswith(("OPENAI_", "AGENT_EVAL_"))}
    env.update(COLUMNS=str(columns), NO_COLOR="1")
    done = run_cli("run", "--cases", path, "-k", k, "--output-dir", tmp_path / "out", "--no-html", "-v",
                   "--concurrency", "32", cwd=tmp_path, env=env)
    assert done.exit_code == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    report = lines[:lines.index(next(line for line in lines if line.startswith("JSON report:")))]
    assert max(len(line) for line in report) <= columns  # the closing file paths are never wrapped
    head = "\n".join(lines[:lines.index(next(line for line in lines if line.startswith("Cases")))])
    assert "…" not in head  # no label (and no value) of the headline is cut
    for label in [*LABELS, f"pass^{k}", f"pass@{k}", f"pass^1..{k}"]:
        assert re.search(rf"(^|\s){re.escape(label)}\s", head), (label, head)
    # pass^1 = 0.750; pass^k = 0 once k > 3 (every case fails one run in four); a 20-mark sparkline between.
    curve = next(line for line in lines if f"pass^1..{k}" in line)
    assert re.search(r"pass\^1\.\." + str(k) + r"\s+0\.750 [▁▂▃▅▇]{20} 0\.000", curve), curve
    # -v: the whole curve, k=1 .. k=K; pass^2 = 0.75 * (3k/4 - 1) / (k - 1) for each case (hand-computed:
    # k = 40: 30 successes, C(30,2)/C(40,2) = 435/780 = 0.558; k = 100: C(75,2)/C(100,2) = 2775/4950 = 0.561).
    assert f"pass^k for k = 1..{k}" in done.stdout
    assert f"k={k} 0.000" in done.stdout and "k=1 0.750" in done.stdout
    assert f"k=2 {'0.558' if k == 40 else '0.561'}" in done.stdout
