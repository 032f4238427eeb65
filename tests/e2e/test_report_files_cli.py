"""Reports read back by compare, rescore, view and --baseline: a malformed one is exit 2 naming the key."""
from __future__ import annotations

import copy
from pathlib import Path

import orjson
import pytest

from tests.builders import ROOT, make_report
from tests.cli import run_cli


def write(tmp_path: Path, name: str, report: dict) -> Path:
    path = tmp_path / name
    path.write_bytes(orjson.dumps(report))
    return path


@pytest.mark.parametrize("command", ["compare", "rescore", "view", "baseline"])
def test_a_malformed_report_is_exit_2_naming_the_file_and_key(tmp_path: Path, command: str) -> None:
    good = make_report({"a": [True]})
    good["cases_file"] = str(ROOT / "cases" / "test_cases.json")
    bad = copy.deepcopy(good)
    bad["cases"][0]["runs"] = {"0": "not a list"}
    path = write(tmp_path, "bad.json", bad)
    args = {"compare": ["compare", write(tmp_path, "good.json", good), path],
            "rescore": ["rescore", path],
            "view": ["view", path],
            "baseline": ["run", "--cases", ROOT / "cases" / "test_cases.json", "--no-judge",
                         "--baseline", path, "--output-dir", tmp_path / "out"]}[command]
    result = run_cli(*args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    message = " ".join(result.stderr.split())
    assert str(path) in message and "cases[0].runs must be a list, found an object" in message
