"""`run --resume RUN_ID`: reload a run's stored settings and its journal of finished runs."""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agent_eval.records import RunRecord
from agent_eval.flags import DEFAULTS, Flags, Setting, all_settings
from agent_eval.flags.rows import BUILT_IN_KEYS, NO_JUDGE
from agent_eval.run.config import Settings
from agent_eval.errors import ConfigError
from agent_eval.redaction import redact_url, redact_urls
from agent_eval.run.journal import Journal, scan_runs


def rows_of_run() -> list[Setting[Any]]:
    """The rows of `run`: each one's `resume` rule says what a resumed run takes from the stored run."""
    return [row for row in all_settings() if "run" in row.commands]


# The rows whose stored value is read and given back by code of their own (a path, a spec with its folder,
# a URL whose secret is never stored, the simulator's two flags, the --lf selection).
_SPECIAL = frozenset({"cases", "agent", "base_url", "user", "user_model", "last_failed"})


def resolve_spec(spec: str | None, base_dir: Path) -> str | None:
    """A SPEC with its file path made absolute (`module:function` SPECs are returned as they are)."""
    if not spec:
        return spec
    from agent_eval.run.agents import kind_of

    return kind_of(spec).absolute(spec, base_dir)


@dataclass
class Stored:
    """What the journal's first line says about the run being resumed."""

    run_id: str
    created_at: str
    path: Path
    settings: dict[str, Any]
    cases_file: str
    agent_dir: Path | None
    cases_sha256: str | None = None  # the case file's digest when the run started

    def stored_value(self, row: Setting[Any]) -> Any:
        """The stored counterpart of a command-line flag, as the flag would spell it."""
        s = self.settings
        if row.name == "cases":
            return self.cases_file
        if row.name == "agent":
            return redact_urls(resolve_spec(s.get("agent"), self.agent_dir or Path.cwd()))
        if row.name == "user_model":
            return s.get("user")
        if row.negated:
            return not s.get(row.key, True)
        return list(s.get(row.key) or []) if row.repeatable else s.get(row.key)

    def flag_value(self, row: Setting[Any]) -> Any:
        """The stored value of a row that has no code of its own, as its flag gives it (None: not stored)."""
        value = self.stored_value(row)
        if value is None or row.negated or row.repeatable:
            return tuple(value) if row.repeatable else value
        return Path(value) if row.type is Path else value


def _given_value(row: Setting[Any], value: Any) -> Any:
    if row.repeatable:
        return list(value or [])
    if row.name == "agent":
        return redact_urls(resolve_spec(value, Path.cwd()))  # as stored: a URL's secret is never stored
    return value


def _is_unset(value: Any) -> bool:
    """A flag left off: None, or the False or () that typer passes for a switch or a repeatable flag."""
    return value is None or value is False or value == ()


def full_agent(stored: str | None, given: str | None) -> str | None:
    """The stored agent spec, or the one given again with --agent when a URL in it lost its secret."""
    if not stored or stored == redact_urls(stored) and "***" not in stored:
        return stored
    if given and redact_urls(given) == stored:
        return given
    raise ConfigError(f"the run's agent {stored!r} holds a URL whose secret is never stored; give the whole "
                      "--agent again to resume it.")


def full_url(stored: str | None, where: str, *candidates: str | None) -> str | None:
    """The stored URL with the secret that was redacted from it given back by a flag or the environment: itself
    when nothing was redacted, else the first candidate (a flag or an environment variable) that redacts to it."""
    if "***" not in (stored or ""):
        return stored
    url = next((c for c in candidates if c and redact_url(c) == stored), None)
    if url is None:
        raise ConfigError(f"the run used the endpoint {stored}, whose secret is never stored; give the full URL "
                          f"again with {where} to resume it.")
    return url


