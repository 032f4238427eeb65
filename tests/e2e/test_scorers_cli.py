"""`agent-eval run` / `validate` end to end (in-process) on a suite with hidden-style scorer modules."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest

from tests.cli import CliResult, run_cli

SUITE = Path(__file__).resolve().parent.parent / "fixtures" / "scorer_suite"


def agent_eval(*args: str) -> CliResult:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    return run_cli(*args, cwd=os.getcwd(), env=env, timeout=120)


def test_run_gives_the_hand_computed_summaries_and_statuses(tmp_path: Path) -> None:
    proc = agent_eval("run", "--cases", str(SUITE / "test_cases.json"), "--output-dir", str(tmp_path),
                      "--quiet")
    # c2's runs fail the `polite` scorer check -> a failed case -> exit 1.
    assert proc.returncode == 1, proc.stderr
    [path] = tmp_path.glob("*.json")
    report = orjson.loads(path.read_bytes())
    # Counted runs (repeat 2; c3 is skipped and left out), by the fixture agent's scripted replies:
    #   c1#0 "please help"      exact T, spent 11 within T, words 2, flaky len 11 long T,  polite T
    #   c1#1 "please crash now" exact F, spent 16 within T, words 3, flaky RAISES,         polite T
    #   c2#0 "ok"               exact T, spent 2  within T, words 1, flaky len 2  long F,  polite F
    #   c2#1 "no thanks"        exact F, spent 9  within F, words 2, flaky len 9  long F,  polite F
    assert report["summary"]["scorers"] == {
        # a function with column_map returning a bare bool: 2 of 4
        "exact": {"exact": {"true_count": 2, "true_fraction": 0.5}, "errors": 0},
        # a class with summarize: 11 + 16 + 2 + 9 = 38 over 4 rows
        "Budget": {"total_spent": 38, "rows": 4, "errors": 0},
        # async, bare number: [2,3,1,2] mean 2; sorted [1,2,2,3]: p50 at rank 1.5 = 2, p95 at 2.85 = 2 + .85
        "words": {"words": {"mean": 2.0, "p50": 2.0, "p95": pytest.approx(2.85)}, "errors": 0},
        # raised once: length over the 3 runs with one [11,2,9]: mean 22/3; sorted [2,9,11]: p50 9,
        # p95 at rank 1.9 = 9 + .9*2 = 10.8; long over all 4 runs, the raised one false: 1/4
        "flaky": {"length": {"mean": pytest.approx(22 / 3), "p50": 9.0, "p95": pytest.approx(10.8)},
                  "long": {"true_count": 1, "true_fraction": 0.25}, "errors": 1},
        # a check: passed 2 of 4; the string `reason` is not summarised
        "polite": {"passed": {"true_count": 2, "true_fraction": 0.5}, "errors": 0},
    }
    c1, c2, c3 = report["cases"]
    assert [c["status"] for c in (c1, c2, c3)] == ["passed", "failed", "skipped"]
    crashed = c1["runs"][1]
    assert crashed["status"] == "passed" and crashed["scorers"]["flaky"] is None
    assert crashed["scorer_errors"] == {"flaky": "ValueError: cannot parse the reply (hidden_scorers.py:38 in "
                                        "flaky)"}
    assert "scorer:flaky" not in [ch["name"] for ch in crashed["checks"]]
    assert c2["runs"][0]["checks"][-1] == {"name": "scorer:polite", "passed": False, "detail": "no please"}
    assert c2["runs"][0]["scorers"]["Budget"] == {"spent": 2, "within": True}


def test_unfillable_parameter_exits_2_before_anything_runs(tmp_path: Path) -> None:
    for name in ("hidden_scorers.py", "agent.py"):
        shutil.copy(SUITE / name, tmp_path / name)
    data = orjson.loads((SUITE / "test_cases.json").read_bytes())
    del data["cases"][1]["expected_output"]  # `exact` maps gold -> expected_output
    (tmp_path / "cases.json").write_bytes(orjson.dumps(data))
    out = tmp_path / "reports"
    for args in (["validate"], ["run", "--output-dir", str(out)]):
        proc = agent_eval(*args, "--cases", str(tmp_path / "cases.json"))
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "case 'c2', field 'expected_output'" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists() or not list(out.glob("*.json"))
