"""`--agent "cmd:COMMAND ARGS..."`: a program as the agent, started once per user message.

It runs in the case file's folder, in a process group of its own, with the run's recording endpoint in
OPENAI_BASE_URL / OPENAI_API_KEY / AGENT_EVAL_MODEL and its MCP URL in AGENT_EVAL_MCP_URL; the user
message comes on stdin, the reply is its stdout.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Any

import orjson

from agent_eval.errors import ConfigError
from agent_eval.run.agents.base import COMMAND_PREFIX as PREFIX, AgentStop, Reply, RunContext
from agent_eval.limits import MAX_MESSAGE_BYTES
from agent_eval.redaction import is_redacted
from agent_eval.run.agents.python import open_link

_OTHER_ENDPOINT = re.compile(r"^AGENT_EVAL_(JUDGE|USER)_|^AGENT_EVAL_.*_API_KEY$")
_RUN_DIR = "agent_eval.cmd_run_dir"
STDERR_LINES = 20
STDERR_KEEP = 64 * 1024  # bytes of the end of its stderr kept for those lines
MAX_REPLY = MAX_MESSAGE_BYTES  # the most a program may print as its reply
EXIT_GRACE_S = 1.0  # after it exits, for its pipes to drain; then its children go
EXIT_POLL_S = 0.005


def command_of(spec: str, cases_dir: Path) -> list[str]:
    """The argv of a `cmd:` SPEC, its program found from the case file's folder; ConfigError otherwise."""
    try:
        argv = shlex.split(spec[len(PREFIX):])
    except ValueError as exc:
        raise ConfigError(f"--agent {spec!r}: the command cannot be split ({exc}); quote it as a shell would"
                          ) from None
    if not argv:
        raise ConfigError(f"--agent {spec!r} names no command: write cmd:PROGRAM ARGS...")
    program = argv[0]
    if os.sep in program:
        path = Path(program) if Path(program).is_absolute() else cases_dir / program
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ConfigError(f"--agent {spec!r}: {path} is not an executable file (the path is relative to "
                              f"the case file's folder, {cases_dir}); check the path or chmod +x it")
        return argv
    if shutil.which(program, path=os.environ.get("PATH")) is None and shutil.which(str(cases_dir / program)) is None:
        raise ConfigError(f"--agent {spec!r}: the program {program!r} is not found on PATH (searched from the "
                          f"case file's folder, {cases_dir}); install it or give its path")
    return argv


