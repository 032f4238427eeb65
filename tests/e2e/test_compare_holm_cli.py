"""`compare BASE NEW1 NEW2` decides the matrix with Holm's procedure over every test, and says when that
changed a report's verdict. In-process."""
from __future__ import annotations

from pathlib import Path

import orjson

from tests.builders import clean_env, make_report
from tests.cli import run_cli


def test_the_matrix_names_the_correction_that_changed_a_verdict(tmp_path: Path) -> None:
    # 30 cases, one run each. "lazy" fails 3 of them: pass_at_1 falls 0.1. A resample draws none of the 3
    # with probability (27/30)^30 = 0.042, so its p-value is about 0.042: alone (m = 1) that is <= 0.05,
    # regressed; beside "same" (m = 2), Holm's first step needs p <= 0.05/2 = 0.025, so nothing regresses.
    base = make_report({f"c{i}": [True] for i in range(30)}, run_id="20250101-000000-aaaaaa")
    lazy = make_report({f"c{i}": [i >= 3] for i in range(30)}, run_id="20250102-000000-bbbbbb")
    same = make_report({f"c{i}": [True] for i in range(30)}, run_id="20250103-000000-cccccc")
    for report, agent in ((base, "base"), (lazy, "lazy"), (same, "same")):
        report["agent"] = agent
    paths = []
    for report in (base, lazy, same):
        paths.append(tmp_path / f"{report['agent']}.json")
        paths[-1].write_bytes(orjson.dumps(report))
    alone = run_cli("compare", paths[0], paths[1], "--gate", "pass_at_1", env=clean_env())
    assert alone.exit_code == 1, alone.stdout + alone.stderr
    assert "Holm's step-down procedure over m=1 test(s)" in " ".join(alone.stdout.split())
    both = run_cli("compare", *paths, "--gate", "pass_at_1", "--markdown", tmp_path / "cmp.md", env=clean_env())
    assert both.exit_code == 0, both.stdout + both.stderr
    flat = " ".join(both.stdout.split())
    assert "m = 2 tests; alone, #1 lazy would be: regressed" in flat
    assert "Gate: no regression" in flat
    markdown = (tmp_path / "cmp.md").read_text()
    assert "m = 2 tests; alone, #1 lazy would be: regressed" in markdown
    # Each note is a list item of its own (not one run-on paragraph), whole as in the terminal, never cut.
    method = next(line for line in markdown.splitlines() if "Holm's step-down procedure" in line)
    assert method.startswith("- ") and "…" not in method
    assert method.rstrip("`").endswith("(30, 30 per report).")
    assert "- `m = 2 tests; alone, #1 lazy would be: regressed`" in markdown or \
        "- m = 2 tests; alone, #1 lazy would be: regressed" in markdown
