"""The MCP servers of one `run` (docs/mcp.md): a session per run or one shared, and none left behind.

A `per_run` stdio server is started for every run, with the run's initial env in the file named by
AGENT_EVAL_ENV_FILE; the runner asks for the next run's servers ahead (`prestart`), so a process start
is off the critical path. A `shared` server has one session for the whole run. `aclose` ends them all
and kills any of its server processes that outlived its session (never another command's).
"""
from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from agent_eval.records import StopReason
from agent_eval.suite.mcp_client import Connection, ServerError, stray_warnings
from agent_eval.run.world import EnvTemplate
from agent_eval.suite.backend import BackendError
from agent_eval.suite.mcp_spec import ServerSpec
from agent_eval.suite.tools import RemoteTool

_CLOSE_ALL_S = 8.0
_Played = TypeVar("_Played")


def shared_state_warning(servers: list[ServerSpec], concurrency: int) -> str | None:
    """The warning for a shared server whose state is the env while runs overlap, or None."""
    shared = [s for s in servers if not s.is_per_run and s.state_resource]
    if not shared or concurrency <= 1:
        return None
    return (f"warning: MCP server {shared[0].label} is shared and its state resource is the env, and "
            f"--concurrency is {concurrency}: runs that overlap can see each other's writes, so their env "
            "checks may fail. Use --concurrency 1, or a per_run stdio server.")


class ServerPool:
    """Hands each run its MCP sessions; `aclose` ends every one of them."""

    def __init__(self, servers: list[ServerSpec]) -> None:
        self.servers = servers
        self.per_run = [s for s in servers if s.is_per_run]
        self.state = next((s for s in servers if s.state_resource), None)
        self._shared: dict[int, Connection] = {}
        self._shared_started: dict[int, asyncio.Future[Any]] = {}
        self._spares: dict[Any, list[list[Connection]]] = {}  # env blob -> started sets of per-run servers
        self._open: set[Connection] = set()
        self._closing: set[asyncio.Task[Any]] = set()
        self._closed = False

    def prestart(self, env_blob: bytes | None) -> None:
        """Start one set of per-run servers for a run to come whose initial env is `env_blob`."""
        if not self.per_run or self._closed:
            return
        spare = [self._connection(s, env_blob) for s in self.per_run]
        for connection in spare:
            connection.begin()
        self._spares.setdefault(env_blob, []).append(spare)

    def _connection(self, spec: ServerSpec, env_blob: bytes | None) -> Connection:
        connection = Connection(spec, env_blob)
        self._open.add(connection)
        return connection

    async def open_run(self, env_blob: bytes | None) -> RunServers:
        """The sessions of one run, started; ServerError naming the server that failed (the run is `error`)."""
        spares = self._spares.get(env_blob)
        own = spares.pop(0) if spares else [self._connection(s, env_blob) for s in self.per_run]
        if spares == []:
            del self._spares[env_blob]
        run = RunServers(self, {c.spec.index: c for c in own})
        started = False
        try:
            await asyncio.gather(*(c.start() for c in own), *(self._start_shared(s) for s in self.servers
                                                              if not s.is_per_run))
            started = True
        finally:
            if not started:  # a server failed, or the run was cancelled while they started
                run.release()
        for spec in self.servers:
            if not spec.is_per_run:
                run.connections[spec.index] = self._shared[spec.index]
        return run

    async def _start_shared(self, spec: ServerSpec) -> None:
        started = self._shared_started.get(spec.index)
        if started is None:
            connection = self._shared[spec.index] = self._connection(spec, None)
            started = self._shared_started[spec.index] = asyncio.ensure_future(connection.start())
        await asyncio.shield(started)

    def close_later(self, connections: list[Connection]) -> None:
        """Stop these per-run servers in the background (the next run need not wait for it)."""
        for connection in connections:
            task = asyncio.ensure_future(self._close(connection))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def _close(self, connection: Connection) -> None:
        try:
            await connection.close()
        finally:
            self._open.discard(connection)

    async def aclose(self) -> None:
        """End every session, spare and shared; any server process still alive after that is killed."""
        self._closed = True
        leftovers = [c for c in self._open]
        for connection in leftovers:
            self.close_later([connection])
        self._spares.clear()
        if self._closing:
            await asyncio.wait(set(self._closing), timeout=_CLOSE_ALL_S)
        for connection in {*leftovers, *self._open}:  # its own only: another command's servers run on
            connection.kill()
        for line in stray_warnings():
            print(line, file=sys.stderr, flush=True)


