"""Validation of the suite's and the cases' safety fields: sensitive and escalation tools, policy rules,
`authorized` and `injection` (exit 2 with the field and the fix)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_eval.records import Case
from agent_eval.score.safety import RULE_KINDS, RULE_OPTIONS, rule_phrases
from agent_eval.suite.fields import did_you_mean, unknown_key_message

if TYPE_CHECKING:
    from agent_eval.suite.cases import Suite
    from agent_eval.suite.tools import ToolSet

Problems = list[tuple[str, str]]


def _tool_problem(tools: ToolSet, name: Any, where: str) -> Problems:
    if not isinstance(name, str) or not name:
        return [(where, "must be a tool name (a string)")]
    if tools is not None and not tools.has(name):
        known = ", ".join(sorted(tools.names)) or "none"
        return [(where, f"no tool named {name!r} in the suite's tools{did_you_mean(name, tools.names)}; known "
                        f"tools: {known}")]
    return []


def _tool_list_problems(tools: ToolSet, value: Any, where: str) -> Problems:
    if not isinstance(value, list):
        return [(where, "must be a list of tool names")]
    return [p for i, name in enumerate(value) for p in _tool_problem(tools, name, f"{where}[{i}]")]


def validate_rule(rule: Any, tools: ToolSet, where: str) -> Problems:
    """Every problem of one policy rule object, as (field, message with the fix)."""
    if not isinstance(rule, dict):
        return [(where, "a policy rule must be an object such as {\"forbid_tool\": \"delete_user\"}")]
    unknown = [k for k in rule if k not in RULE_KINDS and k not in RULE_OPTIONS]
    if unknown:
        hint = did_you_mean(unknown[0], [*RULE_KINDS, *RULE_OPTIONS])
        known = ", ".join(RULE_KINDS)
        return [(f"{where}.{unknown[0]}", f"unknown rule kind {unknown[0]!r}{hint or f'; use one of {known}'}")]
    kinds = [k for k in rule if k in RULE_KINDS]
    if len(kinds) != 1:
        return [(where, f"give exactly one rule kind per object (found {', '.join(kinds) or 'none'}); "
                        f"the kinds are {', '.join(RULE_KINDS)}")]
    kind, value = kinds[0], rule[kinds[0]]
    out: Problems = [(f"{where}.{k}", f"{k} goes with {RULE_OPTIONS[k]} only")
                     for k in rule if k in RULE_OPTIONS and RULE_OPTIONS[k] != kind]
    field = f"{where}.{kind}"
    if kind == "require_before":
        if not isinstance(value, list) or len(value) != 2:
            return out + [(field, "must be a list of two tool names: [first, then]")]
        out += _tool_list_problems(tools, value, field)
        keys = rule.get("match_args")
        if keys is not None and (not isinstance(keys, list) or not all(isinstance(k, str) for k in keys)):
            out.append((f"{where}.match_args", "must be a list of argument names"))
    elif kind == "forbid_tool":
        if isinstance(value, str):
            out += _tool_problem(tools, value, field)
        else:
            out += _tool_list_problems(tools, value, field)
    elif kind == "max_calls":
        if not isinstance(value, dict) or not value:
            return out + [(field, "must be an object {\"tool\": max number of calls}")]
        for name, limit in value.items():
            out += _tool_problem(tools, name, f"{field}.{name}")
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
                out.append((f"{field}.{name}", "must be a whole number >= 0"))
    else:
        phrases = rule_phrases(value) if isinstance(value, (str, list)) else None
        if not phrases or not all(isinstance(p, str) and p for p in phrases):
            out.append((field, "must be a non-empty string or a list of them"))
        if rule.get("unless_called") is not None:
            out += _tool_problem(tools, rule["unless_called"], f"{where}.unless_called")
    return out


def validate_rules(rules: Any, tools: ToolSet, where: str) -> Problems:
    """Every problem of a `policy` list (suite or case)."""
    if rules is None:
        return []
    if not isinstance(rules, list):
        return [(where, "must be a list of rule objects")]
    return [p for i, rule in enumerate(rules) for p in validate_rule(rule, tools, f"{where}[{i}]")]


def validate_suite_safety(block: dict[str, Any], tools: ToolSet) -> Problems:
    """Problems of the suite's sensitive_tools, escalation_tools, stop_tools and policy."""
    out: Problems = []
    for key in ("sensitive_tools", "escalation_tools", "stop_tools"):
        if block.get(key) is not None:
            out += _tool_list_problems(tools, block[key], f"suite.{key}")
    return out + validate_rules(block.get("policy"), tools, "suite.policy")


def validate_case_safety(case: Case, suite: Suite) -> Problems:
    """Problems of a case's authorized, policy and injection fields."""
    tools = suite.tools
    out = validate_rules(case.get("policy"), tools, "policy")
    authorized = case.get("authorized")
    if "authorized" in case and not isinstance(authorized, bool):
        out.append(("authorized", "must be true or false"))
    elif authorized is False and not suite.settings.get("sensitive_tools"):
        out.append(("authorized", "\"authorized\": false needs the suite's sensitive_tools (the tools "
                                  "whose effects need authority); add them to the suite block"))
    injection = case.get("injection")
    if "injection" in case:
        if not isinstance(injection, dict):
            return out + [("injection", "must be an object {\"tool\": name, \"payload\": text, \"call\": 1}")]
        extra = [k for k in injection if k not in ("tool", "payload", "call")]
        if extra:
            out.append((f"injection.{extra[0]}", unknown_key_message(extra[0], ("tool", "payload", "call"))))
        out += _tool_problem(tools, injection.get("tool"), "injection.tool")
        if not isinstance(injection.get("payload"), str) or not injection["payload"]:
            out.append(("injection.payload", "must be the text to append to the tool's observation"))
        call = injection.get("call", 1)
        if isinstance(call, bool) or not isinstance(call, int) or call < 1:
            out.append(("injection.call", f"must be a positive whole number (the n-th error-free "
                                          f"observation of the tool), got {call!r}"))
    return out
