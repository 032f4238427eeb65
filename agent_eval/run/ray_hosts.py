"""--ray: the same workers as --workers N, placed on Ray as actors (`pip install 'agent-eval-trials[ray]'`).

Without --ray-address a new local Ray instance is started and stopped by the run; RAY_ADDRESS is never
joined by accident. The case file's folder is the job's working_dir (see docs/scale.md).
"""
from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
import re
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import orjson

from agent_eval.flags.rows import CONCURRENCY, RAY_ADDRESS, RAY_RUNTIME_ENV, WORKERS
from agent_eval.errors import ConfigError
from agent_eval.redaction import redact_urls
from agent_eval.run.config import Settings
from agent_eval.run.frozen import thawed
from agent_eval.run.ray_env import require_ray
from agent_eval.run.interrupt import sigint_held
from agent_eval.suite.jsonsafe import dumps_safe
from agent_eval.run.pool import WorkerPool, split_concurrency
from agent_eval.run.worker import (BATCH, CRASHED, FAILED, LIMITS, READY, RESULT, SPENT, STOP, USAGE, WorkerCore,
                                   WorkerInit, load_core, pack_results)

CLOSE_GRACE_S = 2.0
SKIPPED = [".git", ".venv", "__pycache__"]  # never shipped with the working_dir, wherever they are


def runtime_env(cfg: Settings, case_dir: Path, output_dir: Path) -> dict[str, Any]:
    """The job's runtime_env: --ray-runtime-env plus the case file's folder as working_dir, pruned."""
    given = cfg[RAY_RUNTIME_ENV]
    env: dict[str, Any] = thawed(given or {})  # Ray takes dicts and lists
    excludes = list(env.get("excludes") or []) + SKIPPED
    try:
        excludes.append("/" + output_dir.resolve().relative_to(case_dir).as_posix())
    except ValueError:
        pass  # the output dir is outside the working_dir
    env.update(working_dir=str(case_dir), excludes=excludes)
    return env


_SECRET_NAMES = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def secret_env_var_warnings(env: dict[str, Any]) -> list[str]:
    """A warning for each runtime_env env_vars name that looks like a secret: Ray logs runtime_envs."""
    names = [n for n in (env.get("env_vars") or {}) if any(word in str(n).upper() for word in _SECRET_NAMES)]
    return [f"warning: --ray-runtime-env env_vars {name} looks like a secret, and Ray writes runtime "
            "environments to its logs (readable by anyone on the cluster's machines). agent-eval passes "
            "its own keys to the workers itself; set other secrets on the cluster instead." for name in names]


def without_keys(init: WorkerInit) -> tuple[WorkerInit, dict[str, str | None]]:
    """`init` without the agent's, judge's and simulator's keys (it goes to Ray's object store), and
    those keys, which reach each actor as constructor arguments."""
    cfg = init.cfg
    keys = {"api_key": cfg.api_key, "judge_api_key": cfg.judge_api_key,
            "user_api_key": cfg.user_sim.api_key}
    user = dataclasses.replace(cfg.user_sim, api_key=None)
    bare = dataclasses.replace(cfg, api_key=None, judge_api_key=None, user_sim=user)
    return dataclasses.replace(init, cfg=bare), keys


def with_keys(init: WorkerInit, keys: dict[str, str | None]) -> WorkerInit:
    """The inverse of `without_keys`, in the actor."""
    if not keys:
        return init
    cfg = init.cfg
    user = dataclasses.replace(cfg.user_sim, api_key=keys.get("user_api_key"))
    full = dataclasses.replace(cfg, api_key=keys.get("api_key"), judge_api_key=keys.get("judge_api_key"),
                               user_sim=user)
    return dataclasses.replace(init, cfg=full)


def relocate(init: WorkerInit) -> WorkerInit:
    """Paths inside the case file's folder made relative to it: an actor runs in its copy (the working_dir)."""
    case_dir = init.cases_file.parent

    def inside(path: Path) -> Path:
        try:
            return path.resolve().relative_to(case_dir)
        except ValueError:
            return path  # outside the folder: it must exist on the cluster at the same path

    base = init.cfg.user_sim.spec_base
    user = dataclasses.replace(init.cfg.user_sim, spec_base=None if base is None else inside(base))
    cfg = dataclasses.replace(init.cfg, user_sim=user)
    return dataclasses.replace(init, cases_file=Path(init.cases_file.name), agent_dir=inside(init.agent_dir),
                               cfg=cfg)


