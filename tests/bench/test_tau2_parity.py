"""The tau2 parity set: every perturbed gold trajectory, played through agent-eval by a scripted agent and user,
gets the verdict tau2's own orchestrator and evaluator gave it (tests/bench/tau2_parity.json)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.bench.tau2_play import disagreements, parity_cases, parity_entries
from tests.cli import run_cli


def _report(folder: Path) -> dict[str, Any]:
    return dict(orjson.loads(next(folder.glob("*.json")).read_bytes()))


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_every_parity_trajectory_gets_tau2s_own_verdict(tau2_suites: dict[str, Path], domain: str,
                                                        tmp_path: Path) -> None:
    entries = [e for e in parity_entries() if e["domain"] == domain]
    kinds = {e["kind"] for e in entries}
    assert {"gold", "drop_write", "wrong_arg", "extra_write", "reordered", "shifted", "errors_9", "errors_10",
            "reply_omits", "reply_moved", "reply_commas", "reply_spaced"} <= kinds
    assert {e["upstream"]["reward"] for e in entries} == {0.0, 1.0}
    cases = parity_cases(entries, tau2_suites[domain], tau2_suites[domain].parent / f"parity-{tmp_path.name}.json")
    run_cli("run", "--cases", cases, "--no-judge", "--quiet", "--output-dir", tmp_path, "--no-html")
    assert disagreements(entries, _report(tmp_path)) == []
