"""One run's tool dispatch against its private world (run/world.py): recorded steps, fault injection."""
from __future__ import annotations

import asyncio
import inspect
import threading
import time
from typing import TYPE_CHECKING, Any

from agent_eval.errors import ToolError
from agent_eval.redaction import redact_secrets
from agent_eval.records import Step
from agent_eval.tracebacks import Outcome, await_user, call_user, describe, user_traceback
from agent_eval.run.threads import awaited, run_apart, run_in_thread
from agent_eval.run.world import frozen

if TYPE_CHECKING:
    from agent_eval.run.mcp_sessions import RunServers
    from agent_eval.suite.tools import RemoteTool, ToolSet

DEFAULT_FAULT_ERROR = "ServiceUnavailable: 503 Service Unavailable"


class ServerFault(Exception):
    """An MCP server failed during a call (it exited, broke the protocol or did not answer): the run is `error`."""


class Sandbox:
    """Dispatches tool calls for one run against its private env and records every step."""

    def __init__(self, tools: ToolSet, env: dict[str, Any], faults: list[dict[str, Any]] | None = None,
                 t0: float | None = None, injection: dict[str, Any] | None = None, servers: RunServers | None = None,
                 ) -> None:
        self.tools = tools
        self.servers = servers  # when the suite has MCP servers
        self.env = env
        self.steps: list[Step] = []
        self.t0 = time.perf_counter() if t0 is None else t0
        self.closed = False
        self.infra: str | None = None  # agent-eval's own argument check raised: the run is an `error`
        try:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None
        self._lock = threading.Lock()  # a step is recorded only while the run is open
        # A case's `tools`/`tools_added` (run/offer.py): the names it may call, and those offered so far.
        self.allowed: frozenset[str] | None = None
        self.offered: frozenset[str] | None = None
        self.max_errors: int | None = None  # the case's max_tool_errors
        self.errors = 0
        self.stop: str | None = None  # why the run ends now (max_tool_errors): later calls raise ToolError
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

    def call(self, name: str, args: Any, call_id: str | None = None) -> tuple[str | None, str | None]:
        """Run one call synchronously; returns (observation, error), exactly one of them non-None.

        `call_id` is the model's id of the call when the agent has it: the run's steps are paired with the
        model's completions by it (run/pairing.py)."""
        on_loop = (self.servers is not None and name in self.tools.remote) or self.tools.is_async(name)
        if on_loop and self.loop is not None and not isinstance(args, str) and not _on_loop(self.loop):
            # A sync agent calls from its own thread; MCP sessions and async tools live on the run's loop.
            return asyncio.run_coroutine_threadsafe(self.acall(name, args, call_id), self.loop).result()
        start = time.perf_counter()
        delay = self._delay_s.get(name)
        if delay:
            time.sleep(delay)
        return self._dispatch(name, args, start, call_id)

    async def acall(self, name: str, args: Any, call_id: str | None = None) -> tuple[str | None, str | None]:
        """The async twin of `call`: a sync tool runs in a daemon worker thread, so a slow tool (or a fault's
        delay) holds up only its own run, and --timeout can cut the run while the tool is still busy; an
        async tool is awaited here, on the run's event loop."""
        start = time.perf_counter()
        delay = self._delay_s.get(name)
        if delay:
            await asyncio.sleep(delay)
        servers = self.servers
        if servers is not None and not isinstance(args, str):
            remote = self.tools.remote.get(name)
            if remote is not None:
                return await self._dispatch_remote(servers, name, remote, args, start, call_id)
        if isinstance(args, str) or not self.tools.has(name):
            return self._dispatch(name, args, start, call_id)  # nothing of the user's runs
        if self.tools.is_async(name):
            return await self._dispatch_async(name, args, start, call_id)
        return await run_in_thread(self._dispatch, name, args, start, call_id)

    def close(self) -> None:
        """End the run: a call that finishes from now on is not recorded (it raises ToolError)."""
        with self._lock:
            self.closed = True

    async def _dispatch_remote(self, servers: RunServers, name: str, remote: RemoteTool, args: Any, start: float,
                               call_id: str | None = None) -> tuple[str | None, str | None]:
        """One call of an MCP tool: validated and faulted as a Python tool is, sent as tools/call."""
        invalid, error, recorded = self._begin(name, args)
        output = fault = None
        if error is None:
            output, error, fault = await servers.call(remote, args)
            if output is not None and name == self._inject_tool:
                output = self._inject(output)
        end = time.perf_counter()
        if self.closed:
            raise ToolError("the run has ended (timeout); this call was not recorded")
        self._record(name, recorded, output, error, invalid, start, end, None, call_id)
        if fault is not None:
            raise ServerFault(fault)
        if self.stop is not None:
            raise ToolError(f"the run has ended ({self.stop})")
        return output, error

    def _check(self, name: str, args: Any) -> tuple[str | None, str | None]:
        """(invalid_args, error) before a call runs: an error (malformed JSON, an unknown tool, an injected
        fault, an argument check that raised) means the tool is not called."""
        if isinstance(args, str):
            return "malformed JSON", f"JSONDecodeError: the arguments are not valid JSON: {args[:200]!r}"
        if not self.tools.has(name) or (self.allowed is not None and name not in self.allowed):
            return "unknown tool", f"UnknownTool: no tool named {name!r}"
        try:
            invalid = self.tools.validate(name, args)
        except Exception as exc:  # noqa: BLE001 - agent-eval's own check broke: the run is an infrastructure error
            message = f"the argument check of tool {name!r} raised {describe(exc)}"[:2000]
            self.infra = self.infra or message
            return None, message
        if self.offered is not None and name not in self.offered:
            invalid = invalid or "not yet offered"  # it runs, and counts as an invalid call
        if self._fail_left.get(name):
            self._fail_left[name] -= 1
            return invalid, self._fault_error[name]
        return invalid, None

    def _dispatch(self, name: str, args: Any, start: float, call_id: str | None = None,
                  ) -> tuple[str | None, str | None]:
        invalid, error, recorded = self._begin(name, args)
        called = None
        if error is None:
            called = call_user(self._call, name, args)  # any exception of a tool is its tool error
        return self._finish(name, recorded, called, error, invalid, start, call_id)

    def _call(self, name: str, args: Any) -> str:
        value = self.tools.invoke(name, args, self.env)
        if inspect.isawaitable(value):  # a sync function that returned a coroutine
            value = self._await(value)
        return self._observed(name, value)

    async def _call_async(self, name: str, args: Any) -> str:
        return self._observed(name, await self.tools.invoke(name, args, self.env))

    async def _dispatch_async(self, name: str, args: Any, start: float, call_id: str | None = None,
                              ) -> tuple[str | None, str | None]:
        """One call of an `async def` tool, awaited on the run's event loop."""
        invalid, error, recorded = self._begin(name, args)
        called = None
        if error is None:
            called = await await_user(self._call_async, name, args)  # a real cancellation ends the run
        return self._finish(name, recorded, called, error, invalid, start, call_id)

    def _begin(self, name: str, args: Any) -> tuple[str | None, str | None, Any]:
        """(invalid, error, the args as recorded) of a call about to run; a ToolError once the run has ended.

        The recorded args are a copy taken before the call: a tool that keeps the list it was given, and
        later changes it, must not rewrite what the step says the agent sent."""
        if self.closed or self.stop is not None:
            raise ToolError(f"the run has ended ({self.stop or 'timeout'}); this call was not recorded")
        invalid, error = self._check(name, args)
        return invalid, error, args if isinstance(args, str) else frozen(args)

    def _observed(self, name: str, value: Any) -> str:
        output = self.tools.observation(value)
        return self._inject(output) if name == self._inject_tool else output

    def _finish(self, name: str, args: Any, called: Outcome[str] | None, error: str | None, invalid: str | None,
                start: float, call_id: str | None = None) -> tuple[str | None, str | None]:
        output = error_tb = None
        if called is not None:
            output = called.value
            if called.error is not None:
                error, error_tb = _tool_error(called.error)
        end = time.perf_counter()
        with self._lock:
            if self.closed:  # the run timed out while this tool was running
                raise ToolError("the run has ended (timeout); this call was not recorded")
            self._record(name, args, output, error, invalid, start, end, error_tb, call_id)
        if self.stop is not None:  # this call's error was the last one the case allows
            raise ToolError(f"the run has ended ({self.stop})")
        return output, error

    def _await(self, awaitable: Any) -> Any:
        """The result of a coroutine a sync tool returned: on the run's loop when called from another
        thread, else on a loop of its own in a helper thread (this thread is the loop's, and blocked)."""
        if self.loop is not None and not _on_loop(self.loop):
            return asyncio.run_coroutine_threadsafe(awaited(awaitable), self.loop).result()
        return run_apart(awaitable)

    def _record(self, name: str, recorded_args: Any, output: str | None, error: str | None, invalid: str | None,
                start: float, end: float, error_tb: str | None = None, call_id: str | None = None) -> None:
        step: Step = {
            "step": len(self.steps), "name": name, "args": recorded_args, "output": output, "error": error,
            "error_traceback": error_tb, "invalid_args": invalid, "latency_s": end - start,
            "t_start_s": start - self.t0, "executed": True,
        }
        if self.offered is not None and name not in self.offered and self.allowed is not None and name in self.allowed:
            step["not_yet_offered"] = True  # a tool of a later turn's `tools_added`
        if error is not None and self.max_errors is not None:
            self.errors += 1
            if self.errors >= self.max_errors:
                self.stop = f"max_tool_errors: {self.errors} tool errors, the case's limit"
        if call_id is not None:
            step["call_id"] = call_id  # read and removed when the run's steps are paired (run/pairing.py)
        self.steps.append(step)

    def _inject(self, output: str) -> str:
        """Append the injection payload to the chosen observation; the step stores what the agent gets."""
        self._inject_left -= 1
        return f"{output}\n{self._inject_payload}" if self._inject_left == 0 else output


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _tool_error(exc: BaseException) -> tuple[str, str | None]:
    """A tool's exception as its error text and traceback (SystemExit and the like included), with any key
    it quotes redacted: the agent sees the same text."""
    return redact_secrets(describe(exc)), user_traceback(exc)
