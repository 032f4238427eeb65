"""A case's world: its initial env (or the tools module's backend built from it), and the gold replay.

Without a backend, a run's world is a private copy of the plain env dict and its state is that dict. With
one (suite/backend.py), a run's world is `backend(copy of the env)` and its state is `snapshot(world)`.
Either way a check reads a state: a JSON object.
"""
from __future__ import annotations

import copy
import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from agent_eval.redaction import redact_secrets
from agent_eval.score.envdiff import diff_env, diff_env_fast
from agent_eval.score.gold import Gold, gold_turn
from agent_eval.suite.backend import Backend, BackendError
from agent_eval.run.threads import run_apart
from agent_eval.suite.jsonsafe import to_json_safe
from agent_eval.tracebacks import call_user, describe

if TYPE_CHECKING:
    from agent_eval.records import Case
    from agent_eval.suite.cases import Suite
    from agent_eval.suite.tools import ToolSet


class EnvTemplate:
    """A pristine initial env, serialised once so each run's private copy is one orjson parse.

    An orjson round trip is several times faster than copy.deepcopy for JSON data (bench/README.md),
    and exact for everything a JSON case file can hold. With a backend, `env` is the state every run
    starts from, `snapshot(backend(initial env))`, taken once per case; `error` says why it could not be.
    """

    __slots__ = ("_blob", "_state_blob", "backend", "env", "error")

    def __init__(self, env: dict[str, Any], backend: Backend | None = None) -> None:
        self._blob = orjson.dumps(env)
        self.backend = backend
        self.error: str | None = None
        self.env = env
        self._state_blob: bytes | None = self._blob
        if backend is not None:
            try:
                self.env = backend.state(backend.build(orjson.loads(self._blob)))
            except BackendError as exc:
                self.env, self.error = {}, str(exc)
            self._state_blob = _dumps_or_none(self.env)

    @property
    def blob(self) -> bytes:
        """The initial env as JSON bytes (what a per-run MCP server gets in its AGENT_EVAL_ENV_FILE)."""
        return self._blob

    def fresh(self) -> Any:
        """A run's own world: a copy of the env, or a backend built from one (BackendError if it raises)."""
        env = orjson.loads(self._blob)
        return env if self.backend is None else self.backend.build(env)

    def state(self, world: Any) -> dict[str, Any]:
        """The state of a world as the checks read it (the live dict itself without a backend)."""
        return world if self.backend is None else self.backend.state(world)

    def diff(self, state: dict[str, Any]) -> list[dict[str, Any]]:
        """The run's final_env_diff; an untouched env costs one dump, a written one a walk by `==`."""
        if self._state_blob is None:
            return diff_env(self.env, state)
        return diff_env_fast(self.env, self._state_blob, state)

    def frozen_diff(self, world: Any) -> list[dict[str, Any]]:
        """The diff of the world's state now, copied: nothing a later call does can change it."""
        return frozen(self.diff(self.state(world)))


def _dumps_or_none(value: Any) -> bytes | None:
    try:
        return orjson.dumps(value)
    except TypeError:  # a snapshot holding what JSON cannot: diffs take the strict walk
        return None


def frozen(value: Any) -> Any:
    """A deep copy of JSON-like data (orjson's speed; a value JSON cannot hold is deep-copied, or converted)."""
    try:
        return orjson.loads(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))
    except TypeError:
        pass
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001 - an object that refuses to be copied is stored as text
        return to_json_safe(value)


def replay_gold(tools: ToolSet, template: EnvTemplate, calls: Sequence[dict[str, Any]], n_turns: int = 1,
                per_turn: bool = False) -> Gold:
    """Replay the gold calls turn by turn, without faults; a call that errors is skipped (what it half-wrote
    undone) and its error text is its observation. `per_turn`: keep a copy of the state after each turn."""
    if template.error is not None:
        return Gold({}, template.env, error=template.error)
    n_turns = max([n_turns, *(gold_turn(c) + 1 for c in calls)])
    observations: list[list[str]] = [[] for _ in range(n_turns)]
    turns: list[dict[str, Any]] = []
    done: list[dict[str, Any]] = []  # the calls that ran without error, to rebuild a backend after one that did not
    try:
        world = template.fresh()
        for turn in range(n_turns):
            for call in calls:
                if gold_turn(call) != turn or not tools.has(call["name"]):
                    continue
                before = orjson.dumps(world) if template.backend is None else None
                called = call_user(_gold_call, tools, call, world)
                if called.error is None:
                    observations[turn].append(tools.observation(called.value))
                    done.append(call)
                    continue
                observations[turn].append(redact_secrets(describe(called.error)))
                if before is not None:  # undo what the call half-wrote
                    world.clear()
                    world.update(orjson.loads(before))
                else:
                    world = template.fresh()
                    for ok in done:
                        call_user(_gold_call, tools, ok, world)
            if per_turn:
                turns.append(frozen(template.state(world)))
        final = template.state(world)
    except BackendError as exc:
        return Gold({}, template.env, error=str(exc))
    return Gold(final, template.env, turns, observations)


def _gold_call(tools: ToolSet, call: dict[str, Any], world: Any) -> Any:
    value = tools.invoke(call["name"], frozen(call.get("args") or {}), world)  # the case's args stay as written
    if inspect.isawaitable(value):
        value = run_apart(value)
    return value


def replay_expected_tools(tools: ToolSet, template: EnvTemplate, expected_tools: list[dict[str, Any]],
                          ) -> dict[str, Any]:
    """The env that the reference calls produce, in order and without faults; erroring calls are skipped."""
    return replay_gold(tools, template, expected_tools).final


def needs_gold(case: Case) -> bool:
    """True when a check of the case compares with a replay of its gold calls."""
    return (case.get("expected_env") in ("replay", "replay_per_turn")
            or case.get("expected_observations") == "replay")


def expected_of(case: Case, tools: ToolSet, template: EnvTemplate) -> Any:
    """What the state checks of a case compare with: its `expected_env` object, the replayed final state
    (`"replay"`), a Gold (per-turn or observation checks), or None."""
    expected = case.get("expected_env")
    if not needs_gold(case):
        return expected
    from agent_eval.suite.cases import user_messages

    per_turn = expected == "replay_per_turn"
    gold = replay_gold(tools, template, case.get("expected_tools") or [], max(1, len(user_messages(case))), per_turn)
    if expected == "replay" and case.get("expected_observations") is None and gold.error is None:
        return gold.final  # the plain replay: a checks family sees the env object it always saw
    return gold


def case_template(suite: Suite, case: Case) -> EnvTemplate:
    """The case's initial world: its env merged over the suite's, built by the suite's backend if it has one."""
    from agent_eval.suite.cases import case_env

    return EnvTemplate(case_env(suite, case), suite.tools.backend if suite.tools is not None else None)


def initial_state(suite: Suite, case: Case) -> dict[str, Any]:
    """The state a run of the case starts from (what final_env_diff is relative to); ConfigError naming the
    case when the backend cannot build it (rescore, score)."""
    template = case_template(suite, case)
    if template.error is not None:
        from agent_eval.errors import ConfigError

        raise ConfigError(f"case {case['id']!r}: {template.error}")
    return template.env
