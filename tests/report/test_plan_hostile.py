"""`plan` on a damaged report: an impossible cost (past any float, negative) is an unknown cost, never a
traceback or a negative price; a pass rate outside 0..1 is no rate."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.builders import make_report
from tests.cli import run_cli


def test_a_cost_past_2_53_is_a_damaged_report_naming_its_key(tmp_path: Path) -> None:
    # Every run metric read back is bounded by 2**53 (a 1e308 overflowed the gate's sums): exit 2, never 1.
    path = tmp_path / "r.json"
    path.write_bytes(orjson.dumps(make_report({f"c{i}": [True, i % 2 == 0] for i in range(6)}, cost_usd=1e308)))
    done = run_cli("plan", path, cwd=tmp_path)
    assert done.exit_code == 2 and "Traceback" not in done.stderr
    assert "cases[0].runs[0].metrics.cost_usd" in done.stderr


@pytest.mark.parametrize("cost", [-5.0, -1e-9])
def test_an_impossible_cost_is_unknown(tmp_path: Path, cost: float) -> None:
    report = make_report({f"c{i}": [True, i % 2 == 0] for i in range(6)}, cost_usd=cost)
    path = tmp_path / "r.json"
    path.write_bytes(orjson.dumps(report))
    done = run_cli("plan", path, cwd=tmp_path)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "-$" not in done.stdout
    assert "cost per run is unknown" in done.stdout or "No design" in done.stdout


def test_a_pass_rate_outside_0_and_1_is_no_rate(tmp_path: Path) -> None:
    from agent_eval.report.plan import case_rates

    report = make_report({f"c{i}": [True] for i in range(3)})
    report["cases"][0]["pass_rate"] = 1e308
    report["cases"][1]["pass_rate"] = -1
    assert list(case_rates(report)) == [1.0]


def test_an_infinite_amount_formats_as_na() -> None:
    from agent_eval.report.fmt import format_cost

    assert format_cost(float("inf")) == "n/a" and format_cost(float("nan")) == "n/a"


def test_a_report_past_the_simulated_size_is_exit_2_before_any_simulation(tmp_path: Path) -> None:
    # 20,000 cases took 5.8 GB and over 5 minutes: now refused at once, naming the limit.
    from agent_eval.report.plan import MAX_CASES

    report = make_report({f"c{i}": [True] for i in range(MAX_CASES + 1)})
    path = tmp_path / "big.json"
    path.write_bytes(orjson.dumps(report))
    done = run_cli("plan", path, cwd=tmp_path)
    assert done.exit_code == 2 and "up to 1,000" in done.stderr and "Traceback" not in done.stderr
