"""One case file's part of a pytest session: its plan, the runs played, and the report.

A book calls the core's phases (commands/core.py) as `run` does: the plan once per case file (every case
kept: pytest selects them), the play per batch of the cases of the items a process holds (all of them
at once without xdist) into one journal, and the assembly (`finish_report`) once, at the end of the
session. Under xdist each worker keeps a book of its own and sends it to the controller, which writes
the one report of the session (`merge_parts`).
"""
from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from rich.console import Console

from agent_eval.flags.rows import AGENT, BASELINE, NO_JUDGE, OUTPUT_DIR, RECORD, REPLAY, THRESHOLD
from agent_eval.commands.conclude import finish_report
from agent_eval.commands.core import (Plan, check_journal, journal_header, open_journal, open_tape, parts_of,
                                      pick_baseline, play)
from agent_eval.commands.prepare import prepare
from agent_eval.errors import CaseFileError, ConfigError, Problem
from agent_eval.flags import Flags
from agent_eval.plugins import listeners as plugin_listeners
from agent_eval.provider import events
from agent_eval.provider.endpoints import merge_summaries
from agent_eval.pytest_plugin.items import as_options
from agent_eval.records import Case, CaseEntry, Report
from agent_eval.report.files import report_path_of
from agent_eval.run.config import Settings
from agent_eval.run.interrupt import Interrupts
from agent_eval.run.journal import Journal, scan_runs
from agent_eval.run.runner import CaseSlot, Runner, lite_run, slot_bytes, slot_entry
from agent_eval.score.usage import add_summaries
from agent_eval.suite.cases import Collector, Suite, case_fields, load_case
from agent_eval.suite.selection import skip_reason

if TYPE_CHECKING:
    from agent_eval.provider.tape import Tape
    from agent_eval.run.pool import WorkerPool


