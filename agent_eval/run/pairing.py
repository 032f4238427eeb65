"""After a run on the recording endpoint: every tool call the model issued becomes a step.

The calls in the recorded completions are paired with the sandbox's steps, by call id where the agent
passed one, else by name and JSON-equal arguments in order. A call the framework answered itself (an
unknown tool, arguments it refused, malformed JSON, a call it dropped) is a step with `executed: false`;
a call of the framework's own tool (offered in the request, not a suite tool) goes to `framework_calls`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from agent_eval.records import Step
from agent_eval.run.endpoint import RunLink
from agent_eval.run.wire import ModelCall
from agent_eval.score.matchers import json_equal

if TYPE_CHECKING:
    from agent_eval.suite.tools import ToolSet

NOT_EXECUTED = "not executed: the agent did not run this call"


def _parsed(arguments: str) -> Any:
    """The call's arguments as a dict, or the raw string when they are not a JSON object."""
    try:
        args = orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        return arguments
    return args if isinstance(args, dict) else arguments


def _unexecuted(call: ModelCall, args: Any, tools: ToolSet, t_start_s: float) -> Step:
    if isinstance(args, str):
        invalid: str | None = "malformed JSON"
    elif not tools.has(call.name):
        invalid = "unknown tool"
    else:
        invalid = tools.validate(call.name, args)
    reason = {"malformed JSON": "malformed JSON", "unknown tool": "unknown tool"}.get(
        invalid or "", "invalid arguments" if invalid else "")
    return {"step": 0, "name": call.name, "args": args, "output": None,
            "error": f"{NOT_EXECUTED} ({reason})" if reason else NOT_EXECUTED, "error_traceback": None,
            "invalid_args": invalid, "latency_s": 0.0, "t_start_s": t_start_s, "executed": False}


def _match(steps: list[Step], taken: list[bool], by_id: dict[str, list[int]], call: ModelCall,
           args: Any) -> int | None:
    """The sandbox step this model call became: same call id, else the first free one with the same name
    and JSON-equal arguments."""
    for index in by_id.get(call.call_id or "", ()):
        if not taken[index] and steps[index]["name"] == call.name:
            return index
    for index, step in enumerate(steps):
        if not taken[index] and step["name"] == call.name and (
                step["args"] == args if isinstance(args, str) or isinstance(step["args"], str)
                else json_equal(step["args"], args)):
            return index
    return None


def settle(link: RunLink, steps: list[Step], turn_steps: list[int], tools: ToolSet,
           ) -> tuple[list[Step], list[int], list[dict[str, Any]]]:
    """(steps in the order the model issued them, turn_steps for them, framework_calls) of a finished run."""
    call_ids = [step.pop("call_id", None) for step in steps]
    if not link.completions:
        return steps, turn_steps, []
    turn_of = _turns(len(steps), turn_steps)
    by_id: dict[str, list[int]] = {}
    for index, call_id in enumerate(call_ids):
        if call_id is not None:
            by_id.setdefault(call_id, []).append(index)
    taken = [False] * len(steps)
    issued: list[tuple[int, int | Step]] = []  # (turn, its sandbox step's index or its unexecuted step)
    framework_calls: list[dict[str, Any]] = []
    for completion in link.completions:
        for call in completion.calls:
            args = _parsed(call.arguments)
            found = _match(steps, taken, by_id, call, args)
            if found is not None:
                taken[found] = True
                issued.append((turn_of[found], found))
            elif not tools.has(call.name) and call.name in completion.offered:
                framework_calls.append({"name": call.name, "args": args})
            else:
                issued.append((completion.turn, _unexecuted(call, args, tools, completion.t_end_s)))
    ordered: list[tuple[int, Step]] = []
    free = [index for index in range(len(steps)) if not taken[index]]  # tool calls made without the model
    cursor = 0
    for turn, made in issued:
        if isinstance(made, int):
            while cursor < len(free) and free[cursor] < made:
                ordered.append((turn_of[free[cursor]], steps[free[cursor]]))
                cursor += 1
            ordered.append((turn, steps[made]))
        else:
            ordered.append((turn, made))
    ordered.extend((turn_of[index], steps[index]) for index in free[cursor:])
    ordered.sort(key=lambda pair: pair[0])  # stable: within a turn, the model's order
    final = []
    for number, (_, step) in enumerate(ordered):
        step["step"] = number
        final.append(step)
    turns = [turn for turn, _ in ordered]
    return final, [sum(1 for turn in turns if turn <= i) for i in range(len(turn_steps))], framework_calls


def _turns(count: int, turn_steps: list[int]) -> list[int]:
    """The user turn of each sandbox step (a turn still open when the run ended is the next one)."""
    turn_of, turn = [], 0
    for index in range(count):
        while turn < len(turn_steps) and index >= turn_steps[turn]:
            turn += 1
        turn_of.append(turn)
    return turn_of
