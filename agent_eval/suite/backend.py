"""A tools module's stateful backend: `backend(env) -> object` and `snapshot(object) -> dict`.

A module that defines both keeps a run's state in its own objects (live classes, pydantic models) instead of
the plain env dict: each run builds one from a private copy of the case's initial env, the tools receive it
through their `env`/`context` parameter, and every state check reads `snapshot(object)`.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from agent_eval.errors import ConfigError, InfrastructureError
from agent_eval.tracebacks import call_user, describe

BACKEND_FIX = ("define both `backend(env: dict) -> object` (sync; it gets a private copy of the case's "
               "initial env) and `snapshot(obj) -> dict` (the state as a JSON object), or neither")


class BackendError(InfrastructureError):
    """The backend or its snapshot raised, or a snapshot is not a JSON object: the run is an `error`."""


@dataclass(frozen=True)
class Backend:
    """The two functions of a stateful tools module, and where they come from (for messages)."""

    make: Callable[[dict[str, Any]], Any]
    snapshot: Callable[[Any], Any]
    where: str

    def build(self, env: dict[str, Any]) -> Any:
        """A new backend object from `env` (which it may keep); BackendError when `backend` raised."""
        called = call_user(self.make, env)
        if called.error is not None:
            raise BackendError(f"{self.where}: backend(env) raised {describe(called.error)}; fix the tools "
                               "module's backend") from None
        return called.value

    def state(self, obj: Any) -> dict[str, Any]:
        """snapshot(obj), which must be a JSON object; BackendError otherwise."""
        called = call_user(self.snapshot, obj)
        if called.error is not None:
            raise BackendError(f"{self.where}: snapshot(obj) raised {describe(called.error)}; fix the tools "
                               "module's snapshot") from None
        value = called.value
        if not isinstance(value, dict):
            raise BackendError(f"{self.where}: snapshot(obj) returned {type(value).__name__}, not a JSON "
                               "object; return a dict of the backend's state")
        return value


def backend_of(module: ModuleType, where: str) -> Backend | None:
    """The module's backend, or None when it defines neither function; ConfigError when only one, or one
    that is not a sync function of one argument."""
    make, snapshot = getattr(module, "backend", None), getattr(module, "snapshot", None)
    if make is None and snapshot is None:
        return None
    for name, fn in (("backend", make), ("snapshot", snapshot)):
        if fn is None:
            raise ConfigError(f"{where}: defines {'snapshot' if name == 'backend' else 'backend'} but not "
                              f"{name}. Fix: {BACKEND_FIX}.")
        if not callable(fn):
            raise ConfigError(f"{where}: `{name}` is not a function. Fix: {BACKEND_FIX}.")
        if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn):
            raise ConfigError(f"{where}: `{name}` must be a plain sync function (it is async or a generator). "
                              f"Fix: {BACKEND_FIX}.")
        try:
            inspect.signature(fn).bind(None)
        except TypeError:
            raise ConfigError(f"{where}: `{name}` must take exactly one argument. Fix: {BACKEND_FIX}.") from None
        except ValueError:
            pass  # a builtin without a signature: called as it is
    assert make is not None and snapshot is not None
    return Backend(make, snapshot, where)
