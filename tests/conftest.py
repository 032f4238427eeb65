"""Shared fixtures. Tests import the loopback server as `from tests.loopback import ...`.

The CLI in a test: `from tests.cli import run_cli` calls `agent-eval ARGS...` in this process and returns
`CliResult(exit_code, stdout, stderr)` (`.returncode` too); it is the default. `run_cli_process` (same
arguments, same result) starts the installed script, for a test of the process itself: signals, exit
codes on signals, process trees, what a fresh interpreter imports, the installed wheel.

The suite runs on every core (`make test` passes `-n`, pytest-xdist): a test takes its ports from the
system (port 0), its files from tmp_path, and never writes into the repository.

The repository root is put on sys.path here so that import works however pytest is started
(`make test`, `.venv/bin/pytest`, or from another directory).
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.loopback import LoopbackServer, Script  # noqa: E402

pytest_plugins = ("pytester",)  # tests/test_pytest_plugin.py runs pytest inside pytest

_CACHE = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """The judge's cache of every test that does not choose its own is this process's (each xdist worker
    has one), never the user's ~/.cache nor a folder shared by parallel workers."""
    config.stash[_CACHE] = tempfile.mkdtemp(prefix="agent-eval-tests-cache-")
    os.environ["XDG_CACHE_HOME"] = config.stash[_CACHE]


def pytest_unconfigure(config: pytest.Config) -> None:
    if _CACHE in config.stash:
        shutil.rmtree(config.stash[_CACHE], ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by where it lives: tests/e2e/ is `e2e`, a `*_browser.py` file `browser`, the rest
    `unit`, except those marked `slow` (an in-process test of many seconds) or `e2e` by hand (one that
    starts the CLI, or a fresh interpreter of it, as a subprocess): `make test` runs them all,
    `make test-fast` only the unit tests."""
    for item in items:
        path = Path(str(item.fspath)).resolve()
        if path.name.endswith("_browser.py"):
            item.add_marker(pytest.mark.browser)
        elif "e2e" in path.relative_to(ROOT).parts:
            item.add_marker(pytest.mark.e2e)
        elif item.get_closest_marker("slow") is None and item.get_closest_marker("e2e") is None:
            item.add_marker(pytest.mark.unit)


@pytest.fixture
def pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """pytester, except that a module of the venv or of agent_eval that an inner session imports stays imported.

    pytester puts sys.modules back after each in-process run and after the test, which forgets every module
    imported meanwhile: the next import then made a second openai (or agent_eval.suite.tools) beside the first,
    and what the process kept from the first (llm's SDK client class, `agent_eval.tool`) met the second's
    classes, so that a later test failed in this process only ("Invalid timeout ... NotGiven", "no tools
    found"). The inner session's own modules (its test files and conftest, a suite's tools) are still forgotten.
    """
    from _pytest.pytester import SysModulesSnapshot

    from tests.cli import is_installed

    def snapshot() -> SysModulesSnapshot:
        return SysModulesSnapshot(preserve=is_installed)

    pytester._sys_modules_snapshot = snapshot()  # type: ignore[attr-defined]  # put back after the test
    pytester._Pytester__take_sys_modules_snapshot = snapshot  # type: ignore[attr-defined]  # and after each run
    return pytester


@pytest.fixture
def command_state() -> Iterator[object]:
    """A command's own state, current for the test (its endpoints, listeners and clients)."""
    from agent_eval.provider import state

    with state.using(state.new_state()) as current:
        yield current


@pytest.fixture
def loopback() -> Iterator[Callable[..., LoopbackServer]]:
    """A factory: `srv = loopback(script, latency_s=0, fail_every=None)`, stopped after the test."""
    servers: list[LoopbackServer] = []

    def start(script: Script, latency_s: float = 0.0, fail_every: dict[int, int] | None = None,
              **options: object) -> LoopbackServer:
        server = LoopbackServer(script, latency_s=latency_s, fail_every=fail_every, **options)
        servers.append(server.start())
        return server

    yield start
    for server in servers:
        server.stop()
