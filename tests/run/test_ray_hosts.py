"""--ray without a Ray instance: what Ray's refusals become, and what an actor sends back (docs/scale.md).

The e2e tests in tests/e2e/test_workers_cli.py start a real local instance; these stand Ray's calls in.
"""
from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import signal
from pathlib import Path

import orjson
import pytest

from agent_eval.errors import ConfigError
from agent_eval.run.config import resolve
from tests.builders import flags_of
from agent_eval.run.interrupt import sigint_held
from agent_eval.run.worker import WorkerInit
from agent_eval.suite.cases import load_suite
from tests.builders import RAISING_AGENT, RAISING_TOOL

ray = pytest.importorskip("ray")

from agent_eval.run.ray_hosts import RayWorker, open_ray_pool, relocate  # noqa: E402 - needs ray

TOOLS = "\nfrom agent_eval import tool\n" + RAISING_TOOL
AGENT = RAISING_AGENT


def write_suite(folder: Path) -> Path:
    folder.mkdir()
    (folder / "tools.py").write_text(TOOLS)
    (folder / "agent.py").write_text(AGENT)
    path = folder / "cases.json"
    path.write_bytes(orjson.dumps({"suite": {"name": "s", "tools": "tools.py", "agent": "agent.py:agent"},
                                   "cases": [{"id": "agent-raises", "query": "q", "expect": {"contains": "ok"}},
                                             {"id": "tool-raises", "query": "q", "expect": {"contains": "ok"}}]}))
    return path


def worker_init(cases: Path, flags: dict) -> WorkerInit:
    suite = load_suite(cases)
    cfg = resolve(flags_of(**{"ray": True, **flags}), suite, {})
    digest = hashlib.sha256(cases.read_bytes()).hexdigest()
    return WorkerInit(cfg.cases_file, digest, [c["id"] for c in suite.cases], cfg, cases.parent.resolve())


@pytest.fixture
def shutdowns(monkeypatch) -> list[bool]:
    """Each ray.shutdown call (its wait_for_processes), with ray.init standing in for Ray."""
    calls: list[bool] = []
    monkeypatch.setattr(ray, "shutdown", lambda wait_for_processes=False: calls.append(wait_for_processes))
    return calls


def refuse(monkeypatch, exc: BaseException) -> None:
    def init(**options):
        raise exc

    monkeypatch.setattr(ray, "init", init)


def test_ray_refusing_the_working_dir_names_it_its_limit_and_the_file_to_move(tmp_path, monkeypatch,
                                                                                shutdowns) -> None:
    cases = write_suite(tmp_path / "suite")
    (tmp_path / "suite" / "data").mkdir()
    (tmp_path / "suite" / "data" / "blob.bin").write_bytes(b"x" * 3_000_000)
    # What Ray 2.x raises from ray.init when the packed folder is over its gRPC message limit.
    refuse(monkeypatch, ray.exceptions.RuntimeEnvSetupError(
        f"Failed to upload working_dir {tmp_path / 'suite'} to the Ray cluster: Package size (600.00MiB) "
        "exceeds the maximum size of 512.00MiB. To exclude large files, add them to '.gitignore' or "
        "'.rayignore' files, or use the 'excludes' option in the runtime_env."))
    init = worker_init(cases, {})
    with pytest.raises(ConfigError) as raised:
        open_ray_pool(init.cfg, init, tmp_path / "out")
    message = str(raised.value)
    assert f"Ray cannot ship the case file's folder {tmp_path / 'suite'} as the job's working_dir" in message
    assert "600.00MiB, over Ray's limit of 512.00MiB" in message
    assert "the biggest is data/blob.bin, 3 MiB" in message  # 3,000,000 bytes / 2**20 = 2.86 MiB
    assert '--ray-runtime-env \'{"excludes": ["/data/blob.bin"]}\'' in message
    assert "--ray-address" not in message and "ray status" not in message
    assert shutdowns == [True]  # a half-started local instance is stopped, and waited for


