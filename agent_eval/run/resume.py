"""`run --resume RUN_ID`: reload a run's stored settings and its journal of finished runs."""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from agent_eval.records import RunRecord
from agent_eval.flags import DEFAULTS, SETTINGS, Flags
from agent_eval.run.config import RunConfig
from agent_eval.errors import ConfigError
from agent_eval.llm import redact_url, restore_url
from agent_eval.redaction import redact_urls
from agent_eval.run.journal import Journal, scan_runs

# Flags that never change results: they always come from the command line of the resumed run.
FROM_COMMAND_LINE = {"concurrency", "quiet", "output_dir", "resume", "workers", "ray", "ray_address",
                     "ray_runtime_env", "rate_limit", "judge_rate_limit", "retry_budget", "max_cost"}


def _same_path(given: Any, stored: Any) -> bool:
    return stored is not None and Path(given).resolve() == Path(stored).resolve()


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

    def stored_value(self, flag: str) -> Any:
        """The stored counterpart of a command-line flag, as the flag would spell it."""
        s = self.settings
        if flag == "cases":
            return self.cases_file
        if flag == "no_judge":
            return not s.get("judge", True)
        if flag == "filter":
            return list(s.get("filter") or [])
        if flag == "agent":
            return redact_urls(resolve_spec(s.get("agent"), self.agent_dir or Path.cwd()))
        if flag == "user_model":
            return s.get("user")
        return s.get(flag)


def _given_value(flag: str, value: Any) -> Any:
    if flag == "filter":
        return list(value or [])
    if flag == "agent":
        return redact_urls(resolve_spec(value, Path.cwd()))  # as stored: a URL's secret is never stored
    return value


def full_agent(stored: str | None, given: str | None) -> str | None:
    """The stored agent spec, or the one given again with --agent when a URL in it lost its secret."""
    if not stored or stored == redact_urls(stored) and "***" not in stored:
        return stored
    if given and redact_urls(given) == stored:
        return given
    raise ConfigError(f"the run's agent {stored!r} holds a URL whose secret is never stored; give the whole "
                      "--agent again to resume it.")


def full_url(stored: str | None, where: str, *candidates: str | None) -> str | None:
    """The stored URL with the secret that was redacted from it given back by a flag or the environment."""
    url = restore_url(stored, *candidates)
    if stored and url is None:
        raise ConfigError(f"the run used the endpoint {stored}, whose secret is never stored; give the full URL "
                          f"again with {where} to resume it.")
    return url


def _differs(flag: str, given: Any, stored: Any) -> bool:
    if flag == "cases":
        return not _same_path(given, stored)
    if flag == "base_url":
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

    def apply(self, cfg: RunConfig) -> None:
        """Make the stored settings win over the environment and the suite block (they change results)."""
        s = self.stored.settings
        cfg.model = s.get("model")
        cfg.base_url = self.flags.base_url  # the stored one, with the secret it had given back
        cfg.timeout = s.get("timeout")
        if cfg.judge:
            cfg.judge_model = s.get("judge_model")
            cfg.judge_base_url = full_url(s.get("judge_base_url"), "AGENT_EVAL_JUDGE_BASE_URL",
                                          os.environ.get("AGENT_EVAL_JUDGE_BASE_URL"), cfg.base_url)
        stored_sources = s.get("sources")
        if isinstance(stored_sources, dict):
            cfg.sources.update({k: v for k, v in stored_sources.items() if k not in FROM_COMMAND_LINE})
        for setting in SETTINGS:  # a plugin's setting: the run's stored value, unless its flag is given again
            if setting.resume and setting.name in cfg.extra and setting.name in s \
                    and not self.flags.given(setting.name):
                cfg.extra[setting.name] = s[setting.name]

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
    output_dir = flags.output_dir or DEFAULTS.output_dir
    stored = read_stored(str(flags.resume), output_dir)
    if stored.settings.get("scored_from"):
        raise ConfigError(f"run {stored.run_id} scored recorded traces (agent-eval score); it has nothing to "
                          "resume. Score the traces again instead.")
    for flag in sorted(flags.explicit):
        value = getattr(flags, flag, None)
        if flag in FROM_COMMAND_LINE or value is None:
            continue
        stored_value = stored.stored_value(flag)
        given = _given_value(flag, value)
        if flag in {*_RESULT_FLAGS, "cases"} and _differs(flag, given, stored_value):
            name = "--" + flag.replace("_", "-")
            raise ConfigError(f"{name} {_show_flag(value)} conflicts with run {stored.run_id}, which used "
                              f"{_show(stored_value)}; a resumed run keeps its settings: drop {name}, or "
                              f"start a new run without --resume.")
    # The lock comes before anything touches the file: a second --resume of a run stops here.
    journal = Journal(stored.path, run_id=stored.run_id, drop_torn=True)
    s = stored.settings
    user = s.get("user")  # the simulator: a SPEC (file.py:fn) or a model name
    resumed = replace(
        flags, cases=Path(stored.cases_file), filter=tuple(s.get("filter") or ()), repeat=s.get("repeat"),
        threshold=s.get("threshold"), no_judge=not s.get("judge", True), agent=full_agent(s.get("agent"), flags.agent),
        model=s.get("model"), max_steps=s.get("max_steps"),
        base_url=full_url(s.get("base_url"), "--base-url", flags.base_url, os.environ.get("OPENAI_BASE_URL")),
        timeout=s.get("timeout"), no_cache=bool(s.get("no_cache")), judge_model=s.get("judge_model"),
        # a timeout makes errors, which a resume runs again: a new one may be given
        judge_timeout=flags.judge_timeout or s.get("judge_timeout"),
        last_failed=False, last_failed_ids=tuple(s["last_failed"]) if s.get("last_failed") is not None else None,
        user=user if user and ":" in user else flags.user,
        user_model=user if user and ":" not in user else flags.user_model,
        agent_dir=stored.agent_dir if stored.agent_dir is not None else flags.agent_dir,
        # the same budget, unless a new one is given (to finish a run stopped at its budget)
        max_cost=flags.max_cost if flags.max_cost is not None else s.get("max_cost"),
        # a recording goes on recording, a replay goes on replaying (docs/ci-without-a-key.md)
        record=flags.record or (Path(s["record"]) if s.get("record") else None),
        replay=flags.replay or (Path(s["replay"]) if s.get("replay") else None),
        replay_miss=flags.replay_miss or (s.get("replay_miss") if s.get("replay") else None))
    return Resume(stored, resumed, journal)


# The flags that change results, compared with the stored settings when given explicitly.
_RESULT_FLAGS = {"filter", "repeat", "threshold", "no_judge", "agent", "model", "base_url", "judge_model",
                 "no_cache", "max_steps", "timeout", "user", "user_model"}


def _show_flag(value: Any) -> str:
    """A flag's value as the command line spelled it (a repeated flag as its values, space-separated)."""
    return " ".join(map(str, value)) if isinstance(value, tuple) else str(value)


def _show(value: Any) -> str:
    if value is None:
        return "no value"
    if isinstance(value, (list, tuple)):
        return " ".join(map(str, value)) or "no value"
    return str(value)
