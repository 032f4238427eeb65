"""Helpers of the second hardening pass's CLI tests: one CLI call (in-process) that checks the common promises
(no traceback, no secret in any stream or file), and raw provider answers the loopback cannot script."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import orjson

from tests.builders import clean_env
from tests.cli import run_cli
from tests.loopback import raw

HANG_GUARD_S = 180


@dataclass
class Done:
    code: int
    out: str
    err: str
    report: dict  # the newest JSON report of the output dir ({} when none was written)


def agent_eval(tmp_path: Path, *args: object, secrets: tuple[str, ...] = (), out_dir: Path | None = None,
               **env: str) -> Done:
    """`agent-eval ARGS...` in tmp_path; asserts no traceback, and no secret in stdout, stderr or any file
    under tmp_path; returns the newest report of out_dir (default tmp_path/reports)."""
    reports = out_dir or tmp_path / "reports"
    before = set(reports.glob("*.json")) if reports.exists() else set()
    done = run_cli(*args, cwd=tmp_path, env=clean_env(XDG_CACHE_HOME=str(tmp_path / "cache"), **env),
                   timeout=HANG_GUARD_S)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    for secret in secrets:
        assert secret not in done.stdout and secret not in done.stderr, (secret, done.stdout, done.stderr)
        for path in tmp_path.rglob("*"):
            if path.is_file() and path.name != "cases.json":
                assert secret.encode() not in path.read_bytes(), (secret, path)
    new = sorted(set(reports.glob("*.json")) - before) if reports.exists() else []
    return Done(done.returncode, done.stdout, done.stderr, orjson.loads(new[-1].read_bytes()) if new else {})


def completion_bytes(content: str, usage: dict | None, model: str = "m") -> bytes:
    """A Chat Completions body encoded by the stdlib (orjson refuses integers past 64 bits)."""
    body = {"id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}]}
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


def answer_with_usage(content: str, prompt_tokens: object, completion_tokens: object = 5):
    """A final answer whose usage holds these (possibly impossible) token counts."""
    return raw(completion_bytes(content, {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}))


def all_runs(report: dict) -> dict[str, list[dict]]:
    return {case["id"]: case["runs"] for case in report["cases"]}
