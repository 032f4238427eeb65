"""The executor seam's arithmetic and settings: how --concurrency is split, and --workers / --ray flags."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_eval.flags.rows import RAY, RAY_RUNTIME_ENV, WORKERS
from agent_eval.errors import ConfigError
from agent_eval.run.config import resolve
from tests.builders import flags_of
from agent_eval.run.pool import split_concurrency
from agent_eval.run.ray_hosts import relocate, runtime_env
from agent_eval.run.worker import WorkerInit
from agent_eval.suite.cases import load_suite


@pytest.mark.parametrize(("concurrency", "workers", "slots"), [
    (8, 2, [4, 4]),  # 8 // 2 each
    (3, 2, [2, 1]),  # 3 // 2 = 1 each, plus one for worker 0 since 0 < 3 % 2
    (10, 4, [3, 3, 2, 2]),  # 10 // 4 = 2 each, plus one for workers 0 and 1 (10 % 4 = 2)
    (1, 2, [1]),  # worker 1 would get 1 // 2 = 0 slots: it is not started
    (5, 1, [5]),
])
def test_concurrency_is_split_among_workers(concurrency: int, workers: int, slots: list[int]) -> None:
    assert split_concurrency(concurrency, workers) == slots
    assert sum(split_concurrency(concurrency, workers)) == concurrency


TOOLS = '''
from agent_eval import tool


@tool
def ping(env: dict) -> str:
    """Answer."""
    return "pong"
'''


@pytest.fixture
def suite(tmp_path: Path):
    (tmp_path / "tools.py").write_text(TOOLS)
    path = tmp_path / "cases.json"
    path.write_text('{"suite": {"name": "s", "tools": "tools.py"}, '
                    '"cases": [{"id": "a", "query": "q", "expect": {"contains": "x"}}]}')
    return load_suite(path)


def test_workers_and_ray_settings(suite) -> None:
    cfg = resolve(flags_of(**{}), suite, {})
    assert (cfg[WORKERS], cfg[RAY]) == (1, False)
    assert cfg.settings()["workers"] == 1 and cfg.settings()["ray"] is None
    cfg = resolve(flags_of(**{"workers": 3}), suite, {})
    assert cfg.settings()["workers"] == 3
    cfg = resolve(flags_of(**{"ray_address": "ray://head:10001"}), suite, {})  # an address implies --ray
    assert cfg[RAY] and cfg.settings()["ray"] == "ray://head:10001"
    cfg = resolve(flags_of(ray=True, ray_runtime_env='{"pip": ["requests"]}'), suite, {})
    assert cfg.settings()["ray"] == "local" and cfg[RAY_RUNTIME_ENV] == {"pip": ("requests",)}  # read-only: a tuple


@pytest.mark.parametrize(("flags", "needle"), [
    ({"workers": 0}, "--workers must be at least 1"),
    ({"ray": True, "ray_runtime_env": "{pip"}, "--ray-runtime-env is not valid JSON"),
    ({"ray": True, "ray_runtime_env": "[1]"}, "must be a JSON object"),
    ({"ray": True, "ray_runtime_env": '{"working_dir": "/x"}'}, "may not set working_dir"),
    # Ray takes strings only; it would say so with a traceback after starting a local instance.
    ({"ray": True, "ray_runtime_env": '{"env_vars": {"A": 1}}'},
     r"env_vars\['A'\] is 1, but Ray takes string values only; quote it: \{\"env_vars\":\{\"A\":\"1\"\}\}"),
    ({"ray": True, "ray_runtime_env": '{"env_vars": ["A=1"]}'}, "env_vars must be an object"),
    ({"ray": True, "ray_runtime_env": '{"py_modules": ["/nonexistent/dir"]}'},
     "py_modules entry '/nonexistent/dir' does not exist; give a folder"),
    ({"ray": True, "ray_runtime_env": '{"py_modules": ["no_such_lib"]}'},
     "'no_such_lib' does not exist .relative to the current directory: /"),
])
def test_bad_worker_flags_are_configuration_errors(suite, flags: dict, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        resolve(flags_of(**flags), suite, {})


def test_ray_without_ray_installed_names_the_extra(suite, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if `import ray` found nothing
    with pytest.raises(ConfigError, match=r"pip install 'agent-eval-trials\[ray\]'"):
        resolve(flags_of(**{"ray": True}), suite, {})


def test_the_working_dir_is_the_case_folder_without_outputs_and_caches(suite, tmp_path: Path) -> None:
    cfg = resolve(flags_of(ray=True, ray_runtime_env='{"env_vars": {"A": "1"}, "excludes": ["*.log"]}'),
                  suite, {})
    env = runtime_env(cfg, tmp_path, tmp_path / "reports")
    assert env["working_dir"] == str(tmp_path) and env["env_vars"] == {"A": "1"}
    assert env["excludes"] == ["*.log", ".git", ".venv", "__pycache__", "/reports"]
    assert runtime_env(cfg, tmp_path, Path("/elsewhere/reports"))["excludes"][-1] == "__pycache__"

    init = WorkerInit(tmp_path / "cases.json", "0" * 64, ["a"], cfg, tmp_path / "agents")
    moved = relocate(init)  # paths inside the folder become relative to the actor's copy of it
    assert moved.cases_file == Path("cases.json") and moved.agent_dir == Path("agents")
    assert relocate(WorkerInit(tmp_path / "cases.json", "", [], cfg, Path("/opt/agents"))).agent_dir == \
        Path("/opt/agents")


def test_finished_runs_travel_together_and_come_apart_unchanged() -> None:
    from agent_eval.run.worker import pack_results, unpack_results

    runs = [b'[0,1,{},[]]\n{"trial":1}', b"", b"x" * 70_000, "caf\u00e9\n".encode()]
    packed = pack_results(runs)
    assert len(packed) == sum(4 + len(r) for r in runs)  # a 4-byte length before each
    assert unpack_results(packed) == runs
    assert unpack_results(pack_results([])) == []


def test_the_gc_pacer_turns_automatic_collection_off_and_back() -> None:
    import gc

    from agent_eval.run.player import GC_EVERY_RUNS, GcPacer

    assert gc.isenabled()
    pacer = GcPacer()
    pacer.pause()
    try:
        assert not gc.isenabled()
        assert gc.get_freeze_count() > 0  # what existed before the runs is never rescanned
        before = gc.get_stats()[0]["collections"]
        for _ in range(GC_EVERY_RUNS - 1):
            pacer.run_finished()
        assert gc.get_stats()[0]["collections"] == before
        pacer.run_finished()  # the GC_EVERY_RUNS-th finished run collects the young generation
        assert gc.get_stats()[0]["collections"] == before + 1
    finally:
        pacer.resume()
    assert gc.isenabled() and gc.get_freeze_count() == 0