@pytest.mark.parametrize(("address", "exc", "needles", "never"), [
    (None, ValueError("py_modules entry must be a .py file, a directory, or a .whl file; got x"),
     ["cannot start a local Ray instance (py_modules entry must be"], ["--ray-address", "ray status"]),
    (None, TypeError("something Ray did not expect"), ["(something Ray did not expect)"], ["--ray-address"]),
    ("ray://head:10001", ConnectionError("could not connect"),
     ["cannot join the Ray cluster at ray://head:10001 (could not connect)", "check --ray-address", "`ray status`"],
     []),
    (None, ray.exceptions.RuntimeEnvSetupError("Traceback (most recent call last):\n  File \"x\"\n"
                                               "ValueError: Could not find Conda executable at conda."),
     ["Ray cannot set up --ray-runtime-env: ValueError: Could not find Conda executable at conda. Fix"],
     ["Traceback", "--ray-address"]),
], ids=["local", "any-exception", "address", "runtime-env"])
def test_ray_refusing_to_start_is_one_message_with_the_fix_that_fits(tmp_path, monkeypatch, shutdowns, address,
                                                                     exc, needles, never) -> None:
    cases = write_suite(tmp_path / "suite")
    refuse(monkeypatch, exc)
    init = worker_init(cases, {"ray_address": address} if address else {})
    with pytest.raises(ConfigError) as raised:
        open_ray_pool(init.cfg, init, tmp_path / "out")
    message = str(raised.value)
    assert all(needle in message for needle in needles), message
    assert not any(word in message for word in never), message
    assert "\n" not in message and shutdowns == [True]


def test_ctrl_c_while_ray_starts_is_held_until_it_has_started_then_ray_is_stopped(tmp_path, monkeypatch,
                                                                                   shutdowns) -> None:
    cases = write_suite(tmp_path / "suite")
    started = []

    def init(**options):
        os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C in the middle of starting the instance...
        started.append(True)  # ...which finishes all the same

    monkeypatch.setattr(ray, "init", init)
    config = worker_init(cases, {})
    with pytest.raises(KeyboardInterrupt):
        open_ray_pool(config.cfg, config, tmp_path / "out")
    assert started == [True] and shutdowns == [True]


def test_sigint_held_delivers_one_ctrl_c_after_the_block() -> None:
    steps = []
    with pytest.raises(KeyboardInterrupt), sigint_held():
        os.kill(os.getpid(), signal.SIGINT)
        steps.append("after the signal")
    assert steps == ["after the signal"]
    with sigint_held():
        steps.append("quiet")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_actor_names_the_users_folder_not_its_copy(tmp_path, monkeypatch) -> None:
    cases = write_suite(tmp_path / "suite")
    copy = tmp_path / "ray" / "working_dir_files" / "_ray_pkg_0123"
    shutil.copytree(tmp_path / "suite", copy)
    monkeypatch.chdir(copy)  # an actor runs in Ray's copy of the case folder
    original = str(cases.parent)
    worker = RayWorker(relocate(worker_init(cases, {})), original)
    assert worker.ready() is None
    try:
        for index, needle in ((0, f'File "{original}/agent.py", line 4, in agent'),
                              (1, f'File "{original}/tools.py", line 8, in explode')):
            result, _ = asyncio.run(worker.play(index, 0))
            assert str(copy).encode() not in result
            assert orjson.dumps(needle)[1:-1] in result
            head, _, run = result.partition(b"\n")
            orjson.loads(head), orjson.loads(run)  # still JSON
    finally:
        asyncio.run(worker.close())  # turns the garbage collector back on


def test_an_actor_that_cannot_start_names_the_users_case_file_once(tmp_path, monkeypatch) -> None:
    cases = write_suite(tmp_path / "suite")
    copy = tmp_path / "ray" / "_ray_pkg_0123"
    shutil.copytree(tmp_path / "suite", copy, ignore=shutil.ignore_patterns("tools.py"))  # an "excludes" hit
    monkeypatch.chdir(copy)
    problem = RayWorker(relocate(worker_init(cases, {})), str(cases.parent)).ready()
    assert problem is not None and str(copy) not in problem
    assert problem.startswith(f"{cases}, field 'suite.tools': {cases.parent / 'tools.py'}: tools module not found")
    assert problem.count("cases.json") == 1