@dataclass
class Book:
    """A case file's plan (its suite, resolved settings, run id) and played cases, for one session (or one
    xdist worker)."""

    plan: Plan
    part: str | None = None  # the xdist worker's id: its journal is a part the controller merges
    played: dict[str, CaseSlot] = field(default_factory=dict)  # by case id: its runs (lite), their places
    spends: list[dict[str, Any]] = field(default_factory=list)  # each batch's summary.judge/user_sim/provider
    worker_spends: list[list[dict[str, Any]]] = field(default_factory=list)  # xdist: each worker's batches'
    models_used: set[str] = field(default_factory=set)
    agent_name: str | None = None
    stopped_early: bool = False
    interrupted: bool = False
    problems: dict[str, str] = field(default_factory=dict)  # case id -> why it could not be played (an error)
    journal: Journal | None = None
    tape: Tape | None = None  # --agent-eval-record / --agent-eval-replay
    extends: bool = False  # an xdist worker's: the controller's recording extends one (--replay-miss live)
    gate_failed: bool = False  # the gate could not be applied (no earlier run qualifies as the baseline)
    inline: dict[str, dict[str, Any]] = field(default_factory=dict)  # inline cases by id, as the test gave them
    warnings: list[str] = field(default_factory=list)  # the plugins' listeners' (one that raised), as `run` says them
    listeners: _Batches = field(init=False)  # the plugins' listeners, as `run` tells them (this process's runs)

    def __post_init__(self) -> None:
        self.listeners = _Batches(*plugin_listeners(self.warnings.append))

    @property
    def suite(self) -> Suite:
        return self.plan.suite

    @property
    def cfg(self) -> Settings:
        return self.plan.cfg

    @property
    def run_id(self) -> str:
        return self.plan.run_id

    @property
    def by_id(self) -> dict[str, Case]:
        return {case["id"]: case for case in self.suite.cases}

    def skip_of(self, case: Case) -> str | None:
        return skip_reason(case, os.environ, not self.cfg[NO_JUDGE])

    def add_inline(self, case: Case, raw: dict[str, Any]) -> str:
        """Add an inline case (checked) to this book's suite; its id, made unique in the session."""
        taken = self.by_id
        case_id, n = case["id"], 1
        while case_id in taken:
            n += 1
            case_id = f"{case['id']} ({n})"
        case["id"] = case_id
        self.suite.cases.append(case)
        self.inline[case_id] = raw
        return case_id

    def play(self, ids: list[str], repeat: int | None = None) -> None:
        """Play every trial of the cases `ids` not played yet, `concurrency` runs at once (`repeat` runs each,
        when given); a Ctrl-C is re-raised once the runs in flight are cancelled and journaled."""
        by_id = self.by_id
        cases = [by_id[i] for i in dict.fromkeys(ids) if i not in self.played and i not in self.problems and i in by_id]
        if not cases:
            return
        cfg = self.cfg if repeat is None else self.cfg.replace(repeat=repeat)
        try:
            agent, simulator, scoring = parts_of(self.plan, cases)
            run_tape = self._tape(cases, cfg)
            journal = self._journal()
        except ConfigError as exc:
            self.problems.update((case["id"], str(exc)) for case in cases)
            return
        self.agent_name = self.agent_name or agent.name
        journal.listeners = self.listeners  # the listeners hear what `run`'s hear: `journaled` too
        self.listeners.played = True
        runner = Runner(self.suite, cases, cfg, agent, scoring, journal, listeners=self.listeners, simulator=simulator,
                        tape=run_tape)
        with Interrupts() as interrupts:
            interrupted = play(runner, interrupts)
        self.spends.append(runner.spent(self.suite.settings.get("pricing")))
        self.models_used |= runner.models_used
        self.stopped_early |= runner.stopped_early
        for slot in runner.slots:
            self.played[slot.case["id"]] = slot
        if journal.failed:
            self.problems.update((case["id"], f"cannot write the journal {journal.path} ({journal.failed})")
                                 for case in cases if not self.played[case["id"]].runs)
        if interrupted:
            self.interrupted = True
            raise KeyboardInterrupt

    def _tape(self, cases: list[Case], cfg: Settings) -> Tape | None:
        """--agent-eval-record: one tape for the session (its header written once); --agent-eval-replay: one
        per batch, whose runs' cassettes are checked as `run` checks them (its counts are the batch's)."""
        if self.part is not None and cfg[RECORD] is not None and cfg[REPLAY] is None:
            if self.tape is None:  # an xdist worker: the controller holds the folder and wrote its header
                from agent_eval.run.worker import tape_of

                self.tape = tape_of(cfg, self.extends)
        elif self.tape is None or cfg[REPLAY] is not None:
            self.tape = open_tape(cfg, self.suite, cases)
        return self.tape

    def open_tape(self) -> Tape | None:
        """The session's recording opened for every case of the file (the xdist controller's)."""
        return self._tape(self.suite.cases, self.cfg)

    def _journal(self) -> Journal:
        if self.journal is None:
            name = self.run_id if self.part is None else f"{self.run_id}.{self.part}"
            self.journal = open_journal(self.cfg, name, journal_header(self.plan), self.run_id)
            check_journal(self.journal, "--agent-eval-output-dir")
        return self.journal

    # ------------------------------------------------------------ the report

    def entry(self, case_id: str, threshold: float | None = None) -> CaseEntry | None:
        """The case entry of a played case (its runs lite), as the report will hold it."""
        played = self.played.get(case_id)
        return None if played is None else slot_entry(played, self.cfg[THRESHOLD] if threshold is None else threshold)

    def run_chunks(self, case_id: str) -> list[bytes]:
        """A played case's runs as the journal wrote them (JSON, traces included; never read back from the
        file, which the agent may have changed), in trial order."""
        played = self.played.get(case_id)
        return [] if played is None or self.journal is None else slot_bytes(played, self.journal)

    def write_report(self) -> tuple[Report | None, list[str]]:
        """Write the JSON report, its page and its history row for every case played; the report (None
        when nothing was played or it could not be written) and the warnings `run` would print."""
        if self.tape is not None:
            self.tape.close()  # --agent-eval-record: the session lets go of the recording's folder
        self.listeners.finished()
        if not self.played or self.journal is None:
            return None, list(self.warnings)
        self.journal.close()
        said = io.StringIO()
        lines = [*self.suite.warnings, *self.warnings]
        if self.cfg[BASELINE] == "last":
            lines += self._pick_baseline()
        _, report = finish_report(_Results(self), self.suite, self.cfg, self.agent_name or self.cfg[AGENT],
                                  self.run_id, self.plan.created_at, self.interrupted, None,
                                  Console(file=said, width=10_000, color_system=None))
        lines += [line for line in said.getvalue().splitlines() if line.strip()]
        written = report is not None and report_path_of(self.cfg[OUTPUT_DIR], self.run_id).is_file()
        return (report if written else None), lines

    def merge_journals(self) -> None:
        """xdist after a Ctrl-C: the journals of workers whose book never reached the controller (it stopped
        listening first), read as `--resume` reads a journal; their case-file runs join this book's journal
        (an inline case's run again with the test). The runs that ended in error are played again."""
        by_id = self.by_id
        for path in sorted(self.cfg[OUTPUT_DIR].glob(f"{self.run_id}.gw*.jsonl")):
            data = path.read_bytes()
            for case_id, trial, run, (start, length) in scan_runs(path):
                case = by_id.get(case_id)
                if case is not None and case_id not in self.inline and run["status"] != "error":
                    self._take(self.played.setdefault(case_id, CaseSlot(case, [])), trial, data[start:start + length])
            path.unlink(missing_ok=True)

    def _take(self, slot: CaseSlot, trial: int, chunk: bytes) -> None:
        """A run an xdist worker played (its JSON) written into this book's journal as `trial` of `slot`'s case;
        a trial already held keeps its run."""
        position = self._journal().append_json(slot.case["id"], trial, chunk)
        if position is not None and trial not in slot.runs:
            slot.offsets[trial], slot.runs[trial] = position, lite_run(orjson.loads(chunk), slot.case)

    def add_unplayed(self, ids: set[str]) -> None:
        """xdist, after -x or Ctrl-C: the selected cases no worker played are `not_run` (skipped ones skipped),
        as the run scheduler leaves them without xdist; `--resume` plays them."""
        unplayed = [c for c in self.suite.cases if c["id"] in ids and c["id"] not in self.played
                    and c["id"] not in self.problems]
        if unplayed:
            self._journal()
            self.played.update((c["id"], CaseSlot(c, [], self.skip_of(c))) for c in unplayed)

    def _pick_baseline(self) -> list[str]:
        """--agent-eval-baseline last: the newest earlier run that can be gated against, as `run` picks it (a
        warning when there is none; an error line, the session failed, when none of the earlier ones qualifies)."""
        try:
            self.plan.cfg, warning = pick_baseline(self.cfg, self.agent_name or self.cfg[AGENT], list(self.played),
                                                   self.plan.created_at, self.run_id)
        except ConfigError as exc:  # `run` would stop before running: here the session fails, its report ungated
            self.plan.cfg = self.cfg.replace(baseline=None)
            self.gate_failed = True
            return [f"error: {as_options(str(exc))}"]
        return [warning] if warning else []

    # ------------------------------------------------------------ xdist

    def part_payload(self) -> bytes:
        """What a worker sends the controller: its played cases, their runs' JSON as its journal wrote them
        (the file is never read back: the agent may have changed it), what it spent."""
        if self.journal is not None:
            self.journal.close()
        self.listeners.finished()
        return orjson.dumps({
            "cases_file": str(self.cfg.cases_file), "journal": str(self.journal.path) if self.journal else None,
            "played": [{"id": p.case["id"], "skip": p.skip, "inline": self.inline.get(p.case["id"]),
                        "runs_json": {str(t): chunk.decode() for t, chunk in zip(sorted(p.offsets),
                                                                                 self.run_chunks(p.case["id"]),
                                                                                 strict=True)}}
                       for p in self.played.values()],
            "spends": self.spends, "models_used": sorted(self.models_used), "agent_name": self.agent_name,
            "stopped_early": self.stopped_early, "interrupted": self.interrupted, "warnings": self.warnings,
        }, option=orjson.OPT_NON_STR_KEYS)

    def merge_parts(self, payloads: list[bytes]) -> None:
        """Take the workers' books into this one: their runs written into this book's journal, in case order."""
        parts = [orjson.loads(p) for p in payloads]
        found: dict[str, dict[str, Any]] = {}  # case id -> what a worker played of it
        for part in parts:
            self.worker_spends.append(part["spends"])
            self.models_used |= set(part["models_used"])
            self.agent_name = self.agent_name or part["agent_name"]
            self.stopped_early |= part["stopped_early"]
            self.interrupted |= part["interrupted"]
            self.warnings += part["warnings"]
            for played in part["played"]:
                if played["inline"] is not None:  # an inline case: its id made unique in the session
                    case = load_inline_case(self.suite, played["inline"], "inline case")
                    played["id"] = self.add_inline(case, dict(played["inline"]))
                found[played["id"]] = played
        if not found:
            return
        self._journal()
        for case in [c for c in self.suite.cases if c["id"] in found]:
            slot = self.played[case["id"]] = CaseSlot(case, [], found[case["id"]]["skip"])
            for trial_text, run_json in sorted(found[case["id"]]["runs_json"].items(), key=lambda kv: int(kv[0])):
                self._take(slot, int(trial_text), run_json.encode())
        for part in parts:
            if part["journal"]:
                Path(part["journal"]).unlink(missing_ok=True)


