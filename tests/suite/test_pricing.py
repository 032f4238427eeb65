"""The suite block's `pricing`: each model's two prices present, numbers, finite and at least 0, or
`validate` and `run` are exit 2 naming the model and the key (nothing runs, no report is written)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.builders import write_suite
from tests.cli import run_cli

AGENT = "def agent(task):\n    return 'ok'\n"
ROWS = [{"id": "c1", "query": "q", "expect": {"contains": "ok"}}]

BAD = [
    ({"m-a": {"input_per_mtok": 1.0}}, "suite.pricing.m-a.output_per_mtok"),  # missing
    ({"m-b": {"output_per_mtok": 1.0}}, "suite.pricing.m-b.input_per_mtok"),
    ({"m-c": {"input_per_mtok": -0.01, "output_per_mtok": 1}}, "suite.pricing.m-c.input_per_mtok"),  # negative
    ({"m-d": {"input_per_mtok": 1, "output_per_mtok": -1e308}}, "suite.pricing.m-d.output_per_mtok"),
    ({"m-e": {"input_per_mtok": "0.15", "output_per_mtok": 1}}, "suite.pricing.m-e.input_per_mtok"),  # text
    ({"m-f": {"input_per_mtok": True, "output_per_mtok": 1}}, "suite.pricing.m-f.input_per_mtok"),  # bool
    ({"m-g": {"input_per_mtok": None, "output_per_mtok": 1}}, "suite.pricing.m-g.input_per_mtok"),  # null
    ({"m-h": {"input_per_mtok": [1], "output_per_mtok": 1}}, "suite.pricing.m-h.input_per_mtok"),
    ({"m-i": 0.15}, "suite.pricing.m-i"),  # not an object
    ({"m-j": {"input_per_mtok": 1, "output_per_mtok": 1, "input_per_token": 1}}, "suite.pricing.m-j.input_per_token"),
]


@pytest.mark.parametrize(("pricing", "field"), BAD)
def test_a_wrong_price_is_exit_2_naming_the_model_and_key(tmp_path: Path, pricing: dict, field: str) -> None:
    cases = write_suite(tmp_path / "suite", ROWS, {"name": "priced", "pricing": pricing}, {"agent.py": AGENT})
    for args in (("validate", "--cases", cases),
                 ("run", "--cases", cases, "--agent", f"{cases.parent / 'agent.py'}:agent", "--output-dir",
                  tmp_path / "out", "--no-html")):
        done = run_cli(*args)
        assert done.exit_code == 2, done.stdout + done.stderr
        assert field in done.stdout + done.stderr and "Traceback" not in done.stderr
    assert not list((tmp_path / "out").glob("*.json")) if (tmp_path / "out").exists() else True


def test_prices_of_zero_whole_numbers_and_large_finite_numbers_are_valid(tmp_path: Path) -> None:
    pricing = {"free": {"input_per_mtok": 0, "output_per_mtok": 0}, "dear": {"input_per_mtok": 1e308,
                                                                             "output_per_mtok": 15}}
    cases = write_suite(tmp_path / "suite", ROWS, {"name": "priced", "pricing": pricing})
    done = run_cli("validate", "--cases", cases)
    assert done.exit_code == 0, done.stdout + done.stderr
