"""The plugin's state in one pytest process once it is asked for: the books, the batches, the reports.

Without xdist this process plays every case and writes the reports. Under xdist each worker plays the
cases it was given (those of the items it holds when the first unplayed one is set up, at once) and
sends its books to the controller, which writes the session's one report per case file.
"""
from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_eval.flags.rows import OUTPUT_DIR, RECORD, REPLAY, THRESHOLD
from agent_eval.errors import CaseFileError, ConfigError
from agent_eval.flags import Flags
from agent_eval.pytest_plugin.book import Book, open_book
from agent_eval.pytest_plugin.items import PAYLOAD, CaseError, CaseItem, as_options, settings_of
from agent_eval.records import CaseEntry, Report
from agent_eval.report.console import SafeConsole, escape_control
from agent_eval.report.files import report_path_of
from agent_eval.report.model import new_run_id, now_iso
from agent_eval.report.reasons import case_reason, failure_lines

RUNS_KEY = "agent_eval_runs"  # the key of the controller's run ids in each worker's workerinput
EXTENDS_KEY = "agent_eval_extends"  # which case files' recordings the controller extends, for the workers
START_KEY = "agent_eval_start"  # the controller's starting folder, in each worker's workerinput


@dataclass(frozen=True)
class Outcome:
    """What an item reports: the case's status and the message pytest shows."""

    status: str
    message: str


def outcome_message(entry: CaseEntry, threshold: float) -> str:
    """The case's reason, then each unsuccessful run's failed checks (what an assertion message says), with
    every control character escaped: an agent's reply cannot restyle the terminal it is shown on."""
    return escape_control(_message(entry, threshold))


def _message(entry: CaseEntry, threshold: float) -> str:
    status = entry.get("status")
    reason = case_reason(entry)
    if status == "skipped":
        return reason
    if status == "not_run":
        return "not run: the session stopped taking runs (-x, or interrupted)"
    runs = entry.get("runs") or []
    rate = entry.get("pass_rate")
    if status == "error":
        reason = reason.removeprefix("error: ")
    head = f"case {entry['id']!r} {'ended in an infrastructure error' if status == 'error' else status}"
    if status == "failed" and rate is not None:
        head += f" (pass rate {rate:.2f} < threshold {threshold:g})"
    lines = [f"{head}: {reason}"]
    for run in runs:
        if run.get("status") in ("failed", "error"):
            why = [f"error: {run['error']}"] if run.get("error") else failure_lines(run)
            lines.append(f"  run {run.get('trial', 0) + 1}: " + "\n         ".join(why))
    if len(lines) == 2 and lines[1].endswith(": " + reason) and "\n" not in lines[1]:
        return lines[0]  # one run with one failure: its line says nothing the reason has not
    return "\n".join(lines)