def _anchored(init: WorkerInit) -> WorkerInit:
    """Relative paths of a relocated init, made absolute in the actor's working_dir."""
    here = Path.cwd()
    user = init.cfg.user_sim
    if user.spec_base is not None and not user.spec_base.is_absolute():
        user = dataclasses.replace(user, spec_base=here / user.spec_base)
    return dataclasses.replace(init, cases_file=here / init.cases_file, agent_dir=here / init.agent_dir,
                               cfg=dataclasses.replace(init.cfg, user_sim=user))


class RayWorker:
    """The actor: a WorkerCore in the job's working_dir (decorated with ray.remote when Ray is started).

    What it sends back names the user's case folder, not the copy it runs in (which is gone after the
    run): tracebacks and messages read as in a one-process run.
    """

    def __init__(self, init: WorkerInit, case_dir: str, keys: dict[str, str | None] | None = None) -> None:
        copy = str(Path.cwd())
        self.core, problem = load_core(_anchored(with_keys(init, keys or {})))
        self.problem = problem.replace(copy, case_dir) if problem else problem
        self._copy, self._shown = copy.encode(), dumps_safe(case_dir)[1][1:-1]  # as they read inside JSON

    def ready(self) -> str | None:
        return self.problem

    def _loaded(self) -> WorkerCore:
        if self.core is None:  # the driver plays nothing on an actor whose ready() named a problem
            raise RuntimeError(f"this worker did not start: {self.problem}")
        return self.core

    async def play(self, index: int, trial: int) -> tuple[bytes, bytes | None]:
        """The run's RESULT bytes, and what the actor has spent when this run called the judge or simulator."""
        result = await self._loaded().play(index, trial)
        if self._copy in result:
            result = result.replace(self._copy, self._shown)
        core = self._loaded()
        if not core.spent_changed:
            return result, None
        core.spent_changed = False
        return result, orjson.dumps(core.spent())

    def spent(self) -> bytes:
        return orjson.dumps(self._loaded().spent())

    async def limits(self, payload: bytes) -> None:
        """The driver's LIMITS: this actor's window ceiling and its part of each --rate-limit."""
        limits = orjson.loads(payload)
        self._loaded().player.command.endpoints.set_limits(limits["ceiling"], limits["share"])

    async def close(self) -> None:
        await self._loaded().close()