class RunServers:
    """One run's sessions: tool calls, the state resource, and the first fault of a server."""

    def __init__(self, pool: ServerPool, connections: dict[int, Connection]) -> None:
        self.pool = pool
        self.connections = connections
        self.loop = asyncio.get_running_loop()
        self.fault: str | None = None
        self.waiting: dict[Connection, int] = {}  # requests in flight per server

    async def call(self, tool: RemoteTool, args: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
        """(observation, tool error, server fault): a fault is set when the server itself failed."""
        connection = self.connections[tool.server]
        self.waiting[connection] = self.waiting.get(connection, 0) + 1
        try:
            output, error = await connection.call_tool(tool.remote, args)
            return output, error, None
        except ServerError as exc:
            self.fault = self.fault or str(exc)
            return None, str(exc), str(exc)
        finally:
            self.waiting[connection] -= 1

    def fail_waiting(self, timeout: float | None) -> str | None:
        """At a --timeout: the fault of a server that a request still waits on (it is stopped), or None."""
        late = [c for c, n in self.waiting.items() if n > 0]
        if not late:
            return None
        for connection in late:
            connection.fault = connection.fault or f"MCP server {connection.spec.label} did not answer in time"
        return f"MCP server {late[0].spec.label} did not answer within --timeout {timeout:g}s"

    async def read_state(self) -> Any:
        """The suite's env as its state resource holds it now; ServerError when it cannot be read."""
        spec = self.pool.state
        if spec is None or spec.state_resource is None:
            return None
        try:
            return await self.connections[spec.index].read_json(spec.state_resource)
        except ServerError as exc:
            self.fault = self.fault or str(exc)
            raise

    def release(self) -> None:
        """The run is over: its per-run servers stop in the background."""
        self.pool.close_later([c for c in self.connections.values() if c.spec.is_per_run])


async def play_with_servers(pool: ServerPool, env_blob: bytes | None, template: EnvTemplate,
                            play: Callable[[dict[str, Any], EnvTemplate, RunServers], Awaitable[_Played]],
                            errored_run: Callable[[str], _Played]) -> _Played:
    """Open the run's sessions, read the initial env from the state resource, play, and release them.

    `play(env, diff_base, run_servers)` plays the run; a server that cannot start makes the run
    `errored_run(message)`.
    """
    try:
        run = await pool.open_run(env_blob)
    except ServerError as exc:
        return errored_run(str(exc))
    try:
        if pool.state is None:
            try:
                world = template.fresh()
            except BackendError as exc:
                return errored_run(str(exc))
            return await play(world, template, run)
        try:
            initial = await run.read_state()
        except ServerError as exc:
            return errored_run(str(exc))
        if not isinstance(initial, dict):
            return errored_run(f"MCP server {pool.state.label}: the state resource {pool.state.state_resource} "
                               f"holds {type(initial).__name__}, not a JSON object")
        return await play(initial, EnvTemplate(initial), run)
    finally:
        run.release()


async def finish_with_servers(run: RunServers, env: Any, error: str | None, stop_reason: StopReason,
                              agent_error: str | None, timeout: float | None) -> tuple[Any, str | None, str | None]:
    """(final env, error, agent_error) once the agent is done: a server's fault wins over the agent's outcome."""
    fault = run.fault
    if fault is None and stop_reason == "timeout":
        # Time that ran out while the agent waited on a server is the server's, not the agent's.
        fault = run.fail_waiting(timeout)
    if fault is None and run.pool.state is not None:
        try:
            env = await run.read_state()
        except ServerError as exc:
            fault = str(exc)
        if fault is None and not isinstance(env, dict):
            fault = (f"MCP server {run.pool.state.label}: the state resource {run.pool.state.state_resource} "
                     f"holds {type(env).__name__}, not a JSON object")
    if fault is None:
        return env, error, agent_error
    return env, fault, None if stop_reason == "timeout" else agent_error
