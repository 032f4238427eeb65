"""provider/tape.py: a command's tape as a value, and how a replay miss is named."""
from __future__ import annotations

import asyncio
from pathlib import Path

import orjson

from agent_eval import llm
from agent_eval.provider.cassette import Exchange, read_cassette
from agent_eval.provider.tape import RunTape, Tape, using
from tests.loopback import LoopbackServer, text

ASK = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
OTHER = {"model": "m", "messages": [{"role": "user", "content": "bye"}]}


def _tape(*requests: dict) -> RunTape:
    recorded = [Exchange(i, "agent", "/chat/completions", body, {"choices": []}, 200, 0.1, None, False)
                for i, body in enumerate(requests, 1)]
    return RunTape(Tape(Path("tapes"), True), "refund", 0, Path("tapes/refund/0.jsonl"), recorded)


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
                            'messages[0].content: now "bye", recorded "hi"')
    assert "no recorded" in _tape().describe_miss("agent", "/chat/completions", ASK, 1)


def test_a_miss_shows_both_values_cut_to_200_characters() -> None:
    long_now = {"model": "m", "messages": [{"role": "user", "content": "a" * 500}]}
    message = _tape(ASK).describe_miss("agent", "/chat/completions", long_now, 1)
    assert message.endswith(f'at messages[0].content: now "{"a" * 199}…, recorded "hi"')  # 200 of '"aaa...'
    more = {**ASK, "tools": [{"type": "function", "function": {"name": "t", "parameters": {"b": 1}}}]}
    message = _tape(ASK).describe_miss("agent", "/chat/completions", more, 1)
    assert message.endswith('at tools: now [{"type":"function","function":{"name":"t","parameters":{"b":1}}}], '
                            "recorded (absent)")  # a field only one request has


def test_two_tapes_in_one_process_overlap_without_seeing_each_other(tmp_path: Path) -> None:
    """A replaying command and a recording one, their runs in flight at once on one loop and one client:
    each answers from (or writes to) its own folder and counts only its own requests."""
    said = {"role": "assistant", "content": "from the tape"}
    recorded = {"id": "x", "choices": [{"index": 0, "message": said, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
    replay_dir, record_dir = tmp_path / "replayed", tmp_path / "recorded"
    (replay_dir / "c").mkdir(parents=True)
    line = {"seq": 1, "role": "agent", "path": "/chat/completions", "request": ASK, "response": recorded,
            "status": 200, "latency_s": 0.25, "usage": recorded["usage"]}
    (replay_dir / "c" / "0.jsonl").write_bytes(orjson.dumps(line) + b"\n")
    replaying, recording = Tape(replay_dir, True), Tape(record_dir, False)

    async def one(tape: Tape, base_url: str) -> str | None:
        run = tape.open_run("c", 0)
        with using(run):
            answer = await llm.complete(base_url, "k", dict(ASK))
        assert tape.close_run(run) is None
        return answer.content

    with LoopbackServer(lambda request, index: text("live")) as srv:
        async def both() -> list[str | None]:
            return list(await asyncio.gather(one(replaying, srv.base_url), one(recording, srv.base_url)))

        assert asyncio.run(both()) == ["from the tape", "live"]
        assert srv.count == 1  # the replayed request never reached the network
    assert replaying.counts.summary() == {"hits": 1, "misses": 0, "live": 0, "no_request_runs": 0}
    assert recording.counts.summary() == {"hits": 0, "misses": 0, "live": 0, "no_request_runs": 0}
    written = read_cassette(record_dir / "c" / "0.jsonl")
    assert [(e.role, e.request, e.response["choices"][0]["message"]["content"]) for e in written] == [
        ("agent", ASK, "live")]
    assert read_cassette(replay_dir / "c" / "0.jsonl")[0].latency_s == 0.25  # the replayed folder untouched