class RayHost:
    """One actor, spoken to through the same messages as a worker process."""

    def __init__(self, number: int, slots: int, actor_class: Any, init_ref: Any, case_dir: str,
                 keys: dict[str, str | None] | None = None) -> None:
        self.number, self.slots = number, slots
        self._actor_class, self._init_ref, self._case_dir = actor_class, init_ref, case_dir
        self._keys = keys or {}  # constructor arguments: held by the actor, never in a runtime_env or the store
        self.actor: Any = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._lost: str | None = None
        self._ready = False

    def start(self, deliver: Any) -> None:
        self._deliver = deliver
        try:  # one more than the slots, so that asking what it spent never queues behind its runs
            self.actor = self._actor_class.options(max_concurrency=self.slots + 1).remote(
                self._init_ref, self._case_dir, self._keys)
        except Exception as exc:  # noqa: BLE001 - whatever Ray refuses, the run says it and exits 2
            self._cannot_start(exc)
            return
        self._spawn(self._check_ready())

    def replacement(self) -> RayHost:
        return RayHost(self.number, self.slots, self._actor_class, self._init_ref, self._case_dir, self._keys)

    def _cannot_start(self, exc: Exception) -> None:
        """Ray could not create the actor, or set up its runtime_env: a start-up problem, then a gone worker."""
        if self._lost is None:
            reason = ray_reason(exc)
            self._lost = f"worker {self.number} (Ray actor) failed: {reason}"
            if not self._ready:
                what = ("set up the actor's runtime_env (from --ray-runtime-env)" if _is_runtime_env_error(exc)
                        else "create the actor")
                self._deliver(self, FAILED + f"Ray cannot {what}: {reason}".encode())
            self._deliver(self, None)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _call(self, method: Any, *args: Any) -> Any:
        import ray

        try:
            return await method.remote(*args)
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as exc:
            if self._lost is None:
                self._lost = f"worker {self.number} (Ray actor) died: {str(exc).splitlines()[0]}"
                self._deliver(self, None)
            return None
        except ray.exceptions.RayTaskError as exc:
            self._deliver(self, CRASHED + str(exc).encode())
            return None
        except Exception as exc:  # noqa: BLE001 - e.g. RuntimeEnvSetupError: the actor never came up
            self._cannot_start(exc)
            return None

    async def _check_ready(self) -> None:
        problem = await self._call(self.actor.ready)
        if problem:
            self._deliver(self, FAILED + problem.encode())
        elif not self._lost:
            self._ready = True
            self._deliver(self, READY)

    async def _play(self, index: int, trial: int) -> None:
        answer = await self._call(self.actor.play, index, trial)
        if answer is not None:
            result, spent = answer
            self._deliver(self, RESULT + pack_results([result]))
            if spent is not None:
                self._deliver(self, SPENT + spent)

    async def _spent(self) -> None:
        spent = await self._call(self.actor.spent)
        if spent is not None:
            self._deliver(self, USAGE + spent)

    def send(self, message: bytes) -> None:
        if self.actor is None:
            return  # Ray refused to create it: the pool has been told
        kind = message[:1]
        if kind == LIMITS:
            self._spawn(self._call(self.actor.limits, message[1:]))
            return
        if kind == BATCH:
            for index, trial in orjson.loads(message[1:]):
                self._spawn(self._play(index, trial))
            return
        if kind == STOP:  # runs in flight are dropped, as in one process
            for task in list(self._tasks):
                task.cancel()
        self._spawn(self._spent())

    def loss(self) -> str:
        return self._lost or f"worker {self.number} (Ray actor) was lost"

    async def close(self) -> None:
        import ray

        for task in list(self._tasks):
            task.cancel()
        if self.actor is not None:
            try:  # its MCP servers end with it; a dead or stuck actor is killed all the same
                await asyncio.wait_for(self.actor.close.remote(), CLOSE_GRACE_S)
            except Exception:  # noqa: BLE001 - whatever went wrong, the kill below ends it
                pass
            ray.kill(self.actor)


def open_ray_pool(cfg: Settings, init: WorkerInit, output_dir: Path) -> WorkerPool:
    """Start (or join) Ray and place one actor per worker; Ray is stopped when the pool closes.

    A local instance this run started is stopped whatever ends the run: here when no pool comes of it
    (Ray's refusals become a ConfigError), else by the pool's on_close, which the run always calls.
    """
    require_ray()
    import ray

    case_dir = init.cases_file.parent
    env = runtime_env(cfg, case_dir, output_dir)
    _check_runtime_env(env)
    for line in secret_env_var_warnings(env):
        print(line, file=sys.stderr, flush=True)
    moved, keys = without_keys(relocate(init))
    started = False
    try:
        # Ctrl-C is held while a local instance starts: cut in half, it leaves processes nobody can stop.
        with nullcontext() if cfg[RAY_ADDRESS] else sigint_held():
            _init_ray(cfg, env)
        workers = cfg[WORKERS] or max(1, int(ray.cluster_resources().get("CPU", 1)))
        actor_class = ray.remote(num_cpus=1)(RayWorker)
        init_ref = ray.put(moved)  # one object in Ray's store, shared by every actor
        started = True
    except Exception as exc:  # noqa: BLE001 - Ray refusing to start, whatever it raises: one message
        raise ConfigError(start_failure(exc, cfg, case_dir, output_dir)) from None
    finally:
        if not started:  # refused, or a Ctrl-C: an instance this run started goes
            stop_ray()
    hosts = [RayHost(number, slots, actor_class, init_ref, str(case_dir), keys)
             for number, slots in enumerate(split_concurrency(cfg[CONCURRENCY], workers))]
    return WorkerPool(hosts, on_close=stop_ray, asked=workers)


def _init_ray(cfg: Settings, env: dict[str, Any]) -> None:
    import ray

    options: dict[str, Any] = {"runtime_env": env, "log_to_driver": True}
    if cfg[RAY_ADDRESS]:
        ray.init(address=cfg[RAY_ADDRESS], **options)
    else:
        # "local" starts a new instance whatever RAY_ADDRESS says. Its node address is 127.0.0.1 and it
        # has no dashboard web UI, but Ray's own processes may listen on every interface (docs/scale.md).
        ray.init(address="local", num_cpus=max(os.cpu_count() or 1, cfg[WORKERS]), include_dashboard=False,
                 _node_ip_address="127.0.0.1", **options)


