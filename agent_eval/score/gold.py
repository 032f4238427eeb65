"""The checks against a replay of the gold calls, turn by turn: `expected_env: "replay_per_turn"` (the state
after each user turn) and `expected_observations: "replay"` (each turn's gold observations among the run's).

A `Gold` is what run/world.py's replay produced for the case; the run's per-turn states come from the trace
(`turn_env_diffs`, relative to the case's initial state), so `rescore` checks them again without the agent.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agent_eval.records import Case, Check, Step, Trace
from agent_eval.score.envdiff import apply_diff
from agent_eval.score.env_checks import check_expected_env, expected_env_checks

SHOWN_CHARS = 200


@dataclass
class Gold:
    """What the gold calls (`expected_tools`) produce when replayed in order on a fresh world: the state after
    every call, after each user turn, and each turn's observations. `baseline` is the initial state."""

    final: dict[str, Any]
    baseline: dict[str, Any]
    turns: list[dict[str, Any]] = field(default_factory=list)
    observations: list[list[str]] = field(default_factory=list)
    error: str | None = None  # the backend broke during the replay: every check of it fails with this


def gold_turn(call: dict[str, Any]) -> int:
    """The user turn of a gold call (turn 0 when the calls carry none)."""
    turn = call.get("turn")
    return turn if isinstance(turn, int) and not isinstance(turn, bool) else 0


def _check(name: str, passed: bool, detail: str) -> Check:
    return {"name": name, "passed": passed, "detail": detail}


def _ended_before(trace: Trace, turn: int) -> str | None:
    """Why turn `turn` has nothing to check: the run ended before the agent answered it."""
    answered = len(trace.get("turn_steps") or [])
    if turn >= answered:
        return (f"turn {turn}: the run ended before the agent answered user turn {turn} "
                f"(stop_reason {trace.get('stop_reason')}, {answered} turn(s) answered)")
    return None


def per_turn_env_checks(case: Case, trace: Trace, gold: Gold) -> list[Check]:
    """One `expected_env[turn t]` entry per user turn whose gold is non-empty: the state after that turn must
    equal the replay of the gold calls of turns 0..t, and the agent must have made a call in it."""
    if gold.error is not None:
        return [_check("expected_env", False, gold.error)]
    busy = {gold_turn(call) for call in case.get("expected_tools") or ()}
    diffs = trace.get("turn_env_diffs")
    turn_steps = trace.get("turn_steps") or []
    out = []
    for turn, expected in enumerate(gold.turns):
        if turn not in busy:
            continue  # an empty gold turn has no check of its own; a later turn's check sees its effects
        name = f"expected_env[turn {turn}]"
        ended = _ended_before(trace, turn)
        if ended is not None:
            out.append(_check(name, False, ended))
        elif turn_steps[turn] == (turn_steps[turn - 1] if turn else 0):
            out.append(_check(name, False, f"turn {turn}: no tool call"))
        elif diffs is None or turn >= len(diffs):
            out.append(_check(name, False, f"turn {turn}: the trace holds no state after this turn (it was "
                                           "recorded without replay_per_turn); run the case again"))
        else:
            verdict = check_expected_env(expected, apply_diff(gold.baseline, diffs[turn]))
            detail = verdict["detail"].replace("final env", "env", 1).replace("expected_env", "the replay", 1)
            out.append(_check(name, verdict["passed"], f"turn {turn}: {detail}"))
    return out


def state_checks(case: Case, trace: Trace, final_env: Any, expected_env: Any) -> list[Check]:
    """The `expected_env` family: the final state against an object or the replay's final state, or each
    turn's state for "replay_per_turn"."""
    if not isinstance(expected_env, Gold):
        return expected_env_checks(case, trace, final_env, expected_env)
    if case.get("expected_env") == "replay_per_turn":
        return per_turn_env_checks(case, trace, expected_env)
    if case.get("expected_env") != "replay":
        return []
    if expected_env.error is not None:
        return [_check("expected_env", False, expected_env.error)]
    return expected_env_checks(case, trace, final_env, expected_env.final)


def observation_of(step: Step) -> str | None:
    """What the agent received from a call: its output, or its error text."""
    error = step.get("error")
    return error if error is not None else step.get("output")


def observation_checks(case: Case, trace: Trace, final_env: Any, expected_env: Any) -> list[Check]:
    """One `expected_observations[turn t]` entry per user turn with gold calls: the multiset of the gold
    observations of turn t must be contained in that of every observation the run received in turns 0..t."""
    if case.get("expected_observations") != "replay":
        return []
    if not isinstance(expected_env, Gold):
        return [_check("expected_observations", False, "no replay of the gold calls to compare with")]
    if expected_env.error is not None:
        return [_check("expected_observations", False, expected_env.error)]
    steps = trace.get("steps") or []
    turn_steps = trace.get("turn_steps") or []
    out = []
    for turn, wanted in enumerate(expected_env.observations):
        if not wanted:
            continue
        name = f"expected_observations[turn {turn}]"
        ended = _ended_before(trace, turn)
        if ended is not None:
            out.append(_check(name, False, ended))
            continue
        got = Counter(o for s in steps[:turn_steps[turn]] if (o := observation_of(s)) is not None)
        missing = Counter(wanted) - got
        if missing:
            text = str(next(iter(missing)))
            shown = text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 1] + "…"
            out.append(_check(name, False, f"turn {turn}: {sum(missing.values())} of the {len(wanted)} gold "
                                           f"observation(s) missing from the run's, e.g. {shown!r}"))
        else:
            out.append(_check(name, True, f"turn {turn}: all {len(wanted)} gold observation(s) received"))
    return out
