"""deepeval goldens (a JSON list or JSON Lines) as cases; see docs/import-and-score.md for the mapping."""
from __future__ import annotations

from typing import Any

from agent_eval.records import Case
from agent_eval.ingest.records import conversation

RUBRIC = "The answer conveys the same facts as this reference: "
_CONVERSATIONAL = ("scenario", "expected_outcome", "user_description", "persona")


def _record_number(where: str) -> str:
    return where.split()[-1].strip("[]").split("[")[-1]


def _tools(value: Any, field: str) -> list[dict[str, Any]]:
    """deepeval ToolCalls (`name`, `input_parameters` or `inputParameters`) as expected_tools entries."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{field} must be a list of tool calls")
    out = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise ValueError(f"{field}[{i}] has no tool name")
        entry: dict[str, Any] = {"name": item["name"]}
        args = item.get("input_parameters", item.get("inputParameters"))
        if isinstance(args, dict):
            entry["args"] = args
        elif args is not None:
            raise ValueError(f"{field}[{i}].input_parameters must be an object")
        out.append(entry)
    return out


def _listed(value: Any) -> Any:
    # deepeval's JSONL and CSV writers join a list of strings with "|".
    return value.split("|") if isinstance(value, str) else value


def _with_metadata(case: Case, golden: dict[str, Any], scenario: Any = None) -> Case:
    """The case with the golden's context, comments and additional metadata (and a scenario, when one is
    given as text) as its metadata; none when the golden has none of them."""
    metadata: dict[str, Any] = {}
    for key in ("context", "retrieval_context"):
        if golden.get(key) is not None:
            metadata[key] = _listed(golden[key])
    if golden.get("comments") is not None:
        metadata["comments"] = golden["comments"]
    if golden.get("additional_metadata") is not None:
        metadata["additional_metadata"] = golden["additional_metadata"]
    if isinstance(scenario, str) and scenario.strip():
        metadata["scenario"] = scenario
    if metadata:
        case["metadata"] = metadata
    return case


def _scenario_case(case_id: str, golden: dict[str, Any]) -> Case:
    if not isinstance(golden.get("scenario"), str) or not golden["scenario"].strip():
        raise ValueError("a conversational golden needs a scenario")
    if not isinstance(golden.get("expected_outcome"), str) or not golden["expected_outcome"].strip():
        raise ValueError("nothing to check: the conversational golden has no expected_outcome")
    case: Case = {"id": case_id, "scenario": golden["scenario"],
                            "expected_outcome": golden["expected_outcome"]}
    description = golden.get("user_description") or golden.get("persona")
    if isinstance(description, str) and description:
        case["user_description"] = description
    return _with_metadata(case, golden)


def _turns_case(case_id: str, golden: dict[str, Any]) -> Case:
    """A ConversationalGolden with turns: user turns -> messages, the assistant turns' tools_called ->
    expected_tools (collapsed), scenario -> metadata.scenario, expected_outcome the judged criterion."""
    turns = [t for t in golden["turns"] if isinstance(t, dict)]
    users = [t["content"] for t in turns if t.get("role") == "user" and isinstance(t.get("content"), str)
             and t["content"].strip()]
    if not users:
        raise ValueError("the conversational golden's turns hold no user turn with content")
    case: Case = {"id": case_id, **conversation(users)}
    called = [call for i, t in enumerate(turns) if t.get("role") == "assistant"
              for call in _tools(t.get("tools_called", t.get("toolsCalled")), f"turns[{i}].tools_called")]
    if called:
        from agent_eval.ingest.otel import collapse

        case["expected_tools"], case["trajectory"] = collapse(called), "unordered"
    outcome = golden.get("expected_outcome")
    if isinstance(outcome, str) and outcome.strip():
        case["expected_outcome"] = outcome
    elif not called:
        raise ValueError("nothing to check: no expected_outcome and no tools_called in the turns")
    return _with_metadata(case, golden, scenario=golden.get("scenario"))


def golden_case(where: str, golden: Any) -> Case:
    """One golden as a case; ValueError says why it cannot be mapped."""
    if not isinstance(golden, dict):
        raise ValueError("a golden must be an object")
    name = golden.get("name")
    case_id = name if isinstance(name, str) and name.strip() else f"golden-{_record_number(where)}"
    if golden.get("input") is None and isinstance(golden.get("turns"), list) and golden["turns"]:
        return _turns_case(case_id, golden)
    if golden.get("input") is None and any(golden.get(k) is not None for k in _CONVERSATIONAL):
        return _scenario_case(case_id, golden)
    query = golden.get("input")
    if not isinstance(query, str) or not query.strip():
        raise ValueError("no input (the user message)")
    case: Case = {"id": case_id, "query": query}
    tools = _tools(golden.get("expected_tools"), "expected_tools")
    if not tools:  # the recorded trajectory: its consecutive repeats are a mistake, not a requirement
        from agent_eval.ingest.otel import collapse

        tools = collapse(_tools(golden.get("tools_called"), "tools_called"))
    expected_output = golden.get("expected_output")
    has_output = isinstance(expected_output, str) and bool(expected_output.strip())
    if tools:
        case["expected_tools"] = tools
        case["trajectory"] = "unordered"
    elif has_output:
        case["rubric"] = RUBRIC + str(expected_output)
    else:
        raise ValueError("nothing to check: no expected_tools, tools_called or expected_output")
    if has_output:
        case["expected_output"] = expected_output
    return _with_metadata(case, golden)