class _Batches(events.Listeners):
    """A book's plugins' listeners (each through the guard): told every event of the runs this process plays, in
    every batch, and that the command finished once, when the process is done with the case file (`finished`)."""

    played = False

    def command_finished(self) -> None:
        """One batch is over (core.play says so after each), not the session's run of the case file."""

    def finished(self) -> None:
        if self.played:
            self.played = False
            super().command_finished()


class _Results:
    """A book as `finish_report` reads the results of a run (conclude.Results)."""

    pool: WorkerPool | None = None

    def __init__(self, book: Book) -> None:
        self.book = book
        self.stopped_early = book.stopped_early
        self.models_used = book.models_used
        self.slots = [book.played[c["id"]] for c in book.suite.cases if c["id"] in book.played]
        assert book.journal is not None
        self.journal = book.journal

    def case_entries(self) -> list[CaseEntry]:
        return [slot_entry(slot, self.book.cfg[THRESHOLD]) for slot in self.slots]

    def spent(self, pricing: dict[str, Any] | None) -> dict[str, Any]:
        processes = [self.book.spends, *self.book.worker_spends]
        spends = [s for batches in processes for s in batches]
        # One process's batches ran one after the other; xdist's workers ran at once.
        provider = merge_summaries([merge_summaries([s.get("provider") for s in batches], concurrent=False)
                                    for batches in processes if batches], concurrent=True)
        spent = {"judge": add_summaries([s["judge"] for s in spends]),
                 "user_sim": add_summaries([s["user_sim"] for s in spends]), "provider": provider}
        replays = [s["replay"] for s in spends if "replay" in s]
        if replays:
            spent["replay"] = add_summaries(replays)
        return spent

    def run_bytes(self) -> Iterator[list[bytes]]:
        return (slot_bytes(slot, self.journal) for slot in self.slots)


