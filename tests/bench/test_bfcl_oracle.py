"""The oracle: on a fresh import, `run --agent gold --user gold --no-judge` passes every case. Here the whole
base category and a sample of each other category; bench/bfcl_oracle.py runs all 4 x 200."""
from __future__ import annotations

from pathlib import Path

import orjson

from agent_eval.bench import ImportRequest
from agent_eval.bench.bfcl.importer import import_suite
from tests.cli import run_cli

SAMPLE = {"multi_turn_miss_func": ("multi_turn_miss_func_0", "multi_turn_miss_func_57", "multi_turn_miss_func_121",
                                   "multi_turn_miss_func_199"),
          "multi_turn_miss_param": ("multi_turn_miss_param_3", "multi_turn_miss_param_88",
                                    "multi_turn_miss_param_160"),
          "multi_turn_long_context": ("multi_turn_long_context_1", "multi_turn_long_context_105",
                                      "multi_turn_long_context_190")}


def _gold_run(cases: Path, out: Path) -> dict:
    result = run_cli("run", "--cases", cases, "--agent", "gold", "--user", "gold", "--no-judge", "--quiet",
                     "--no-html", "--output-dir", out)
    assert result.exit_code == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return orjson.loads(next(out.glob("*.json")).read_bytes())


def test_the_gold_agent_passes_every_case_of_a_fresh_base_import(tmp_path: Path) -> None:
    suite = tmp_path / "base"
    assert run_cli("bench", "import", "bfcl", "--out", suite).exit_code == 0
    report = _gold_run(suite / "cases.json", tmp_path / "reports")
    assert len(report["cases"]) == 200
    assert {entry["status"] for entry in report["cases"]} == {"passed"}
    assert report["settings"]["bench"] == {"benchmark": "bfcl", "parts": ["multi_turn_base"], "package": "bfcl-eval",
                                           "version": "2026.3.23",
                                           "counts": {"cases": 200, "turns": 734, "gold_calls": 1142}}


def test_the_gold_agent_passes_a_sample_of_every_other_category(tmp_path: Path) -> None:
    ids = frozenset(i for sample in SAMPLE.values() for i in sample)
    result = import_suite(ImportRequest(tmp_path / "s", None, {"category": tuple(SAMPLE)}, only=ids))
    report = _gold_run(result.cases_file, tmp_path / "reports")
    assert {entry["id"]: entry["status"] for entry in report["cases"]} == dict.fromkeys(ids, "passed")