def stop_ray() -> None:
    """Leave Ray, stopping the local instance this run started (if any) and waiting, bounded, for its processes.

    Safe to call twice; never cut in half by Ctrl-C.
    """
    import inspect

    import ray

    with sigint_held():
        if "wait_for_processes" in inspect.signature(ray.shutdown).parameters:
            ray.shutdown(wait_for_processes=True)
        else:  # an older Ray: its shutdown does not wait
            ray.shutdown()


def _check_runtime_env(env: dict[str, Any]) -> None:
    """Ray's own check of the runtime_env, before anything starts."""
    from ray.runtime_env import RuntimeEnv

    try:
        RuntimeEnv(**env)
    except Exception as exc:  # noqa: BLE001 - TypeError, ValueError, whatever this Ray version raises
        raise ConfigError(f"--ray-runtime-env is not a runtime_env Ray takes: {ray_reason(exc)}. Fix that "
                          "field (see Ray's runtime_env docs), or leave it out.") from None


def ray_reason(exc: BaseException) -> str:
    """Ray's error in one line: the last line of a traceback it carries, else its first line."""
    text = str(getattr(exc, "error_message", None) or exc)
    lines = [line.strip() for line in text.splitlines()
             if line.strip() and line.strip() != "Failed to set up runtime environment."]
    if not lines:
        return type(exc).__name__
    line = lines[-1] if any(line.startswith("Traceback") for line in lines) else lines[0]
    return line.rstrip(". ") if len(line) <= 400 else line[:399] + "…"


def _is_runtime_env_error(exc: BaseException) -> bool:
    import ray

    return isinstance(exc, ray.exceptions.RuntimeEnvSetupError)


_TOO_BIG = re.compile(r"Package size \(([^)]*)\) exceeds the maximum size of ([\d.]+\s*[KMGT]?i?B)")


def start_failure(exc: Exception, cfg: Settings, case_dir: Path, output_dir: Path) -> str:
    """The one message for Ray refusing to start, with the fix that fits what it refused."""
    reason = ray_reason(exc)
    text = str(getattr(exc, "error_message", None) or exc)
    if _is_runtime_env_error(exc) and "working_dir" in text:
        too_big = _TOO_BIG.search(text)
        what = (f"packed, it is {too_big.group(1)}, over Ray's limit of {too_big.group(2)}" if too_big
                else reason)
        biggest = _biggest_file(case_dir, output_dir)
        example = f"/{biggest[0]}" if biggest else "/data/big.bin"
        named = f" (the biggest is {biggest[0]}, {biggest[1] / 2**20:.0f} MiB)" if biggest else ""
        return (f"Ray cannot ship the case file's folder {case_dir} as the job's working_dir: {what}. Ray copies "
                f"the whole folder to every worker; move big files out of it{named}, or exclude them with "
                f"--ray-runtime-env '{{\"excludes\": [\"{example}\"]}}' or a .rayignore file in the folder.")
    if _is_runtime_env_error(exc):
        return f"Ray cannot set up --ray-runtime-env: {reason}. Fix that field, or leave it out."
    if cfg[RAY_ADDRESS]:
        return (f"cannot join the Ray cluster at {redact_urls(cfg[RAY_ADDRESS])} ({redact_urls(reason)}); check "
                "--ray-address (for example "
                "`auto` or ray://HOST:10001) and that the cluster is up (`ray status`).")
    return (f"cannot start a local Ray instance ({reason}); Ray's own logs say more. --workers N runs the same "
            "workers as local processes, without Ray.")


def _biggest_file(case_dir: Path, output_dir: Path) -> tuple[str, int] | None:
    """The largest file Ray would ship from case_dir (its path relative to it, its size), if any."""
    best: tuple[str, int] | None = None
    skipped = str(output_dir.resolve())
    for root, dirs, files in os.walk(case_dir):
        dirs[:] = [d for d in dirs if d not in SKIPPED and os.path.join(root, d) != skipped]
        for name in files:
            try:
                size = os.path.getsize(os.path.join(root, name))
            except OSError:
                continue
            if best is None or size > best[1]:
                best = (Path(root, name).relative_to(case_dir).as_posix(), size)
    return best
