"""Fixtures of the tests that run agent-eval as an installed process."""
from __future__ import annotations

import pytest

from tests.e2e.installed import BaseInstall, make_base_install


@pytest.fixture(scope="session")
def base_install(tmp_path_factory: pytest.TempPathFactory) -> BaseInstall:
    """The wheel installed into a new venv with the runtime dependencies only, built once per pytest process
    (the tests that take it only run commands in it, never change it)."""
    return make_base_install(tmp_path_factory.mktemp("base-install"))
