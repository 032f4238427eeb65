"""The pytest plugin (entry point `pytest11: agent_eval`): cases as pytest items, and inline cases in tests.

Inert until asked: with no `--agent-eval CASEFILE` and no `agent_eval_cases` in the ini file it adds its
options and its three fixtures, and imports nothing of agent-eval's until a test uses `agent_eval`.
Everything that plays, scores or writes a report is imported when it is first needed.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agent_eval.pytest_plugin.items import PAYLOAD, SETTINGS, STATE, CaseFile, case_files

if TYPE_CHECKING:
    from agent_eval.pytest_plugin.inline import CaseResult


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agent-eval", "agent-eval: agent cases as pytest items")
    group.addoption("--agent-eval", action="append", default=[], metavar="CASEFILE", dest="agent_eval",
                    help="Collect each case of CASEFILE as a test (repeatable).")
    parser.addini("agent_eval_cases", "Case files whose cases are collected as tests.", type="paths", default=[])
    for name, help_text, kind in SETTINGS:
        dest = "agent_eval_" + name.replace("-", "_")
        if kind is bool:
            group.addoption(f"--agent-eval-{name}", action="store_true", default=None, dest=dest, help=help_text)
            parser.addini(dest, help_text, type="bool", default=None)
        elif kind is list:
            group.addoption(f"--agent-eval-{name}", action="append", default=[], dest=dest, help=help_text)
            parser.addini(dest, help_text, type="args", default=[])
        else:
            group.addoption(f"--agent-eval-{name}", type=kind, default=None, dest=dest, help=help_text)
            parser.addini(dest, help_text, type="string", default=None)


def pytest_configure(config: pytest.Config) -> None:
    files = case_files(config)
    if not files:
        return  # inert: the fixtures exist, nothing else happens
    folders = [p for p in files if p.is_dir()]
    if folders:  # pytest would collect every test under it
        raise pytest.UsageError(f"--agent-eval {folders[0]}: a folder, not a case file; pass the case file itself "
                                "(such as cases/test_cases.json).")
    from agent_eval.pytest_plugin.session import SessionState

    state = SessionState(config, files)
    config.stash[STATE] = state
    config.pluginmanager.register(state, "agent_eval_session")
    # `pytest --agent-eval CASEFILE` collects the case files alone; beside paths it adds them to those. The
    # ini's case files join what a bare `pytest` collects (its testpaths).
    no_paths = config.args_source != pytest.Config.ArgsSource.ARGS
    if config.getoption("agent_eval") and no_paths:
        config.args[:] = [str(p) for p in files]
    elif config.getoption("agent_eval") or no_paths:
        have = {(config.invocation_params.dir / a.split("::")[0]).resolve() for a in config.args}
        config.args += [str(p) for p in files if p not in have]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = parent.config.stash.get(STATE, None)
    if state is None or file_path.resolve() not in state.files:
        return None
    return CaseFile.from_parent(parent, path=file_path)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist: keep what a worker played (its case files' or its inline cases') for the session's report."""
    payload = getattr(node, "workeroutput", {}).get(PAYLOAD)
    if payload:
        from agent_eval.pytest_plugin.inline import state_of

        state_of(node.config).parts.extend(payload)


@pytest.fixture
def agent_eval_suite(request: pytest.FixtureRequest) -> Path | None:
    """The case file whose suite block (agent, tools, environment, settings) inline cases run against:
    the first `--agent-eval` case file, else the ini's `agent_eval_cases`. Override it to choose another."""
    files = case_files(request.config)
    return files[0] if files else None


@pytest.fixture
def agent_eval(request: pytest.FixtureRequest, agent_eval_suite: Path | str | None) -> Callable[..., CaseResult]:
    """`agent_eval(case, repeat=3)`: play one case given as a dict (the case-file format) against the suite
    of `agent_eval_suite`; returns a CaseResult (`result.assert_passed()` fails the test with its reason)."""
    from agent_eval.pytest_plugin.inline import inline_runner

    return inline_runner(request, agent_eval_suite)


@pytest.fixture
def agent_eval_scripted_model() -> Iterator[Callable[..., str]]:
    """`base_url = agent_eval_scripted_model(script)`: serve a script (a file, or its list of entries) as a
    loopback OpenAI-compatible model for this test; its base URL. Every server started is stopped after it."""
    from contextlib import ExitStack

    from agent_eval.scripted.server import scripted_model

    with ExitStack() as started:
        def start(script: str | Path | Sequence[Any], port: int = 0) -> str:
            return started.enter_context(scripted_model(script, port))

        yield start
