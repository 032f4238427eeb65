"""Parity with BFCL's own grader: the frozen set of perturbed gold trajectories (bench/bfcl_parity.py made it:
dropped, wrong, extra, reordered and shifted calls, an empty turn, a missing or mistyped argument, an
unknown function, a miss_func function called before its turn, a miss_param call made without asking),
each with the verdict of upstream's multi-turn checker, is played through `agent-eval run` by a Python
agent replaying it: agent-eval's verdict must be upstream's on every one."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson

from tests.bench.bfcl_play import play_trajectories

FROZEN = Path(__file__).resolve().parent / "bfcl_parity_set.json"


def test_the_frozen_set_covers_every_category_both_verdicts_and_every_perturbation() -> None:
    trajectories = orjson.loads(FROZEN.read_bytes())["trajectories"]
    assert Counter(t["category"] for t in trajectories) == dict.fromkeys(
        ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context"), 30)
    assert {t["upstream"]["valid"] for t in trajectories} == {True, False}
    assert {t["perturbation"] for t in trajectories} >= {
        "drop", "wrong_arg", "extra", "reorder", "shift", "empty_turn", "early_added", "without_asking"}


def test_agent_eval_agrees_with_bfcls_grader_on_every_frozen_trajectory(tmp_path: Path) -> None:
    trajectories = orjson.loads(FROZEN.read_bytes())["trajectories"]
    assert play_trajectories(trajectories, tmp_path) == []
