"""What a command that re-judges someone's report (`rescore`, `label`, `calibrate`) takes from it, and what
it never does: the case file is --cases (else the report's `cases_file`, said aloud before it is loaded,
since its tools and scorers run), and the judge is resolved exactly as `run` resolves it, never from the
report, so a report cannot choose where transcripts and keys are sent."""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_eval.errors import ConfigError
from agent_eval.run.config import resolve_agent_llm, resolve_judge

if TYPE_CHECKING:
    from agent_eval.suite.cases import Suite


def report_cases_file(report: Mapping[str, Any], report_path: Path, cases_flag: Path | None,
                      say: Callable[[str], None]) -> Path:
    """--cases when given; else the report's cases_file, announced (before anything loads it) with how to
    choose another."""
    if cases_flag is not None:
        return Path(cases_flag)
    if not report.get("cases_file"):
        raise ConfigError(f"{report_path} names no cases_file; pass --cases with the case file to score it against.")
    path = Path(str(report["cases_file"]))
    say(f"cases: {path} (the cases_file of {report_path}; its tools and scorers will run; pass --cases to "
        "choose the case file)")
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
