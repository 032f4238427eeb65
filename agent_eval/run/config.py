"""Resolve run settings: the flag, then the environment, then the suite block, then the default."""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_eval.suite.cases import Suite
from agent_eval.errors import ConfigError

DEFAULTS = {"repeat": 1, "threshold": 1.0, "concurrency": 8, "max_steps": 8, "output_dir": "reports"}


@dataclass
class RunConfig:
    """Every setting of one `agent-eval run`, resolved. `api_key` is never written anywhere."""

    cases_file: Path
    filters: list[str] = field(default_factory=list)
    repeat: int = 1
    threshold: float = 1.0
    judge: bool = True
    agent: str = "openai"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    judge_model: str | None = None
    judge_base_url: str | None = None
    judge_api_key: str | None = None
    no_cache: bool = False
    concurrency: int = 8
    max_steps: int = 8
    timeout: float | None = None
    output_dir: Path = Path("reports")
    quiet: bool = False
    html: bool = True
    user: str | None = None
    user_sim: Any = None  # agent_eval.run.scenario.UserSettings (holds the simulator's key: never written)
    baseline: str | None = None  # a report path, or "last"
    junit: Path | None = None
    markdown: Path | None = None
    gates: list[str] = field(default_factory=list)  # --gate METRIC[=MAX_DROP], against the baseline
    source: dict[str, str] | None = None  # `score`: the recorded traces scored, {"traces", "format"}

    def settings(self) -> dict[str, Any]:
        """The report's `settings` block: no keys, no secrets."""
        return {
            "repeat": self.repeat, "threshold": self.threshold, "filter": list(self.filters),
            "judge": self.judge, "judge_model": self.judge_model if self.judge else None,
            "judge_base_url": self.judge_base_url if self.judge else None, "no_cache": self.no_cache,
            "concurrency": self.concurrency, "max_steps": self.max_steps, "timeout": self.timeout,
            "base_url": self.base_url, "user": self.user, "agent": self.agent, "model": self.model,
            **({"scored_from": self.source} if self.source else {}),
        }


def first(*values: Any) -> Any:
    """The first value that is set (not None, not an empty string)."""
    for value in values:
        if value is not None and value != "":
            return value
    return None


def resolve(flags: Mapping[str, Any], suite: Suite, environ: Mapping[str, str] | None = None) -> RunConfig:
    """Build the RunConfig of a run from its flags, the environment and the suite block."""
    env = os.environ if environ is None else environ
    block = suite.settings
    defaults = block.get("defaults") or {}
    judge_block = block.get("judge") or {}
    cfg = RunConfig(cases_file=suite.path.resolve())
    cfg.filters = list(flags.get("filter") or [])
    cfg.repeat = int(first(flags.get("repeat"), defaults.get("repeat"), DEFAULTS["repeat"]))
    cfg.threshold = float(first(flags.get("threshold"), defaults.get("threshold"), DEFAULTS["threshold"]))
    cfg.judge = not flags.get("no_judge", False)
    cfg.agent = first(flags.get("agent"), block.get("agent"), "openai")
    cfg.model = first(flags.get("model"), env.get("AGENT_EVAL_MODEL"), block.get("model"))
    cfg.base_url = first(flags.get("base_url"), env.get("OPENAI_BASE_URL"))
    cfg.api_key = first(env.get("OPENAI_API_KEY"))
    cfg.judge_model = first(flags.get("judge_model"), env.get("AGENT_EVAL_JUDGE_MODEL"), judge_block.get("model"))
    cfg.judge_base_url = first(env.get("AGENT_EVAL_JUDGE_BASE_URL"), cfg.base_url)
    cfg.judge_api_key = first(env.get("AGENT_EVAL_JUDGE_API_KEY"), cfg.api_key)
    cfg.no_cache = bool(flags.get("no_cache", False))
    cfg.concurrency = int(first(flags.get("concurrency"), DEFAULTS["concurrency"]))
    cfg.max_steps = int(first(flags.get("max_steps"), block.get("max_steps"), DEFAULTS["max_steps"]))
    cfg.timeout = flags.get("timeout")
    cfg.output_dir = Path(first(flags.get("output_dir"), DEFAULTS["output_dir"]))
    cfg.quiet = bool(flags.get("quiet", False))
    cfg.html = not flags.get("no_html", False)
    from agent_eval.run.scenario import resolve_user

    cfg.user_sim = resolve_user(flags, block, suite.base_dir, env, cfg.base_url, cfg.api_key)
    cfg.user = cfg.user_sim.label
    cfg.baseline, cfg.junit, cfg.markdown = flags.get("baseline"), flags.get("junit"), flags.get("markdown")
    cfg.gates = list(flags.get("gate") or [])
    _check_ranges(cfg)
    return cfg


def _check_ranges(cfg: RunConfig) -> None:
    if cfg.repeat < 1:
        raise ConfigError(f"--repeat must be at least 1 (got {cfg.repeat}).")
    if not 0.0 <= cfg.threshold <= 1.0:
        raise ConfigError(f"--threshold must be between 0 and 1 (got {cfg.threshold}).")
    if cfg.concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1 (got {cfg.concurrency}).")
    if cfg.max_steps < 1:
        raise ConfigError(f"--max-steps must be at least 1 (got {cfg.max_steps}).")
    if cfg.gates and not cfg.baseline:
        raise ConfigError("--gate compares against a baseline; add --baseline REPORT (or --baseline last).")
    if cfg.timeout is not None and cfg.timeout <= 0:
        raise ConfigError(f"--timeout must be a positive number of seconds (got {cfg.timeout}).")


def require_llm(cfg: RunConfig, who: str) -> None:
    """Exit-2 check: the openai agent needs a model and a key before anything runs."""
    if not cfg.model:
        raise ConfigError(f"the {who} agent needs a model: pass --model NAME, set AGENT_EVAL_MODEL, or set "
                          f"\"model\" in the suite block of {cfg.cases_file}.")
    if not cfg.api_key:
        raise ConfigError(f"the {who} agent needs an API key: set OPENAI_API_KEY (and OPENAI_BASE_URL or "
                          f"--base-url for a non-OpenAI endpoint), or use a Python agent with --agent file.py:fn.")
