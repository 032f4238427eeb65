"""Record and replay against a careless user and a hostile cassette: no secret of any URL reaches a
cassette, and a recorded latency that is no duration is the cassette's error (exit 2 naming its line),
never a negative or astronomical latency in the report."""
from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from tests.builders import clean_env, write_suite
from tests.cli import run_cli
from tests.loopback import text

CMD_AGENT = '''
import json, os, sys, urllib.request
sys.stdin.readline()
body = {"model": os.environ["AGENT_EVAL_MODEL"], "messages": [{"role": "user", "content": "hi"}]}
request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", method="POST",
                                 data=json.dumps(body).encode(), headers={
                                     "Content-Type": "application/json",
                                     "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
print(json.loads(urllib.request.urlopen(request).read())["choices"][0]["message"]["content"])
'''
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "q"}], "temperature": 0}
ANSWER = {"id": "x", "object": "chat.completion", "model": "m", "usage": {"prompt_tokens": 1, "completion_tokens": 1},
          "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}]}


def test_no_secret_of_the_agent_spec_or_the_base_url_reaches_a_cassette(tmp_path: Path, loopback) -> None:
    srv = loopback([text("done")] * 4)
    cases = write_suite(tmp_path, [{"id": "c", "query": "q", "expect": {"contains": "done"}}], {"name": "s"},
                        {"agent.py": CMD_AGENT})
    agent = f"cmd:{sys.executable} agent.py --hook https://bob:arg-password@hooks.example/?token=arg-token"
    base = srv.base_url.replace("http://", "http://alice:url-password@") + "?api_key=url-query-key"
    done = run_cli("run", "--cases", cases, "--agent", agent, "--base-url", base, "--model", "m", "--record",
                   tmp_path / "tape", "--no-html", "--output-dir", tmp_path / "out",
                   env=clean_env(OPENAI_API_KEY="sk-configured-key-0123456789abcdef"), cwd=tmp_path)
    assert done.exit_code == 0, done.stdout + done.stderr
    written = "".join(p.read_text() for p in (tmp_path / "tape").rglob("*") if p.is_file())
    assert "done" in written
    for secret in ("arg-password", "arg-token", "url-password", "url-query-key", "sk-configured-key"):
        assert secret not in written, secret


@pytest.mark.parametrize("latency", [-5, 1e308, True, "0.1"])
def test_a_recorded_latency_that_is_no_duration_is_the_cassettes_error(tmp_path: Path, latency: object) -> None:
    cases = write_suite(tmp_path, [{"id": "c", "query": "q", "expect": {"contains": "ok"}}], {"name": "h"})
    tape = tmp_path / "tape"
    (tape / "c").mkdir(parents=True)
    (tape / "cassette.json").write_bytes(orjson.dumps({"format": 1, "suite": "h", "model": "m"}))
    line = {"seq": 1, "role": "agent", "path": "/chat/completions", "request": REQUEST, "response": ANSWER,
            "status": 200, "latency_s": latency, "usage": ANSWER["usage"]}
    (tape / "c" / "0.jsonl").write_bytes(orjson.dumps(line) + b"\n")
    done = run_cli("run", "--cases", cases, "--model", "m", "--replay", tape, "--no-html", "--no-judge",
                   "--output-dir", tmp_path / "out", env=clean_env(OPENAI_API_KEY="sk-dummy-0000000000000000"),
                   cwd=tmp_path)
    assert done.exit_code == 2, done.stdout + done.stderr
    assert "0.jsonl, line 1" in done.stderr and "latency_s" in done.stderr and "Traceback" not in done.stderr


def test_a_case_named_like_the_header_file_gets_a_folder_of_its_own() -> None:
    from agent_eval.provider.cassette import HEADER, case_folder

    assert case_folder(HEADER) != HEADER and case_folder(HEADER) == "cassette%2Ejson"
    assert case_folder("cassette.jsonl") == "cassette.jsonl"


def test_a_case_folder_planted_as_a_symlink_is_never_written_through(tmp_path: Path) -> None:
    from agent_eval.provider.cassette import cassette_path, write_lines

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    tape = tmp_path / "tape"
    tape.mkdir()
    (tape / "c").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(OSError, match="symbolic link"):
        write_lines(cassette_path(tape, "c", 0), [{"seq": 1}])
    assert list(elsewhere.iterdir()) == []
