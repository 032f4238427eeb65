"""What a command that re-judges someone's report (`rescore`, `label`, `calibrate`) takes from it, and what
it never does: the case file is --cases (else the report's `cases_file`, said aloud before it is loaded,
since its tools and scorers run), and the judge is resolved exactly as `run` resolves it, never from the
report, so a report cannot choose where transcripts and keys are sent."""
from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_eval.errors import ConfigError
from agent_eval.run.config import resolve_agent_llm, resolve_judge

if TYPE_CHECKING:
    from agent_eval.suite.cases import Suite


CASE_FILE_CAP = 256 * 2**20
"""The largest case file a report may name (a case file is JSON text; 256 MiB holds millions of cases)."""
_SYSTEM_TREES = ("/proc", "/sys", "/dev")


def checked_case_file(path: Path, report_path: Path) -> Path:
    """`path`, named by the report's cases_file, when it is a regular file of at most CASE_FILE_CAP bytes
    outside /proc, /sys and /dev (after links); else ConfigError. A report is data: a device, FIFO or system
    file it names would hang or flood the command that reads it."""
    fix = "pass --cases with the case file the report was made from"
    real = Path(os.path.realpath(path))
    if any(real == Path(tree) or Path(tree) in real.parents for tree in _SYSTEM_TREES):
        raise ConfigError(f"{report_path}: its cases_file {str(path)!r} is a system file ({real}), not a case "
                          f"file; {fix}.")
    try:
        info = os.stat(real)  # stat never opens the file, so a FIFO cannot block here
    except OSError as exc:
        raise ConfigError(f"{report_path}: cannot read its cases_file {str(path)!r} ({exc.strerror or exc}); "
                          f"{fix}.") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode) else \
            "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else "not a regular file"
        raise ConfigError(f"{report_path}: its cases_file {str(path)!r} is {kind}, not a case file; {fix}.")
    if info.st_size > CASE_FILE_CAP:
        raise ConfigError(f"{report_path}: its cases_file {str(path)!r} holds {info.st_size:,} bytes, more than "
                          f"the {CASE_FILE_CAP:,} a case file may; {fix}.")
    return path


def report_cases_file(report: Mapping[str, Any], report_path: Path, cases_flag: Path | None,
                      say: Callable[[str], None], runs_code: bool = True) -> Path:
    """--cases when given; else the report's cases_file, checked (checked_case_file) and announced before
    anything loads it, with how to choose another."""
    if cases_flag is not None:
        return Path(cases_flag)
    stored = report.get("cases_file")
    if not isinstance(stored, str) or not stored:
        raise ConfigError(f"{report_path} names no cases_file; pass --cases with the case file to score it against.")
    path = checked_case_file(Path(stored), report_path)
    runs = "; its tools and scorers will run" if runs_code else ""
    say(f"cases: {path} (the cases_file of {report_path}{runs}; pass --cases to choose the case file)")
    return path


def judge_for_report(report: Mapping[str, Any], suite: Suite, judge_model: str | None, needed: bool,
                     environ: Mapping[str, str] | None = None) -> tuple[str | None, str | None, str | None]:
    """The judge's (model, base_url, api_key): --judge-model, the environment and the case file's suite, as
    `run` resolves them. When the judge is needed and resolves to the provider's default endpoint while the
    report was judged elsewhere (a local server), ConfigError: transcripts are not sent somewhere new."""
    env = os.environ if environ is None else environ
    block = suite.settings
    model, base_url, api_key = resolve_agent_llm(block, env)
    judge = resolve_judge(judge_model, block.get("judge") or {}, env, model, base_url, api_key)
    settings = report.get("settings")
    stored = settings.get("judge_base_url") if isinstance(settings, dict) else None
    if needed and judge[1] is None and isinstance(stored, str) and stored:
        raise ConfigError(f"the report was judged at {stored}, but here the judge resolves to the provider's "
                          "default endpoint (neither AGENT_EVAL_JUDGE_BASE_URL nor OPENAI_BASE_URL is set); a "
                          "report never chooses where transcripts are sent, so set AGENT_EVAL_JUDGE_BASE_URL to the "
                          "judge you mean, or pass --no-judge.")
    return judge