def open_book(flags: Flags, run_id: str, created_at: str, part: str | None = None, cwd: Path | None = None) -> Book:
    """The core's plan of a case file (loaded, checked, its settings resolved; every case kept: pytest selects
    them); a CaseFileError or ConfigError as `run` has. A relative `--agent-eval-agent` SPEC, and a relative
    output folder, start from `cwd` (where pytest started)."""
    start = cwd or Path.cwd()

    def anchored(cfg: Settings) -> Settings:  # resolved once: a conftest's chdir later moves none of the files
        return cfg if cfg[OUTPUT_DIR].is_absolute() else cfg.replace(output_dir=start / cfg[OUTPUT_DIR])

    prepared = prepare(flags, anchored)
    suite = prepared.suite
    agent_dir = suite.base_dir if flags.text("agent") is None else start
    digest = hashlib.sha256(suite.path.read_bytes()).hexdigest()
    return Book(Plan(suite, prepared.cfg, suite.cases, agent_dir, digest, run_id, created_at), part)


def load_inline_case(suite: Suite, raw: Mapping[str, Any], where: str) -> Case:
    """`raw` checked as a case of `suite` (an unknown field is an error here, not a warning)."""
    __tracebackhide__ = True
    col = Collector(Path(where))
    if not isinstance(raw, Mapping):
        raise CaseFileError([Problem(where, None, None, "an inline case is a dict in the case-file format")])
    scorer_problems: dict[tuple[str, str], list[str]] = {}
    before = {name: list(ids) for name, ids in suite.unused_fields.items()}
    case = load_case(suite, dict(raw), 0, col, scorer_problems, case_fields())
    case_id = str(raw.get("id"))
    for (field_name, message), _ in scorer_problems.items():
        col.add(case_id, field_name, message)
    for name, ids in suite.unused_fields.items():
        if len(ids) > len(before.get(name, ())):
            col.add(case_id, name, "unknown field; no check or scorer reads it (see `agent-eval validate`)")
    suite.unused_fields = before
    if col.problems or case is None:
        raise CaseFileError(col.problems or [Problem(where, case_id, None, "not a usable case")])
    return case