def _differs(row: Setting[Any], given: Any, stored: Any) -> bool:
    if row.type is Path and not row.repeatable:
        return stored is None or Path(given).resolve() != Path(stored).resolve()
    if row.name == "base_url":
        return redact_url(given) != stored
    if isinstance(given, (int, float)) and not isinstance(given, bool) and isinstance(stored, (int, float)):
        return float(given) != float(stored)
    return given != stored


@dataclass
class Resume:
    """A run being resumed: the flags to run it with, and how to bring its journal back."""

    stored: Stored
    flags: Flags
    journal: Journal  # opened, and locked, for this process

    @property
    def run_id(self) -> str:
        return self.stored.run_id

    @property
    def created_at(self) -> str:
        return self.stored.created_at

    def apply(self, cfg: Settings) -> Settings:
        """Make the stored settings win over the environment and the suite block (they change results): a
        "kept" row's stored value (held by the resumed flags), and a "renewed" row's unless given again."""
        s = self.stored.settings
        from_command_line = set()
        values: dict[str, Any] = {}
        for row in rows_of_run():
            renewed = row.rule == "renewed" and row.key in s and not self.flags.given(row.name)
            if row.rule == "command" or row.rule == "renewed" and self.flags.given(row.name):
                from_command_line.add(row.key)
            elif (row.rule == "kept" or renewed) and row.name not in _SPECIAL and row.name != "judge_model":
                value = self.flags.value(row.name)
                if value is not None or row.default is None:
                    values[row.name] = tuple(value) if row.repeatable else value
        values["base_url"] = self.flags.text("base_url")  # the stored one, with the secret it had given back
        judge_base_url = cfg.judge_base_url
        if not values.get(NO_JUDGE.name, cfg[NO_JUDGE]):
            values["judge_model"] = s.get("judge_model")
            judge_base_url = full_url(s.get("judge_base_url"), "AGENT_EVAL_JUDGE_BASE_URL",
                                      os.environ.get("AGENT_EVAL_JUDGE_BASE_URL"), values["base_url"])
        stored_sources = s.get("sources")
        sources = {k: v for k, v in stored_sources.items() if k not in from_command_line} \
            if isinstance(stored_sources, dict) else {}
        return cfg.replace(sources, judge_base_url=judge_base_url, **values)

    def restore(self, restore_run: Callable[[str, int, RunRecord, tuple[int, int]], None]) -> None:
        """Feed every journaled run, in file order, to the runner (the latest record of a trial wins)."""
        for case_id, trial, run, position in scan_runs(self.stored.path):
            restore_run(case_id, trial, run, position)


