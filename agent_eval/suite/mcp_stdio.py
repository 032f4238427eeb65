"""agent-eval's own stdio transport for MCP servers: bounded where the `mcp` package's is not.

The SDK's stdio reader holds a line of any length, writes the server's stderr to a file of any size,
and logs a traceback for every stdout line that is not JSON-RPC. This one reads at most MAX_MESSAGE
bytes of one message (then the session ends and the server is at fault), keeps the last STDERR_KEPT
bytes of stderr in memory, and counts the stray lines (`Link.stray`). The server runs in a process
group of its own, which is ended whole when the session ends.
"""
from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from subprocess import PIPE
from typing import Any

from agent_eval.limits import MAX_MESSAGE_BYTES
from agent_eval.suite.reaper import disown, own

MAX_MESSAGE = MAX_MESSAGE_BYTES
STDERR_KEPT = 64 * 2**10
_CHUNK = 2**16
_EXIT_GRACE_S = 2.0
_TERM_GRACE_S = 1.0

# The process groups of every stdio server alive in this process, so a hard exit can kill them all.
LIVE_GROUPS: set[int] = set()


@dataclass
class Link:
    """What the transport saw of one server: its pid, stderr tail, stray stdout lines and fault."""

    pid: int | None = None
    stderr: bytearray = field(default_factory=bytearray)
    stray: int = 0
    first_stray: str | None = None
    fault: str | None = None  # the server broke a bound (a message over MAX_MESSAGE): the session ended

    def keep_stderr(self, chunk: bytes) -> None:
        self.stderr += chunk
        if len(self.stderr) > STDERR_KEPT:
            del self.stderr[: len(self.stderr) - STDERR_KEPT]

    def stderr_tail(self, lines: int = 3) -> list[str]:
        text = bytes(self.stderr[-2000:]).decode("utf-8", "replace").strip()
        return text.splitlines()[-lines:] if text else []


def kill_group(pid: int) -> None:
    """SIGKILL the process group `pid` leads, if any of it is alive."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    LIVE_GROUPS.discard(pid)


@asynccontextmanager
async def stdio_transport(command: list[str], env: dict[str, str], cwd: str, link: Link) -> AsyncIterator[Any]:
    """Start the server and yield the (read, write) streams a ClientSession takes; on exit, end it."""
    import anyio
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    process = await anyio.open_process(command, stdin=PIPE, stdout=PIPE, stderr=PIPE, env=env, cwd=cwd,
                                       start_new_session=True)
    stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
    assert stdin is not None and stdout is not None and stderr is not None  # all three are pipes
    link.pid = process.pid
    LIVE_GROUPS.add(process.pid)  # a new session: its process group id is its pid
    own(process.pid)  # anyio waits for it: the reaper must not
    read_send, read_recv = anyio.create_memory_object_stream[Any](0)
    write_send, write_recv = anyio.create_memory_object_stream[Any](0)

    async def deliver(line: bytes) -> None:
        if not line.strip():
            return
        try:
            message = jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError:
            link.stray += 1
            if link.first_stray is None:
                link.first_stray = line[:500].decode("utf-8", "replace").strip()
            return
        await read_send.send(SessionMessage(message))

    async def read_stdout() -> None:
        buffer = bytearray()
        async with read_send:
            try:
                while True:
                    chunk = await stdout.receive(_CHUNK)
                    start = len(buffer)
                    buffer += chunk
                    cut = buffer.find(b"\n", start)
                    while cut >= 0:
                        line = bytes(buffer[:cut])
                        del buffer[: cut + 1]
                        await deliver(line)
                        cut = buffer.find(b"\n")
                    if len(buffer) > MAX_MESSAGE:
                        link.fault = f"sent a message over the {MAX_MESSAGE // 2**20} MiB limit"
                        return  # read no further: the session sees its end, the server is stopped
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                if buffer.strip():
                    await deliver(bytes(buffer))

    async def write_stdin() -> None:
        try:
            async with write_recv:
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await stdin.send(data.encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()  # the server is gone: requests in flight end now

    async def read_stderr() -> None:
        try:
            while True:
                link.keep_stderr(await stderr.receive(_CHUNK))
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read_stdout)
            group.start_soon(write_stdin)
            group.start_soon(read_stderr)
            try:
                yield read_recv, write_send
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process)
                    kill_group(process.pid)
                    with anyio.move_on_after(_TERM_GRACE_S):
                        await process.aclose()  # its pipes too: none is left to a closed event loop
                group.cancel_scope.cancel()
    finally:
        kill_group(process.pid)  # whatever of its group is left: the session is over
        if process.returncode is not None:
            disown(process.pid)


async def _stop(process: Any) -> None:
    """Close stdin and let the server exit; then SIGTERM its group, then SIGKILL it; every wait bounded."""
    import anyio

    try:
        await process.stdin.aclose()
    except Exception:  # noqa: BLE001 - a pipe already broken is a server already gone
        pass
    for sig, grace in ((None, _EXIT_GRACE_S), (signal.SIGTERM, _TERM_GRACE_S), (signal.SIGKILL, _TERM_GRACE_S)):
        if sig is not None:
            try:
                os.killpg(process.pid, sig)
            except OSError:
                pass
        with anyio.move_on_after(grace):
            await process.wait()
            return
