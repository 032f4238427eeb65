"""One BFCL multi-turn entry as an agent-eval case: its user turns, its tools, its environment and its gold
calls per turn (upstream's call strings read into names and keyword arguments)."""
from __future__ import annotations

import ast
import importlib
import inspect
from typing import Any

CONVERTER_VERSION = 1


class GoldError(ValueError):
    """A gold call string that cannot be read as one call with literal arguments."""


def parse_call(text: str, signatures: dict[str, inspect.Signature]) -> tuple[str, dict[str, Any]]:
    """`"mv(source='a', destination='b')"` -> `("mv", {"source": "a", "destination": "b"})`; positional
    arguments are named from the method's signature."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise GoldError(f"{text!r} is not a call: {exc.msg}") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise GoldError(f"{text!r} is not a call of a function by name")
    name = node.func.id
    signature = signatures.get(name)
    if signature is None:
        raise GoldError(f"{text!r} calls {name!r}, which no involved class has")
    try:
        bound = signature.bind_partial(*[ast.literal_eval(a) for a in node.args],
                                       **{k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg})
    except (ValueError, TypeError, SyntaxError) as exc:
        raise GoldError(f"{text!r}: {exc}") from None
    return name, dict(bound.arguments)


def signatures_of(classes: list[str]) -> dict[str, inspect.Signature]:
    """The public methods of the involved classes, by name, as upstream's executor maps them."""
    config = importlib.import_module("bfcl_eval.constants.executable_backend_config")
    found: dict[str, inspect.Signature] = {}
    for name in classes:
        cls = getattr(importlib.import_module(config.CLASS_FILE_PATH_MAPPING[name]), name)
        for method_name, method in inspect.getmembers(cls, predicate=inspect.isfunction):
            if not method_name.startswith("_"):
                found[method_name] = inspect.signature(method).replace(
                    parameters=[p for p in inspect.signature(method).parameters.values() if p.name != "self"])
    return found


def gold_turns(gold: list[list[str]], classes: list[str]) -> list[list[tuple[str, dict[str, Any]]]]:
    """Every turn's gold calls as (name, keyword arguments); a GoldError names the first that cannot be read."""
    signatures = signatures_of(classes)
    return [[parse_call(text, signatures) for text in turn] for turn in gold]


def to_case(entry: dict[str, Any], gold: list[list[tuple[str, dict[str, Any]]]], category: str, version: str,
            added_prompt: str) -> dict[str, Any]:
    """The case of one entry. A turn with no user message (miss_func) is the one where upstream adds the held
    out functions and says `added_prompt`."""
    held_out = {str(turn): [doc["name"] for doc in docs] for turn, docs in (entry.get("missed_function") or {}).items()}
    messages = []
    for index, turn in enumerate(entry["question"]):
        if not turn:
            messages.append(added_prompt)
        elif len(turn) == 1 and turn[0].get("role") == "user":
            messages.append(turn[0]["content"])
        else:
            raise GoldError(f"turn {index} holds {len(turn)} messages; one user message was expected")
    case: dict[str, Any] = {
        "id": entry["id"],
        "tags": ["bfcl", category],
        "messages": messages,
        "tools": [doc["name"] for doc in entry["function"]],
    }
    if held_out:
        case["tools_added"] = held_out
    case["initial_env"] = {"involved_classes": list(entry["involved_classes"]),
                           "initial_config": entry.get("initial_config") or {},
                           "long_context": "long_context" in category}
    case["expected_tools"] = [{"name": name, "args": args, "turn": turn}
                              for turn, calls in enumerate(gold) for name, args in calls]
    case["expected_env"] = "replay_per_turn"
    case["expected_observations"] = "replay"
    case["metadata"] = {"upstream": {"benchmark": "bfcl", "version": version, "id": entry["id"],
                                     "category": category, "split": "all"}}
    return case
