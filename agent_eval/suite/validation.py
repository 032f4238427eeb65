"""Semantic validation of one case: what the types alone cannot say."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_eval.records import Case
from agent_eval.score.expect import validate_expect
from agent_eval.score.judge import judged_fields
from agent_eval.score.env_checks import ENV_OPS
from agent_eval.score.matchers import is_literal, validate_matcher
from agent_eval.score.checks import CHECK_FAMILIES
from agent_eval.suite.fields import args_key_problems, expect_problems, unknown_key_message
from agent_eval.suite.validation_safety import validate_case_safety
from agent_eval.suite.validation_scenario import validate_scenario_fields
from agent_eval.suite.validation_turns import validate_turn_fields
from agent_eval.suite.validation_vacuous import vacuous_checks

if TYPE_CHECKING:
    from agent_eval.suite.cases import Suite


def deterministic_checks(case: Case, suite: Suite | None = None) -> list[str]:
    """The names of the check families that decide the case by code (everything but the judge)."""
    block = suite.settings if suite is not None else None
    return [family.name for family in CHECK_FAMILIES if family.applies(case, block)]


def validate_case(case: Case, suite: Suite) -> list[tuple[str, str]]:
    """Every problem of one parsed case, as (field, message with the fix)."""
    problems: list[tuple[str, str]] = []
    add = lambda f, m: problems.append((f, m))
    problems.extend(validate_scenario_fields(case))
    if not deterministic_checks(case, suite) and not judged_fields(case):
        if case.get("expected_tools") is not None:
            add("expected_tools", "expected_tools alone only measures the trajectory; add \"trajectory\" "
                "to make it a check, or a state/output check (expected_env_check, expected_env, expect)")
        else:
            add("id", "the case has no check; add expected_env_check, expected_env, expect, "
                "trajectory (with expected_tools) or rubric")
    if case.get("trajectory") and case.get("expected_tools") is None:
        add("trajectory", "trajectory needs expected_tools (the reference calls) to compare against")
    tools = suite.tools
    # A suite without tools (a case file for `score`, or one just imported) has no names to check against.
    for i, call in enumerate(case.get("expected_tools") or []):
        if tools is not None and tools.names and not tools.has(call["name"]):
            add(f"expected_tools[{i}].name", f"no tool named {call['name']!r} in the suite's tools; "
                f"known tools: {', '.join(sorted(tools.names)) or 'none'}")
        for key, value in (call.get("args") or {}).items():
            message = validate_matcher(value)
            if message:
                add(f"expected_tools[{i}].args.{key}", message)
        problems.extend(args_key_problems(i, call, tools))
    problems.extend(validate_turn_fields(case, tools))
    if case.get("expected_env") == "replay_per_turn":
        pass  # validate_turn_fields checks it
    elif case.get("expected_env") == "replay":
        if case.get("expected_tools") is None:
            add("expected_env", "\"replay\" runs expected_tools; add expected_tools")
        for i, call in enumerate(case.get("expected_tools") or []):
            if not is_literal(call.get("args") or {}):
                add(f"expected_tools[{i}].args", "expected_env \"replay\" needs literal args (no $ matchers)")
    elif "expected_env" in case and case["expected_env"] is not None and not isinstance(case["expected_env"], dict):
        add("expected_env", "must be an object, the path of a JSON file, \"replay\" or \"replay_per_turn\"")
    for i, item in enumerate(case.get("expected_env_check") or []):
        problems.extend(_validate_env_item(item, i))
    problems.extend(validate_expect(case.get("expect") or {}))
    problems.extend(expect_problems(case.get("expect") or {}, tools))
    for i, fault in enumerate(case.get("faults") or []):
        if tools is not None and not tools.has(fault["tool"]):
            add(f"faults[{i}].tool", f"no tool named {fault['tool']!r} in the suite's tools")
        if fault.get("fail_times") is not None and fault["fail_times"] < 0:
            add(f"faults[{i}].fail_times", "must be >= 0")
        if fault.get("delay_ms") is not None and fault["delay_ms"] < 0:
            add(f"faults[{i}].delay_ms", "must be >= 0")
    problems.extend(validate_case_safety(case, suite))
    problems.extend(vacuous_checks(case))
    for family in CHECK_FAMILIES:
        if family.validate is not None and family.applies(case, suite.settings if suite is not None else None):
            problems.extend(family.validate(case))
    if getattr(suite, "servers", None):
        from agent_eval.suite.mcp_tools import check_case_env

        problems.extend(check_case_env(case, suite))
    return problems


def _validate_env_item(item: Any, index: int) -> list[tuple[str, str]]:
    name = f"expected_env_check[{index}]"
    if not isinstance(item, dict):
        return [(name, "must be an object {\"path\": [...], \"<op>\": value}")]
    out = []
    path = item.get("path")
    if not isinstance(path, list) or not all(isinstance(p, (str, int)) and not isinstance(p, bool) for p in path):
        out.append((f"{name}.path", "must be a list of keys (strings) and indices (integers)"))
    ops = [k for k in item if k != "path"]
    unknown = [k for k in ops if k not in ENV_OPS]
    if unknown:
        out.append((f"{name}.{unknown[0]}", unknown_key_message(unknown[0], ENV_OPS, "op")))
    elif len(ops) != 1:
        out.append((name, f"give exactly one op besides path (found {len(ops)})"))
    elif ops[0] == "in" and not isinstance(item["in"], list):
        out.append((f"{name}.in", "must be a list of allowed values"))
    elif ops[0] == "exists" and not isinstance(item["exists"], bool):
        out.append((f"{name}.exists", "must be true or false"))
    return out
