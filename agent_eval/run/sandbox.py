"""One run's world: a private env copy, recorded tool dispatch, fault injection."""
from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import orjson

from agent_eval.score.envdiff import diff_env_fast
from agent_eval.errors import ToolError
from agent_eval.tracebacks import user_traceback
from agent_eval.run.threads import run_in_thread
from agent_eval.suite.imports import describe

DEFAULT_FAULT_ERROR = "ServiceUnavailable: 503 Service Unavailable"


class ServerFault(Exception):
    """An MCP server failed during a call (it exited, broke the protocol or did not answer): the run is `error`."""


class EnvTemplate:
    """A pristine initial env, serialised once so each run's private copy is one orjson parse.

    An orjson round trip is several times faster than copy.deepcopy for JSON data (bench/README.md),
    and exact for everything a JSON case file can hold.
    """

    __slots__ = ("_blob", "env")

    def __init__(self, env: dict[str, Any]) -> None:
        self.env = env
        self._blob = orjson.dumps(env)

    @property
    def blob(self) -> bytes:
        """The env as JSON bytes (what a per-run MCP server gets in its AGENT_EVAL_ENV_FILE)."""
        return self._blob

    def fresh(self) -> dict[str, Any]:
        return orjson.loads(self._blob)

    def diff(self, env: dict[str, Any]) -> list[dict[str, Any]]:
        """The run's final_env_diff; an untouched env costs one dump, a written one a walk by `==`."""
        return diff_env_fast(self.env, self._blob, env)


