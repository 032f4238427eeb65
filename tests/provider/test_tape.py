"""provider/tape.py: how a replay miss is named."""
from __future__ import annotations

from pathlib import Path

from agent_eval.provider.cassette import Exchange
from agent_eval.provider.tape import Tape

ASK = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
OTHER = {"model": "m", "messages": [{"role": "user", "content": "bye"}]}


def _tape(*requests: dict) -> Tape:
    recorded = [Exchange(i, "agent", "/chat/completions", body, {"choices": []}, 200, 0.1, None, False)
                for i, body in enumerate(requests, 1)]
    return Tape("refund", 0, Path("tapes/refund/0.jsonl"), recorded)


def test_a_request_asked_more_often_than_recorded_is_named_as_such() -> None:
    tape = _tape(ASK, OTHER)
    assert tape.take("agent", "/chat/completions", ASK) is not None
    assert tape.take("agent", "/chat/completions", ASK) is None  # the recording asked it once
    message = tape.describe_miss("agent", "/chat/completions", ASK, 3)
    assert message == ("replay miss: agent request 3 (/chat/completions) of case 'refund' trial 0 repeats the "
                       "recorded one (tapes/refund/0.jsonl line 1) more often than the recording did")


def test_a_changed_request_names_the_nearest_recorded_one_and_the_field() -> None:
    tape = _tape(ASK)
    message = tape.describe_miss("agent", "/chat/completions", OTHER, 1)
    assert message.endswith("differs from the nearest recorded one (tapes/refund/0.jsonl line 1) at "
                            "messages[0].content")
    assert "no recorded" in _tape().describe_miss("agent", "/chat/completions", ASK, 1)
