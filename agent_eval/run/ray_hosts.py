"""--ray: the same workers as --workers N, placed on Ray as actors (`pip install 'agent-eval[ray]'`).

Without --ray-address a new local Ray instance is started and stopped by the run; RAY_ADDRESS is never
joined by accident. The case file's folder is the job's working_dir (see docs/scale.md).
"""
from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path
from typing import Any

import orjson

from agent_eval.errors import ConfigError
from agent_eval.run.config import require_ray
from agent_eval.run.pool import WorkerPool, split_concurrency
from agent_eval.run.worker import (BATCH, CRASHED, FAILED, READY, RESULT, SPENT, STOP, USAGE, WorkerInit,
                                   load_core, pack_results)

CLOSE_GRACE_S = 2.0
SKIPPED = [".git", ".venv", "__pycache__"]  # never shipped with the working_dir, wherever they are


def runtime_env(cfg: Any, case_dir: Path, output_dir: Path) -> dict[str, Any]:
    """The job's runtime_env: --ray-runtime-env plus the case file's folder as working_dir, pruned."""
    env = dict(cfg.ray_runtime_env or {})
    excludes = list(env.get("excludes") or []) + SKIPPED
    try:
        excludes.append("/" + output_dir.resolve().relative_to(case_dir).as_posix())
    except ValueError:
        pass  # the output dir is outside the working_dir
    env.update(working_dir=str(case_dir), excludes=excludes)
    return env


def relocate(init: WorkerInit) -> WorkerInit:
    """Paths inside the case file's folder made relative to it: an actor runs in its copy (the working_dir)."""
    case_dir = init.cases_file.parent

    def inside(path: Path | None) -> Path | None:
        if path is None:
            return None
        try:
            return path.resolve().relative_to(case_dir)
        except ValueError:
            return path  # outside the folder: it must exist on the cluster at the same path

    user = dataclasses.replace(init.cfg.user_sim, spec_base=inside(init.cfg.user_sim.spec_base))
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
    """The actor: a WorkerCore in the job's working_dir (decorated with ray.remote when Ray is started)."""

    def __init__(self, init: WorkerInit) -> None:
        self.core, self.problem = load_core(_anchored(init))

    def ready(self) -> str | None:
        return self.problem

    async def play(self, index: int, trial: int) -> tuple[bytes, bytes | None]:
        """The run's RESULT bytes, and what the actor has spent when this run called the judge or simulator."""
        result = await self.core.play(index, trial)
        if not self.core.spent_changed:
            return result, None
        self.core.spent_changed = False
        return result, orjson.dumps(self.core.spent())

    def spent(self) -> bytes:
        return orjson.dumps(self.core.spent())

    async def close(self) -> None:
        await self.core.close()


class RayHost:
    """One actor, spoken to through the same messages as a worker process."""

    def __init__(self, number: int, slots: int, actor_class: Any, init_ref: Any) -> None:
        self.number, self.slots = number, slots
        self._actor_class, self._init_ref = actor_class, init_ref
        self.actor: Any = None
        self._tasks: set[asyncio.Task] = set()
        self._lost: str | None = None

    def start(self, deliver: Any) -> None:
        # One more than the slots, so that asking what it spent never queues behind its runs.
        self.actor = self._actor_class.options(max_concurrency=self.slots + 1).remote(self._init_ref)
        self._deliver = deliver
        self._spawn(self._check_ready())

    def replacement(self) -> RayHost:
        return RayHost(self.number, self.slots, self._actor_class, self._init_ref)

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

    async def _check_ready(self) -> None:
        problem = await self._call(self.actor.ready)
        if problem:
            self._deliver(self, FAILED + problem.encode())
        elif not self._lost:
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
        kind = message[:1]
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


def open_ray_pool(cfg: Any, init: WorkerInit, output_dir: Path) -> WorkerPool:
    """Start (or join) Ray and place one actor per worker; Ray is stopped when the pool closes."""
    require_ray()
    import ray

    case_dir = init.cases_file.parent
    options: dict[str, Any] = {"runtime_env": runtime_env(cfg, case_dir, output_dir), "log_to_driver": True}
    try:
        if cfg.ray_address:
            ray.init(address=cfg.ray_address, **options)
        else:
            # "local" starts a new instance whatever RAY_ADDRESS says; loopback only, no dashboard.
            ray.init(address="local", num_cpus=max(os.cpu_count() or 1, cfg.workers), include_dashboard=False,
                     _node_ip_address="127.0.0.1", **options)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        where = f"join the Ray cluster at {cfg.ray_address}" if cfg.ray_address else "start a local Ray instance"
        raise ConfigError(f"cannot {where} ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); "
                          "check --ray-address (for example `auto` or ray://HOST:10001) and that the "
                          "cluster is up (`ray status`).") from None
    workers = cfg.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    cfg.workers = workers  # the report's settings.workers: how many were asked for, Ray's CPU count by default
    actor_class = ray.remote(num_cpus=1)(RayWorker)
    init_ref = ray.put(relocate(init))  # one object in Ray's store, shared by every actor
    hosts = [RayHost(number, slots, actor_class, init_ref)
             for number, slots in enumerate(split_concurrency(cfg.concurrency, workers))]
    return WorkerPool(hosts, on_close=ray.shutdown)