class SessionState:
    """The books of one pytest process, keyed by case file, and the reports written at the end."""

    def __init__(self, config: pytest.Config, files: list[Path]) -> None:
        from agent_eval.suite.imports import load_plugins

        load_plugins(os.environ)
        self.config = config
        self.files = files
        self.books: dict[Path, Book] = {}
        self.parts: list[bytes] = []
        self.reports: list[tuple[Report | None, list[str], Path | None]] = []
        self.markers: set[str] = set()
        self.collected: set[str] = set()  # xdist's controller: the node ids the workers collected (selected)
        workerinput = getattr(config, "workerinput", None)
        self.worker: str | None = workerinput["workerid"] if workerinput else None
        given = (workerinput or {}).get(RUNS_KEY) or {}
        self.runs: dict[str, list[str]] = dict(given) or {str(p): [new_run_id(), now_iso()] for p in files}
        # Where relative paths start, taken once (a worker takes the controller's): a conftest's chdir moves nothing.
        self.start = Path((workerinput or {}).get(START_KEY) or config.invocation_params.dir)

    # ------------------------------------------------------------ collection

    def flags(self, path: Path) -> Flags:
        """`run`'s flags for a case file: the plugin's settings, and pytest's -x as `run`'s -x."""
        from agent_eval.commands.library import flags_for

        settings = settings_of(self.config, self.start)
        if self.config.getoption("maxfail", 0) == 1:
            settings["exitfirst"] = True
        return flags_for(path, settings, "pytest --agent-eval")

    def open(self, path: Path) -> Book:
        """The book of a case file, loaded once (a CaseFileError or ConfigError is a collection error)."""
        key = path.resolve()
        if key not in self.books:
            run_id, created_at = self.runs.get(str(key)) or [new_run_id(), now_iso()]
            here = self.start
            # as `run --cases` records it; whole when a conftest moved the working directory away
            given = key.relative_to(here) if key.is_relative_to(here) and Path.cwd() == here else key
            self.books[key] = open_book(self.flags(given), run_id, created_at, self.worker, self.start)
            extends = (getattr(self.config, "workerinput", None) or {}).get(EXTENDS_KEY) or {}
            self.books[key].extends = bool(extends.get(str(key)))
        return self.books[key]

    def register_marker(self, tag: str) -> None:
        if tag not in self.markers:
            self.markers.add(tag)
            self.config.addinivalue_line("markers", f"{tag}: agent-eval cases tagged {tag}")

    # ------------------------------------------------------------ playing

    def outcome_of(self, item: CaseItem) -> Outcome:
        """Play the case of `item` if it is not played yet (with every other one this process holds), and
        say how it ended."""
        book = self.open(item.path)
        if item.name not in book.played and item.name not in book.problems:
            book.play(self._batch(item))
        if item.name in book.problems:
            return Outcome("error", as_options(book.problems[item.name]))
        entry = book.entry(item.name)
        if entry is None:
            return Outcome("error", f"case {item.name!r} was not played")
        return Outcome(entry["status"], outcome_message(entry, book.cfg[THRESHOLD]))

    def _batch(self, item: CaseItem) -> list[str]:
        """The cases of `item`'s case file among the items this process will run (all the session's without xdist; the
        ones this worker holds under xdist), `item`'s first."""
        held = _held_items(self.config, item.session) if self.worker else item.session.items
        key = item.path.resolve()
        return [item.name, *(other.name for other in held
                             if isinstance(other, CaseItem) and other.path.resolve() == key)]

    # ------------------------------------------------------------ the end of the session

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        """A case's infrastructure error is shown as its message, as a failure is, not as a traceback."""
        report = yield
        if call.excinfo is not None and isinstance(call.excinfo.value, CaseError):
            report.longrepr = str(call.excinfo.value)
        return report

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist: every worker writes its runs under the controller's run ids."""
        node.workerinput[RUNS_KEY] = self.runs
        node.workerinput[START_KEY] = str(self.start)
        node.workerinput[EXTENDS_KEY] = self._record_for_workers()

    def _record_for_workers(self) -> dict[str, bool]:
        """xdist with --agent-eval-record: the controller locks each recording folder and writes its header
        once, for the session (workers recording at once would refuse each other); whether each extends one."""
        extends: dict[str, bool] = {}
        for path in self.files:
            try:
                book = self.open(path)
            except (CaseFileError, ConfigError):  # the workers report it as each item's error
                continue
            if book.cfg[RECORD] is None or book.cfg[REPLAY] is not None:
                continue
            try:
                tape = book.tape or book.open_tape()
            except ConfigError as exc:
                raise pytest.UsageError(as_options(str(exc))) from None
            extends[str(path)] = bool(tape is not None and tape.extends)
        return extends

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.collected.update(ids)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.worker is not None:
            self.config.workeroutput[PAYLOAD] = [b.part_payload() for b in self.books.values()]  # type: ignore[attr-defined]
            return
        stopped = bool(session.shouldfail or session.shouldstop)  # -x (xdist ends that as interrupted too)
        interrupted = session.exitstatus == pytest.ExitCode.INTERRUPTED and not stopped
        if self.collected:  # xdist: what the workers sent while the controller stopped (Ctrl-C, -x)
            self.parts.extend(late_payloads(self.config))
        if self.parts:
            self._merge_parts()
        if self.collected and (interrupted or stopped):
            self._mark_unplayed(interrupted)
        for book in self.books.values():
            try:
                report, lines = book.write_report()
            except ConfigError as exc:  # the baseline report cannot be read: `run` says so and exits 2
                report, lines, book.gate_failed = None, [f"error: {as_options(str(exc))}"], True
            if report is not None or lines:
                self.reports.append((report, lines, report_path_of(book.cfg[OUTPUT_DIR], book.run_id)))
            if (book.gate_failed or gate_failed(report)) and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED  # the gate fails the session, as it fails `run`

    def _merge_parts(self) -> None:
        by_file: dict[str, list[bytes]] = {}
        for payload in self.parts:
            by_file.setdefault(orjson.loads(payload)["cases_file"], []).append(payload)
        for cases_file, payloads in by_file.items():
            try:
                book = self.open(Path(cases_file))
            except (CaseFileError, ConfigError) as exc:  # the workers reported it as each item's error
                self.reports.append((None, [f"agent-eval: no report for {cases_file}: {exc}"], None))
                continue
            book.merge_parts(payloads)

    def _mark_unplayed(self, interrupted: bool) -> None:
        """xdist: the selected cases of each case file that no worker played are `not_run`."""
        by_file: dict[Path, set[str]] = {}
        for nodeid in self.collected:
            path, _, case_id = nodeid.partition("::")
            key = (self.config.rootpath / path).resolve()
            if case_id and key in self.files:
                by_file.setdefault(key, set()).add(case_id)
        for key, ids in by_file.items():
            try:
                book = self.open(key)
            except (CaseFileError, ConfigError):  # the workers reported it as each item's error
                continue
            book.interrupted |= interrupted
            book.stopped_early |= not interrupted
            if interrupted:
                book.merge_journals()
            book.add_unplayed(ids)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.reports:
            return
        terminalreporter.section("agent-eval")
        for report, lines, path in self.reports:
            for line in lines:
                terminalreporter.write_line(escape_control(line))
            if report is not None and path is not None:
                terminalreporter.write(headline(report, path, self.config.get_terminal_writer().fullwidth))


