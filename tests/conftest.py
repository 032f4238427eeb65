"""Shared fixtures. Tests import the loopback server as `from tests.loopback import ...`.

The repository root is put on sys.path here so that import works however pytest is started
(`make test`, `.venv/bin/pytest`, or from another directory).
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.loopback import LoopbackServer, Script  # noqa: E402


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by where it lives: tests/e2e/ is `e2e`, the browser tests `browser`, the rest `unit`
    (except those marked `slow`, which `make test` runs and `make test-fast` leaves out)."""
    for item in items:
        path = Path(str(item.fspath)).resolve()
        if path.name == "test_html_browser.py":
            item.add_marker(pytest.mark.browser)
        elif "e2e" in path.relative_to(ROOT).parts:
            item.add_marker(pytest.mark.e2e)
        elif item.get_closest_marker("slow") is None:  # a slow in-process test stays out of test-fast
            item.add_marker(pytest.mark.unit)


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
