"""`run --record/--replay DIR` against a careless user and a hostile folder (links, two recordings, two
processes, huge or broken cassettes, timeouts, schemas with key-like names), in process."""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

import orjson
import pytest

from agent_eval.errors import ConfigError
from agent_eval.provider.cassette import read_cassette
from tests.builders import HELPDESK_TOOLS, write_suite
from tests.loopback import LoopbackServer, raw, stall, text, tool_calls
from tests.run.test_replay import AGENT_KEY, keyed_env, run  # noqa: F401  (keyed_env: the fixture)

pytestmark = pytest.mark.usefixtures("keyed_env")

DIRECT = {"direct.py": "def agent(task):\n    return 'hello'\n"}
CASES = [{"id": "one", "query": "hi", "expect": {"contains": "hello"}},
         {"id": "two", "query": "hey", "expect": {"contains": "hello"}}]


def direct_suite(folder: Path) -> Path:
    return write_suite(folder, CASES, {"name": "direct", "agent": "direct.py:agent"}, DIRECT)


def helpdesk(folder: Path, tools: str = HELPDESK_TOOLS, prompt: str = "You are the helpdesk.") -> Path:
    cases = [{"id": "reset", "query": "Reset the password of u1.", "expect": {"contains": "Done"}},
             {"id": "who", "query": "Who is u3?", "expect": {"contains": "Done"}}]
    block = {"name": "helpdesk", "tools": "tools.py", "system_prompt": prompt,
             "initial_env": {"users": {"u1": "Bob", "u3": "Ada"}, "resets": []}}
    return write_suite(folder, cases, block, {"tools.py": tools})


def answer(request: dict, index: int):
    last = request["messages"][-1]
    if last["role"] == "tool":
        return text(f"Done: {last['content']}")
    return tool_calls([("reset_password" if "u1" in last["content"] else "lookup_user",
                        {"user_id": "u1" if "u1" in last["content"] else "u3"})])


