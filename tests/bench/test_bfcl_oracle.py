"""The oracle: on a fresh import, `run --agent gold --user gold --no-judge` passes every case. Here a sample of
each category but base (tests/bench/test_bfcl_import.py runs the whole of base); `bench/bfcl_runs.py oracle`
runs all 4 x 200."""
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


def gold_run(cases: Path, out: Path) -> dict:
    result = run_cli("run", "--cases", cases, "--agent", "gold", "--user", "gold", "--no-judge", "--quiet",
                     "--no-html", "--output-dir", out)
    assert result.exit_code == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return orjson.loads(next(out.glob("*.json")).read_bytes())


def test_the_gold_agent_passes_a_sample_of_every_other_category(tmp_path: Path) -> None:
    ids = frozenset(i for sample in SAMPLE.values() for i in sample)
    result = import_suite(ImportRequest(tmp_path / "s", None, {"category": tuple(SAMPLE)}, only=ids))
    report = gold_run(result.cases_file, tmp_path / "reports")
    assert {entry["id"]: entry["status"] for entry in report["cases"]} == dict.fromkeys(ids, "passed")