def gate_failed(report: Report | None) -> bool:
    """True when the report's gate found a regression, or had nothing to compare."""
    gate = (report or {}).get("gate") or {}
    return bool(gate.get("regression") or gate.get("nothing_to_gate"))


def headline(report: Report, path: Path, width: int) -> str:
    """The report's headline metrics, its verdict and where it was written, as `run` prints them."""
    from agent_eval.report.terminal import render_headline, verdict_text

    out = io.StringIO()
    console = SafeConsole(file=out, width=max(width, 80), color_system=None, highlight=False)
    cases_file = Path(str(report.get("cases_file")))
    shown = cases_file.relative_to(Path.cwd()) if cases_file.is_relative_to(Path.cwd()) else cases_file
    console.print(f"{report.get('suite')} ({shown}), run {report.get('run_id')}", markup=False)
    render_headline(report, console)
    console.print(verdict_text(report))
    console.print(f"JSON report: {path}", markup=False)
    return out.getvalue()


def late_payloads(config: pytest.Config) -> list[bytes]:
    """xdist's controller: the books of workers whose end came after the controller stopped listening (a
    Ctrl-C, -x): their `workerfinished` events wait in the controller's queue, unread."""
    from queue import Empty

    dsession = config.pluginmanager.get_plugin("dsession")
    queue = getattr(dsession, "queue", None)
    found: list[bytes] = []
    while queue is not None:
        try:
            name, kwargs = queue.get_nowait()
        except Empty:
            break
        if name == "workerfinished":
            found.extend((kwargs.get("workeroutput") or {}).get(PAYLOAD) or ())
    return found


def _held_items(config: pytest.Config, session: pytest.Session) -> list[pytest.Item]:
    """xdist: the items this worker was given and has not run yet (the one after the current, then its queue)."""
    for plugin in config.pluginmanager.get_plugins():
        queue = getattr(plugin, "torun", None)
        if type(plugin).__name__ == "WorkerInteractor" and queue is not None:
            with queue.lock() as pending:
                indices = [plugin.nextitem_index, *pending]
            return [session.items[i] for i in indices if isinstance(i, int)]
    return []