class Sandbox:
    """Dispatches tool calls for one run against its private env and records every step."""

    def __init__(self, tools: Any, env: dict[str, Any], faults: list[dict] | None = None,
                 t0: float | None = None, injection: dict | None = None, servers: Any = None) -> None:
        self.tools = tools
        self.servers = servers  # agent_eval.run.mcp_sessions.RunServers when the suite has MCP servers
        self.env = env
        self.steps: list[dict[str, Any]] = []
        self.t0 = time.perf_counter() if t0 is None else t0
        self.closed = False
        self.fatal: str | None = None  # a tool raised SystemExit & co: the run fails with this agent_error
        self._lock = threading.Lock()  # a step is recorded only while the run is open
        self._fail_left: dict[str, int] = {}
        self._fault_error: dict[str, str] = {}
        self._delay_s: dict[str, float] = {}
        for fault in faults or ():
            tool = fault["tool"]
            times = fault.get("fail_times")
            self._fail_left[tool] = (0 if fault.get("delay_ms") else 1) if times is None else times
            self._fault_error[tool] = fault.get("error") or DEFAULT_FAULT_ERROR
            if fault.get("delay_ms"):
                self._delay_s[tool] = fault["delay_ms"] / 1000.0
        # The payload rides on this tool's n-th error-free observation.
        self._inject_tool = injection["tool"] if injection else None
        self._inject_left = int(injection.get("call", 1)) if injection else 0
        self._inject_payload = injection["payload"] if injection else ""

    def call(self, name: str, args: Any) -> tuple[str | None, str | None]:
        """Run one call synchronously; returns (observation, error), exactly one of them non-None."""
        if self.servers is not None and name in self.tools.remote:
            # A sync agent calls from its own thread; the MCP session lives on the run's event loop.
            return asyncio.run_coroutine_threadsafe(self.acall(name, args), self.servers.loop).result()
        start = time.perf_counter()
        delay = self._delay_s.get(name)
        if delay:
            time.sleep(delay)
        return self._dispatch(name, args, start)

    async def acall(self, name: str, args: Any) -> tuple[str | None, str | None]:
        """The async twin of `call`: the tool runs in a daemon worker thread, so a slow tool (or a fault's
        delay) holds up only its own run, and --timeout can cut the run while the tool is still busy."""
        start = time.perf_counter()
        delay = self._delay_s.get(name)
        if delay:
            await asyncio.sleep(delay)
        if self.servers is not None and not isinstance(args, str):
            remote = self.tools.remote.get(name)
            if remote is not None:
                return await self._dispatch_remote(name, remote, args, start)
        if isinstance(args, str) or not self.tools.has(name):
            return self._dispatch(name, args, start)  # nothing of the user's runs
        return await run_in_thread(self._dispatch, name, args, start)

    def close(self) -> None:
        """End the run: a call that finishes from now on is not recorded (it raises ToolError)."""
        with self._lock:
            self.closed = True

    async def _dispatch_remote(self, name: str, remote: Any, args: Any, start: float,
                               ) -> tuple[str | None, str | None]:
        """One call of an MCP tool: validated and faulted as a Python tool is, sent as tools/call."""
        if self.closed:
            raise ToolError("the run has ended (timeout); this call was not recorded")
        invalid = self.tools.validate(name, args)
        output = error = fault = None
        if self._fail_left.get(name):
            self._fail_left[name] -= 1
            error = self._fault_error[name]
        else:
            output, error, fault = await self.servers.call(remote, args)
            if output is not None and name == self._inject_tool:
                output = self._inject(output)
        end = time.perf_counter()
        if self.closed:
            raise ToolError("the run has ended (timeout); this call was not recorded")
        self._record(name, args, output, error, invalid, start, end)
        if fault is not None:
            raise ServerFault(fault)
        return output, error

    def _dispatch(self, name: str, args: Any, start: float) -> tuple[str | None, str | None]:
        if self.closed:
            raise ToolError("the run has ended (timeout); this call was not recorded")
        output = error = invalid = error_tb = None
        if isinstance(args, str):
            invalid = "malformed JSON"
            error = f"JSONDecodeError: the arguments are not valid JSON: {args[:200]!r}"
        elif not self.tools.has(name):
            invalid = "unknown tool"
            error = f"UnknownTool: no tool named {name!r}"
        else:
            invalid = self.tools.validate(name, args)
            if self._fail_left.get(name):
                self._fail_left[name] -= 1
                error = self._fault_error[name]
            else:
                try:
                    output = self.tools.observation(self.tools.invoke(name, args, self.env))
                except Exception as exc:  # the tool's exception is the observation, by contract
                    error = f"{type(exc).__name__}: {exc}"
                    error_tb = user_traceback(exc)
                except BaseException as exc:  # noqa: BLE001 - SystemExit & co from a tool end its run only
                    error, error_tb = describe(exc), user_traceback(exc)
                    self.fatal = self.fatal or error
                if output is not None and name == self._inject_tool:
                    output = self._inject(output)
        end = time.perf_counter()
        with self._lock:
            if self.closed:  # the run timed out while this tool was running
                raise ToolError("the run has ended (timeout); this call was not recorded")
            self._record(name, args, output, error, invalid, start, end, error_tb)
        return output, error

    def _record(self, name: str, args: Any, output: str | None, error: str | None, invalid: str | None,
                start: float, end: float, error_tb: str | None = None) -> None:
        self.steps.append({
            "step": len(self.steps), "name": name, "args": args, "output": output, "error": error,
            "error_traceback": error_tb, "invalid_args": invalid, "latency_s": end - start,
            "t_start_s": start - self.t0,
        })

    def _inject(self, output: str) -> str:
        """Append the injection payload to the chosen observation; the step stores what the agent gets."""
        self._inject_left -= 1
        return f"{output}\n{self._inject_payload}" if self._inject_left == 0 else output


def replay_expected_tools(tools: Any, template: EnvTemplate, expected_tools: list[dict]) -> dict[str, Any]:
    """The env that the reference calls produce, in order and without faults; erroring calls are skipped."""
    env = template.fresh()
    for call in expected_tools:
        if not tools.has(call["name"]):
            continue
        snapshot = orjson.dumps(env)
        try:
            tools.invoke(call["name"], dict(call.get("args") or {}), env)
        except BaseException:  # noqa: BLE001 - a gold call that raises anything, SystemExit included
            # A gold call that errors is skipped: undo anything it half-wrote.
            env.clear()
            env.update(orjson.loads(snapshot))
    return env
