"""The `agent_eval` fixture: one case written inline in a test, played against a case file's suite."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_eval.flags.rows import THRESHOLD
from agent_eval.errors import CaseFileError, ConfigError, Problem
from agent_eval.pytest_plugin.book import Book, load_inline_case
from agent_eval.pytest_plugin.items import STATE, as_options
from agent_eval.pytest_plugin.session import SessionState, outcome_message
from agent_eval.records import CaseStatus, RunRecord
from agent_eval.report.reasons import case_reason, failure_lines


@dataclass(frozen=True)
class CaseResult:
    """How an inline case ended over its runs."""

    id: str
    status: CaseStatus  # not_run when the session stopped taking runs (-x, Ctrl-C) before it played
    pass_rate: float | None
    reason: str  # why it did not pass ("" when it passed)
    failed_checks: list[str]  # "name: detail" of every failed check of every unsuccessful run
    metrics: dict[str, Any]  # the suite metrics over this case's runs (the report's summary keys)
    runs: list[RunRecord]  # the run records, traces included
    message: str = ""  # the reason and the failed checks, as assert_passed says them

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def assert_passed(self) -> None:
        """Fail the test with the case's reason and failed checks unless it passed (skip it if it was)."""
        __tracebackhide__ = True
        if self.status == "skipped":
            pytest.skip(self.reason)
        if not self.passed:
            raise AssertionError(self.message)


def inline_runner(request: pytest.FixtureRequest, suite_file: Path | str | None) -> Callable[..., CaseResult]:
    """The function the `agent_eval` fixture gives a test."""
    from agent_eval.commands.library import off_running_loop

    def run(case: Mapping[str, Any], *, repeat: int | None = None, threshold: float | None = None) -> CaseResult:
        __tracebackhide__ = True
        if suite_file is None:
            raise CaseFileError([Problem(request.node.nodeid, None, None,
                                         "no suite to run the inline case against: pass --agent-eval CASEFILE, "
                                         "set agent_eval_cases in the ini file, or override the agent_eval_suite "
                                         "fixture to return a case file")])
        if repeat is not None and (type(repeat) is not int or repeat < 1):  # True is an int; 2.5 and "3" are not
            raise ConfigError(f"{request.node.nodeid}: agent_eval(case, repeat={repeat!r}): repeat is the number of "
                              "runs of the case, a positive whole number (such as repeat=3).")
        book = state_of(request.config).open(Path(suite_file))
        loaded = load_inline_case(book.suite, case, f"{request.node.nodeid} (inline case)")
        case_id = book.add_inline(loaded, dict(case))
        off_running_loop(lambda: book.play([case_id], repeat))
        return result_of(book, case_id, threshold)

    return run


def state_of(config: pytest.Config) -> SessionState:
    """The session's plugin state; made here when only the fixture asked for the plugin."""
    state = config.stash.get(STATE, None)
    if state is None:
        state = SessionState(config, [])
        config.stash[STATE] = state
        config.pluginmanager.register(state, "agent_eval_session")
    return state


def result_of(book: Book, case_id: str, threshold: float | None) -> CaseResult:
    """The CaseResult of a played inline case."""
    from agent_eval.score.metrics import summarize

    if case_id in book.problems:
        problem = as_options(book.problems[case_id])
        return CaseResult(case_id, "error", None, problem, [], {}, [], problem)
    entry = book.entry(case_id, threshold)
    assert entry is not None
    runs: list[RunRecord] = [orjson.loads(chunk) for chunk in book.run_chunks(case_id)]
    repeat = max(1, len(runs))
    summary = summarize([{"id": case_id, "status": entry["status"], "runs": entry.get("runs") or []}], repeat,
                        book.suite.scorers)
    failed = [line for run in runs if run.get("status") in ("failed", "error") for line in failure_lines(run)]
    limit = threshold if threshold is not None else book.cfg[THRESHOLD]
    return CaseResult(case_id, entry["status"], entry.get("pass_rate"), case_reason(entry), failed,
                      summary, runs,
                      outcome_message(entry, limit) if entry["status"] != "passed" else "")