def agent_env(environ: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """The program's environment: ours less every other endpoint's settings (AGENT_EVAL_*_API_KEY, the
    judge's and the simulator's AGENT_EVAL_JUDGE_* / AGENT_EVAL_USER_*) and every URL that holds a secret
    (userinfo, a key-like query value), plus the run's variables."""
    env = {k: v for k, v in environ.items() if not _OTHER_ENDPOINT.match(k) and not _url_with_secret(v)}
    env.update(extra)
    return env


def _url_with_secret(value: str) -> bool:
    return "://" in value and any(is_redacted(part) for part in value.split() if "://" in part)


class CommandAgent:
    """Starts the command for each user message; stdin the message, stdout the reply."""

    def __init__(self, spec: str, settings: dict[str, Any]) -> None:
        self.name = spec
        self.settings = settings
        self.cwd = Path(settings.get("cases_dir") or ".").resolve()
        self.argv = command_of(spec, self.cwd)

    async def prepare(self, ctx: RunContext) -> None:
        link = await open_link(ctx, self.settings)
        if _RUN_DIR not in ctx.state:
            run_dir = Path(tempfile.mkdtemp(prefix="agent-eval-run-"))
            (run_dir / "state").mkdir()
            ctx.state[_RUN_DIR] = run_dir
            link.cleanups.append(lambda: shutil.rmtree(run_dir, ignore_errors=True))

    async def respond(self, ctx: RunContext) -> Reply:
        run_dir: Path = ctx.state[_RUN_DIR]
        link = ctx.link
        assert link is not None, "prepare() opened the run's link"
        messages = ([{"role": "system", "content": ctx.system_prompt}] if ctx.system_prompt else []) + ctx.messages
        messages_file = run_dir / "messages.json"
        messages_file.write_bytes(orjson.dumps(messages))
        env = agent_env(dict(os.environ), {
            "OPENAI_BASE_URL": link.base_url, "OPENAI_API_KEY": link.token, "AGENT_EVAL_MODEL": link.model or "",
            "AGENT_EVAL_MCP_URL": link.mcp_url or "", "AGENT_EVAL_CASE_ID": str(ctx.case["id"]),
            "AGENT_EVAL_TRIAL": str(ctx.trial), "AGENT_EVAL_STATE_DIR": str(run_dir / "state"),
            "AGENT_EVAL_MESSAGES_FILE": str(messages_file)})
        try:
            process = await asyncio.create_subprocess_exec(
                *self.argv, cwd=self.cwd, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            raise AgentStop("agent_error", f"the agent command {self.argv[0]!r} could not start: {exc}") from None
        out, err = await _exchange(process, (ctx.messages[-1]["content"] + "\n").encode("utf-8", "replace"))
        if process.returncode != 0:
            lines = err.decode("utf-8", "replace").splitlines()[-STDERR_LINES:]
            raise AgentStop("agent_error", f"the agent command exited with status {process.returncode}",
                            "\n".join(lines) or None)
        return Reply(out.decode("utf-8", "replace").strip())


async def _exchange(process: Any, message: bytes) -> tuple[bytes, bytes]:
    """Send the message, read the reply (at most MAX_REPLY) and the tail of stderr until the program exits;
    then the children it left behind go, whether or not they hold its pipes open."""
    reply, tail = bytearray(), bytearray()
    feeding = asyncio.ensure_future(_feed(process.stdin, message))
    out = asyncio.ensure_future(_read_reply(process.stdout, reply))
    err = asyncio.ensure_future(_read_tail(process.stderr, tail))
    readers = {out, err}
    exited = asyncio.ensure_future(_exited(process))
    ended = False
    try:
        await asyncio.wait({exited, out}, return_when=asyncio.FIRST_COMPLETED)
        if out.done() and out.exception() is not None:  # over the limit: no need to wait for the exit
            out.result()
        await exited
        await asyncio.wait(readers, timeout=EXIT_GRACE_S)  # what it wrote before exiting is in the pipes
        _kill_group(process)  # children it left behind
        await asyncio.wait(readers, timeout=EXIT_GRACE_S)
        ended = True
        return bytes(reply), bytes(tail)
    finally:
        if not ended:  # --timeout, Ctrl-C, a reply over the limit: the whole process group goes
            _kill_group(process)
            with contextlib.suppress(asyncio.CancelledError):  # cancelled again: what stopped it still goes on
                await asyncio.shield(asyncio.wait({exited, *readers}, timeout=EXIT_GRACE_S))
        for task in (feeding, exited, *readers):
            task.cancel()
        transport = getattr(process, "_transport", None)  # as communicate() does: its pipes closed now,
        if transport is not None:                          # not when the loop is long gone
            transport.close()


async def _exited(process: Any) -> None:
    """The program's exit (Python 3.11's process.wait() also waits for every pipe to close, which a child
    it left holding them would put off until --timeout)."""
    while process.returncode is None:
        await asyncio.sleep(EXIT_POLL_S)


async def _feed(stdin: Any, message: bytes) -> None:
    try:
        with contextlib.suppress(ConnectionError, BrokenPipeError):  # a program that does not read it
            stdin.write(message)
            await stdin.drain()
    finally:
        stdin.close()


async def _read_reply(stream: Any, reply: bytearray) -> None:
    while chunk := await stream.read(2**16):
        if len(reply) + len(chunk) > MAX_REPLY:
            raise AgentStop("agent_error", f"the agent command wrote more than {MAX_REPLY // 2**20} MiB to stdout "
                                           "(its reply is what it prints: write the answer only)")
        reply += chunk


async def _read_tail(stream: Any, tail: bytearray) -> None:
    while chunk := await stream.read(2**16):
        tail += chunk
        del tail[:-STDERR_KEEP]


def _kill_group(process: Any) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