# --- links ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["victim.txt", "missing.txt"])  # a file it would overwrite; a dangling link
def test_record_refuses_a_link_at_the_header(tmp_path: Path, target: str) -> None:
    cases = direct_suite(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    tape = tmp_path / "tape"
    tape.mkdir()
    (tape / "cassette.json").symlink_to(tmp_path / target)
    code, _, out = run(tmp_path, cases, record=tape)
    assert code == 2 and f"{tape / 'cassette.json'} is a symbolic link" in " ".join(out.split())
    assert victim.read_text() == "keep me" and not (tmp_path / "missing.txt").exists()


def test_record_refuses_a_link_at_a_trial_file(tmp_path: Path) -> None:
    cases = direct_suite(tmp_path)
    tape = tmp_path / "tape"
    assert run(tmp_path, cases, record=tape)[0] == 0
    victim = tmp_path / "victim.jsonl"
    victim.write_text("keep me")
    (tape / "two" / "0.jsonl").unlink()
    (tape / "two" / "0.jsonl").symlink_to(victim)
    code, report, out = run(tmp_path, cases, record=tape)
    assert code == 2, out
    one, two = (case["runs"][0] for case in report["cases"])
    assert one["status"] == "passed"
    assert two["status"] == "error" and f"{tape / 'two' / '0.jsonl'} is a symbolic link" in two["error"]
    assert victim.read_text() == "keep me" and (tape / "two" / "0.jsonl").is_symlink()


# --- one recording per folder ----------------------------------------------------------------------------
def test_record_into_another_recording_is_exit_2_naming_it(tmp_path: Path) -> None:
    cases = direct_suite(tmp_path)
    tape = tmp_path / "tape"
    assert run(tmp_path, cases, record=tape, repeat=2)[0] == 0
    header = (tape / "cassette.json").read_bytes()
    code, _, out = run(tmp_path, cases, record=tape, repeat=2, model="other-m")  # another model
    assert code == 2 and "records model 'agent-m', not 'other-m'" in out and "--replay-miss live" in out
    elsewhere = direct_suite(tmp_path / "elsewhere")  # another suite path, the same suite name
    code, _, out = run(tmp_path, elsewhere, record=tape, repeat=2)
    assert code == 2 and "records cases_file '../cases.json', not '../elsewhere/cases.json'" in out
    code, _, out = run(tmp_path, cases, record=tape, repeat=2, agent=f"{tmp_path}/direct.py:agent")  # another spec
    assert code == 2 and "records agent 'direct.py:agent', not" in out
    code, _, out = run(tmp_path, cases, record=tape, repeat=1)  # fewer trials: trial 1 would be stale
    assert code == 2 and "holds trial 1 of case 'one', beyond this run's" in out
    assert (tape / "cassette.json").read_bytes() == header  # nothing was written over
    assert run(tmp_path, cases, record=tape, repeat=2)[0] == 0  # the same recording again: allowed


def test_record_with_replay_miss_live_extends_a_recording(tmp_path: Path) -> None:
    cases = helpdesk(tmp_path)
    tape = tmp_path / "tape"
    with LoopbackServer(answer) as srv:
        code, first, out = run(tmp_path, cases, base_url=srv.base_url, record=tape, filter=["reset"])
        assert code == 0, out
        asked = srv.count
        # -k 2 and a new case: recorded answers replayed, the new trial and case asked live, in new files
        code, extended, out = run(tmp_path, cases, base_url=srv.base_url, record=tape, repeat=2,
                                  replay_miss="live")
        assert code == 0, out
        assert srv.count - asked == 3 * 2  # (reset trial 1, who trials 0 and 1) x 2 requests each
    replay = extended["summary"]["replay"]
    assert sorted(replay.pop("live_cassettes")) == ["reset/1.jsonl (2 requests)", "who/0.jsonl (2 requests)",
                                                    "who/1.jsonl (2 requests)"]
    assert replay == {"hits": 2, "misses": 6, "live": 6, "no_request_runs": 0}
    assert sorted(p.name for p in (tape / "who").iterdir()) == ["0.jsonl", "1.jsonl"]
    assert orjson.loads((tape / "cassette.json").read_bytes())["repeat"] == 1  # the recording's header kept
    code, replayed, out = run(tmp_path, cases, record=None, replay=tape, repeat=2)
    assert code == 0 and replayed["summary"]["replay"]["misses"] == 0, out


def test_a_second_command_recording_into_a_locked_folder_stops_at_once(tmp_path: Path) -> None:
    cases = direct_suite(tmp_path)
    tape = tmp_path / "tape"
    tape.mkdir()
    with open(tape / ".lock", "a") as held:  # another process's command, recording into it now
        fcntl.flock(held, fcntl.LOCK_EX)
        code, _, out = run(tmp_path, cases, record=tape)
        assert code == 2 and "another agent-eval command is recording into it now" in out
        assert not (tape / "cassette.json").exists()
    assert run(tmp_path, cases, record=tape)[0] == 0
    assert run(tmp_path, cases, record=tape)[0] == 0  # the first command let go of its lock


# --- bounded, lazy replay --------------------------------------------------------------------------------
def _recorded(tmp_path: Path) -> tuple[Path, Path]:
    cases = helpdesk(tmp_path)
    tape = tmp_path / "tape"
    with LoopbackServer(answer) as srv:
        code, _, out = run(tmp_path, cases, base_url=srv.base_url, record=tape)
        assert code == 0, out
    os.environ.pop("OPENAI_API_KEY")
    return cases, tape


def _rewrite(path: Path, line: int, change) -> None:
    lines = path.read_bytes().splitlines()
    item = orjson.loads(lines[line - 1])
    change(item)
    lines[line - 1] = orjson.dumps(item)
    path.write_bytes(b"\n".join(lines) + b"\n")


def test_a_replayed_answer_over_the_cap_is_refused_as_a_live_one_is(tmp_path: Path) -> None:
    cases, tape = _recorded(tmp_path)

    def bloat(item: dict) -> None:
        item["response"]["choices"][0]["message"]["content"] = "x" * (64 * 2**20 + 1)

    _rewrite(tape / "reset" / "0.jsonl", 2, bloat)
    code, report, out = run(tmp_path, cases, replay=tape)
    assert code == 2, out
    reset, who = (case["runs"][0] for case in report["cases"])
    assert "over the 64 MiB limit after decompression" in (reset["error"] or reset["trace"]["agent_error"])
    assert who["status"] == "passed"


@pytest.mark.parametrize(("bad", "said"), [
    (b"{not json}\n", "line 2 is not JSON"),
    (b"[" * 300 + b"]" * 300 + b"\n", "line 2 is nested deeper than 254 levels"),  # read, but not written back
    (b"[" * 3000 + b"]" * 3000 + b"\n", "line 2 is nested deeper than 254 levels"),  # past what can be read
    (b'{"seq": 2, "role"', "line 2 is truncated"),
])
def test_a_bad_cassette_line_fails_its_run_only_naming_file_and_line(tmp_path: Path,
                                                                    bad: bytes, said: str) -> None:
    cases, tape = _recorded(tmp_path)
    path = tape / "who" / "0.jsonl"
    path.write_bytes(path.read_bytes().splitlines(keepends=True)[0] + bad)
    code, report, out = run(tmp_path, cases, replay=tape)  # read as each run starts: 'reset' still plays
    assert code == 2, out
    reset, who = (case["runs"][0] for case in report["cases"])
    assert reset["status"] == "passed"
    assert who["status"] == "error" and f"the cassette {path}, {said}" in who["error"]
    assert path.read_bytes().endswith(bad)  # a broken cassette is never rewritten


def test_a_line_past_the_cap_is_named_without_reading_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "0.jsonl"
    good = {"seq": 1, "role": "agent", "path": "/chat/completions", "request": {}, "response": {}, "status": 200,
            "latency_s": 0.1, "usage": None}
    path.write_bytes(orjson.dumps(good) + b"\n" + b'{"x": "' + b"y" * 5000 + b'"}\n')
    with pytest.raises(ConfigError, match=r"0.jsonl, line 2 is longer than"):
        read_cassette(path, max_line=1000)


def test_running_out_of_memory_is_never_called_not_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "0.jsonl"
    path.write_bytes(b'{"seq": 1}\n')

    def no_memory(data: bytes) -> object:
        raise MemoryError

    monkeypatch.setattr("agent_eval.provider.cassette.orjson.loads", no_memory)
    with pytest.raises(ConfigError) as caught:
        read_cassette(path)
    assert "line 1" in str(caught.value) and "does not fit in memory" in str(caught.value)
    assert "not JSON" not in str(caught.value) and "record it again" not in str(caught.value)


# --- a recorded timeout replays as a timeout ---------------------------------------------------------------
def test_a_request_abandoned_at_timeout_replays_as_a_timeout(tmp_path: Path) -> None:
    cases = helpdesk(tmp_path)
    tape = tmp_path / "tape"

    def slow_who(request: dict, index: int):
        return stall(30) if "u3" in request["messages"][-1]["content"] else answer(request, index)

    with LoopbackServer(slow_who) as srv:
        code, recorded, out = run(tmp_path, cases, base_url=srv.base_url, record=tape, timeout=3)
    assert code == 1, out
    assert recorded["cases"][1]["runs"][0]["trace"]["stop_reason"] == "timeout"
    line = orjson.loads((tape / "who" / "0.jsonl").read_bytes().splitlines()[0])
    assert line["status"] == "client_closed" and 0 < line["latency_s"] <= 3.1 and line["response"] is None
    os.environ.pop("OPENAI_API_KEY")
    code, replayed, out = run(tmp_path, cases, replay=tape, timeout=3)
    assert code == 1, out
    reset, who = (case["runs"][0] for case in replayed["cases"])
    assert reset["status"] == "passed"
    assert who["trace"]["stop_reason"] == "timeout" and who["status"] == "failed"
    assert replayed["summary"]["replay"]["misses"] == 0
    # Without a --timeout that could end it, the abandoned request is the run's error, named.
    code, replayed, out = run(tmp_path, cases, replay=tape, filter=["who"])
    assert code == 2
    assert "the recording abandoned this request at its --timeout" in replayed["cases"][0]["runs"][0]["error"]


# --- scrubbing is for secrets, not for schemas ---------------------------------------------------------------
KEYED_TOOLS = HELPDESK_TOOLS.replace('''def lookup_user(user_id: str, env: dict) -> str:
    """Look a user up."""''', '''def lookup_user(user_id: str, env: dict, {name}: str = "") -> str:
    """Look a user up.

    Args:
        user_id: the user.
        {name}: {about}
    """''')


@pytest.mark.parametrize("name", ["key", "token"])
def test_a_changed_schema_of_a_key_like_parameter_is_a_replay_miss(tmp_path: Path,
                                                                  name: str) -> None:
    cases = helpdesk(tmp_path, KEYED_TOOLS.replace("{name}", name).replace("{about}", "the lookup key."))
    tape = tmp_path / "tape"
    with LoopbackServer(answer) as srv:
        code, _, out = run(tmp_path, cases, base_url=srv.base_url, record=tape, filter=["who"])
        assert code == 0, out
    recorded = orjson.loads((tape / "who" / "0.jsonl").read_bytes().splitlines()[0])["request"]
    properties = recorded["tools"][0]["function"]["parameters"]["properties"]
    assert properties[name]["description"] == "the lookup key."  # a schema, not a credential: kept
    helpdesk(tmp_path, KEYED_TOOLS.replace("{name}", name).replace("{about}", "the new lookup key."))
    os.environ.pop("OPENAI_API_KEY")
    code, report, out = run(tmp_path, cases, replay=tape, filter=["who"])
    assert code == 2, out
    assert f"at tools[0].function.parameters.properties.{name}.description" in report["cases"][0]["runs"][0]["error"]


def test_the_configured_key_in_a_request_records_as_a_placeholder_and_replays(tmp_path: Path) -> None:
    cases = helpdesk(tmp_path, prompt=f"You are the helpdesk; your key is {AGENT_KEY}.")
    tape = tmp_path / "tape"
    logprobs = {"content": [{"token": "Done", "logprob": -0.1, "bytes": [68], "top_logprobs": []}]}

    def with_logprobs(request: dict, index: int):
        if request["messages"][-1]["role"] == "tool":
            return raw({"id": "c", "object": "chat.completion", "model": "agent-m",
                        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": logprobs,
                                     "message": {"role": "assistant", "content": "Done: Ada"}}],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 2}})
        return answer(request, index)

    with LoopbackServer(with_logprobs) as srv:
        code, _, out = run(tmp_path, cases, base_url=srv.base_url, record=tape, filter=["who"])
        assert code == 0, out
    lines = [orjson.loads(x) for x in (tape / "who" / "0.jsonl").read_bytes().splitlines()]
    assert AGENT_KEY not in str(lines) and "your key is ***." in lines[0]["request"]["messages"][0]["content"]
    assert lines[1]["response"]["choices"][0]["logprobs"] == logprobs  # a logprob's token is data
    code, report, out = run(tmp_path, cases, replay=tape, filter=["who"])  # the same key set: a hit
    assert code == 0, out
    assert report["summary"]["replay"]["hits"] == 2