def read_stored(run_id: str, output_dir: Path) -> Stored:
    """The journal header of run_id; a missing or unreadable journal is a ConfigError (exit 2)."""
    from agent_eval.report.files import journal_path_of
    from agent_eval.report.model import is_run_id

    if not is_run_id(run_id):
        raise ConfigError(f"--resume {run_id!r} is not a run id; a run id has the form YYYYmmdd-HHMMSS-<6 hex> "
                          "(such as 20260101-120000-a1b2c3), as in the report's file name.")
    path = journal_path_of(output_dir, run_id)
    if not path.is_file():
        raise ConfigError(f"cannot resume run {run_id!r}: its journal {path} does not exist; check the run "
                          f"id, and pass the --output-dir that the run used.")
    with open(path, "rb") as f:
        first = f.readline()
    try:
        header = orjson.loads(first)
        settings, cases_file = header["settings"], header["cases_file"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        raise ConfigError(f"cannot resume run {run_id!r}: the first line of {path} is not a run header; "
                          f"the file is damaged or not an agent-eval journal.") from None
    stored_id = header.get("run_id") or run_id
    if not is_run_id(stored_id):
        raise ConfigError(f"cannot resume run {run_id!r}: the journal {path} names the run {str(stored_id)[:80]!r}, "
                          "which is not a run id (YYYYmmdd-HHMMSS-<6 hex>); the journal is damaged or forged, and "
                          "nothing is written from it.")
    agent_dir = header.get("agent_dir")
    return Stored(run_id=stored_id, created_at=header.get("created_at") or "",
                  path=path, settings=settings, cases_file=cases_file,
                  agent_dir=Path(agent_dir) if agent_dir else None, cases_sha256=header.get("cases_sha256"))


def open_resume(flags: Flags) -> Resume:
    """Check the command line against the stored run and derive the resumed run's flags."""
    output_dir = flags.path("output_dir") or DEFAULTS.output_dir
    stored = read_stored(str(flags.text("resume")), output_dir)
    if stored.settings.get("scored_from"):
        raise ConfigError(f"run {stored.run_id} scored recorded traces (agent-eval score); it has nothing to "
                          "resume. Score the traces again instead.")
    rows = rows_of_run()
    _refuse_missing_plugin_settings(stored)
    for row in sorted((row for row in rows if row.rule == "kept" and flags.given(row.name)), key=lambda r: r.name):
        value = flags.value(row.name)
        if value is None:
            continue
        stored_value = stored.stored_value(row)
        if _differs(row, _given_value(row, value), stored_value):
            name = row.flags[0] if row.flags else row.name
            given, used = ((name, "ran without it") if row.type is bool  # a switch: typed, and the run was without
                           else (f"{name} {_show_flag(value)}", f"used {_show(stored_value)}"))
            raise ConfigError(f"{given} conflicts with run {stored.run_id}, which {used}; a resumed run keeps its "
                              f"settings: drop {name}, or start a new run without --resume.")
    # The lock comes before anything touches the file: a second --resume of a run stops here.
    journal = Journal(stored.path, run_id=stored.run_id, drop_torn=True)
    s = stored.settings
    values: dict[str, Any] = {row.name: stored.flag_value(row) for row in rows if row.name not in _SPECIAL and (
        row.rule == "kept" or row.rule == "renewed" and _is_unset(flags.value(row.name)))}
    user = s.get("user")  # the simulator: a SPEC (file.py:fn) or a model name
    resumed = flags.replace(
        **values, cases=Path(stored.cases_file), agent=full_agent(s.get("agent"), flags.text("agent")),
        base_url=full_url(s.get("base_url"), "--base-url", flags.text("base_url"), os.environ.get("OPENAI_BASE_URL")),
        last_failed=False, last_failed_ids=tuple(s["last_failed"]) if s.get("last_failed") is not None else None,
        user=user if user and ":" in user else flags.text("user"),
        user_model=user if user and ":" not in user else flags.text("user_model"),
        agent_dir=stored.agent_dir if stored.agent_dir is not None else flags.path("agent_dir"))
    return Resume(stored, resumed, journal)


def _refuse_missing_plugin_settings(stored: Stored) -> None:
    """A run played with a plugin's setting is resumed with that plugin loaded: without it, the resumed report
    would silently lose the setting (and the plugin's metrics)."""
    sources = stored.settings.get("sources")
    known = {row.key for row in all_settings()} | BUILT_IN_KEYS
    missing = sorted(set(sources) - known) if isinstance(sources, dict) else []
    if missing:
        many = "s" if len(missing) > 1 else ""
        raise ConfigError(f"run {stored.run_id} was played with the setting{many} {', '.join(missing)} of a plugin "
                          f"that is not loaded now; load it as the run did (its installed package, or "
                          f"AGENT_EVAL_PLUGINS) and resume again.")


def _show_flag(value: Any) -> str:
    """A flag's value as the command line spelled it (a repeated flag as its values, space-separated), a URL
    with its secret replaced by ***."""
    return str(redact_urls(" ".join(map(str, value)) if isinstance(value, tuple) else str(value)))


def _show(value: Any) -> str:
    if value is None:
        return "no value"
    if isinstance(value, (list, tuple)):
        return str(redact_urls(" ".join(map(str, value)))) or "no value"
    return str(redact_urls(str(value)))
