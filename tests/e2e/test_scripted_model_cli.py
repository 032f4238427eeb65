"""`agent-eval scripted-model SCRIPT --port N` as a process: it prints its base URL, serves until Ctrl-C, and
then exits 0."""
from __future__ import annotations

import signal
import socket
import subprocess
from pathlib import Path

import openai
import orjson

from tests.builders import CLI, clean_env


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_command_prints_its_base_url_serves_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps([{"match": {"contains": "hi"}, "reply": "hello"}]))
    port = free_port()
    proc = subprocess.Popen([CLI, "scripted-model", str(script), "--port", str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=clean_env())
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line == f"http://127.0.0.1:{port}/v1", proc.stderr.read() if proc.stderr else ""
        sdk = openai.OpenAI(base_url=line, api_key="k", max_retries=0)
        answer = sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert answer.choices[0].message.content == "hello"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
