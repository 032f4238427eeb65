"""`expect.replies` ("last" or "any": every assistant text of the run) and `expect.strip`."""
from __future__ import annotations

import asyncio

from agent_eval.run.agents.openai_loop import OpenAIAgent
from agent_eval.run.episode import play_run
from agent_eval.run.world import EnvTemplate
from agent_eval.score.expect import expect_checks, validate_expect
from agent_eval.suite.tools import ToolSet
from tests.loopback import text, tool_calls


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def verdicts(expect: dict, trace: dict) -> dict[str, bool]:
    return {c["name"]: c["passed"] for c in expect_checks({"id": "c", "expect": expect}, trace, {}, None)}


# Two turns; the reservation number was said beside a tool call in turn 0, never in the last reply.
TRACE = {"replies": ["Booked.", "Anything else?"], "final_answer": "Anything else?",
         "assistant_texts": ["Your number is R-1,234", "Booked.", "Anything else?"]}


def test_any_reads_every_assistant_text_and_last_only_the_last_reply() -> None:
    expect = {"contains": ["R-1,234", "Booked"], "not_contains": "refund", "regex": r"R-\d", "icontains": "booked"}
    assert verdicts(expect, TRACE) == {"expect:contains": False, "expect:not_contains": True,
                                       "expect:regex": False, "expect:icontains": False}
    assert verdicts({**expect, "replies": "any"}, TRACE) == {
        "expect:contains": True, "expect:not_contains": True, "expect:regex": True, "expect:icontains": True}
    # not_contains with "any": an item found in any text fails, though the last reply lacks it.
    assert verdicts({"not_icontains": "your number", "replies": "any"}, TRACE) == {"expect:not_icontains": False}
    # Without assistant_texts in the trace (no text beside tool calls), "any" reads every reply.
    plain = {k: v for k, v in TRACE.items() if k != "assistant_texts"}
    assert verdicts({"contains": "Booked", "replies": "any"}, plain) == {"expect:contains": True}


def test_strip_removes_characters_from_the_reply_not_from_the_expected_text() -> None:
    # tau2's rule: "1234" must appear in the reply with commas removed.
    assert verdicts({"contains": "R-1234", "replies": "any", "strip": [","]}, TRACE) == {"expect:contains": True}
    assert verdicts({"contains": "R-1,234", "replies": "any", "strip": [","]}, TRACE) == {"expect:contains": False}
    assert verdicts({"contains": "R-1234", "replies": "any"}, TRACE) == {"expect:contains": False}


def test_replies_and_strip_are_validated_and_are_no_check_alone() -> None:
    problems = dict(validate_expect({"replies": "all", "strip": ",", "contains": "x"}))
    assert "must be \"last\"" in problems["expect.replies"]
    assert "single characters" in problems["expect.strip"]
    assert "add a check" in dict(validate_expect({"replies": "any"}))["expect"]
    assert "did you mean `replies`?" in dict(validate_expect({"replise": "any", "contains": "x"}))["expect.replise"]


def test_the_built_in_agent_keeps_text_sent_beside_tool_calls(loopback) -> None:
    srv = loopback([tool_calls([("lookup", {"key": "a"})], content="Let me look that up."), text("It is a.")])
    agent = OpenAIAgent({"model": "m", "base_url": srv.base_url, "api_key": "k", "max_steps": 5})
    case = {"id": "c", "query": "what is a?", "expect": {"contains": "x"}}
    played = asyncio.run(play_run(case, 0, agent, ToolSet.from_functions([lookup]), EnvTemplate({}), None, None))
    assert played.trace["replies"] == ["It is a."]
    assert played.trace["assistant_texts"] == ["Let me look that up.", "It is a."]
