"""Resolve run settings: each row of the settings table (`flags/rows.py`) from its flag, then its environment
variable, then its suite key, then its default, recording where it came from in `sources`."""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.llm import PLACEHOLDER_KEY
from agent_eval.flags import BUILT_IN_SETTINGS, DEFAULTS, Flags, Setting, all_settings, setting
from agent_eval.provider.throttle import RateLimit, parse_rate_limit
from agent_eval.run.agents.base import BUILT_IN
from agent_eval.run.ray_env import parse_runtime_env, require_ray
from agent_eval.run.scenario import UserSettings
from agent_eval.suite.cases import Suite


@dataclass
class RunConfig:
    """Every setting of one `agent-eval run`, resolved. `api_key` is never written anywhere."""

    cases_file: Path
    filter: list[str] = field(default_factory=list)
    repeat: int = DEFAULTS.repeat
    threshold: float = DEFAULTS.threshold
    judge: bool = True
    agent: str = BUILT_IN
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    judge_model: str | None = None
    judge_base_url: str | None = None
    judge_api_key: str | None = None
    no_cache: bool = False
    concurrency: int = DEFAULTS.concurrency
    max_steps: int = DEFAULTS.max_steps
    timeout: float | None = None
    output_dir: Path = DEFAULTS.output_dir
    quiet: bool = False
    html: bool = True
    user: str | None = None
    user_sim: UserSettings = field(default_factory=UserSettings)  # holds the simulator's key: never written
    baseline: str | None = None  # a report path, or "last"
    junit: Path | None = None
    markdown: Path | None = None
    otel: Path | None = None  # --otel FILE
    otlp_endpoint: str | None = None  # --otlp-endpoint URL
    gate: list[str] = field(default_factory=list)  # --gate METRIC[=MAX_DROP], against the baseline
    source: dict[str, str] | None = None  # `score`: the recorded traces scored, {"traces", "format"}
    judge_timeout: float = DEFAULTS.judge_timeout
    sources: dict[str, str] = field(default_factory=dict)  # setting -> flag | env | suite | default | agent
    verbose: bool = False
    exitfirst: bool = False  # -x: stop taking new runs after the first failed run
    last_failed: list[str] | None = None  # the ids --lf selected
    workers: int = 1  # --workers N: 1 plays every run in this process, as always
    ray: bool = False
    ray_address: str | None = None  # None under --ray: a new local Ray instance, started and stopped
    ray_runtime_env: dict[str, Any] | None = None
    rate_limit: RateLimit | None = None  # --rate-limit: the agent's endpoints
    judge_rate_limit: RateLimit | None = None  # --judge-rate-limit: the judge's and the simulator's
    retry_budget: float = DEFAULTS.retry_budget
    max_cost: float | None = None  # --max-cost USD
    record: Path | None = None  # --record DIR
    replay: Path | None = None  # --replay DIR
    replay_miss: str = "error"  # --replay-miss error|live
    recorded: dict[str, Any] | None = None  # --replay: the recording's cassette.json
    extra: dict[str, Any] = field(default_factory=dict)  # the rows with no attribute here (plugins'), by name

    def settings(self) -> dict[str, Any]:
        """The report's `settings` block: no keys, no secrets (URLs are shown with theirs replaced by ***)."""
        from agent_eval.run.settings_block import settings_block

        return settings_block(self)

    def value_of(self, row: Setting[Any]) -> Any:
        """The resolved value of a row: its attribute, or its entry of `extra`."""
        return getattr(self, row.key) if _has_attribute(row) else self.extra.get(row.name)

    def set_value(self, row: Setting[Any], value: Any) -> None:
        if _has_attribute(row):
            setattr(self, row.key, value)
        else:
            self.extra[row.name] = value


_FIELDS = frozenset(f.name for f in dataclasses.fields(RunConfig))


_BUILT_IN_NAMES = frozenset(row.name for row in BUILT_IN_SETTINGS)


def _has_attribute(row: Setting[Any]) -> bool:
    return row.key in _FIELDS and row.name in _BUILT_IN_NAMES


def first(*values: Any) -> Any:
    """The first value that is set (not None, not an empty string)."""
    for value in values:
        if value is not None and value != "":
            return value
    return None


def pick(sources: dict[str, str], name: str, *candidates: tuple[str, Any], default: Any = None) -> Any:
    """The first candidate (source, value) that is set; records its source (or "default") under name."""
    for source, value in candidates:
        if value is not None and value != "":
            sources[name] = source
            return value
    sources[name] = "default"
    return default


@dataclass(frozen=True)
class Given:
    """What a run's settings are resolved from: its flags, the environment and the suite."""

    flags: Flags
    env: Mapping[str, str]
    suite: Suite


def resolve(flags: Flags, suite: Suite, environ: Mapping[str, str] | None = None) -> RunConfig:
    """Build the RunConfig of a run from its flags, the environment and the suite block: every row of `run`
    in the table's order (the order of `sources`), the special ones by their `_RESOLVERS` entry."""
    given = Given(flags, os.environ if environ is None else environ, suite)
    cfg = RunConfig(cases_file=suite.path.resolve())
    for row in all_settings():
        if "run" in row.commands:
            _RESOLVERS.get(row.name, _resolve_row)(cfg, row, given)
    if cfg.gate and not cfg.baseline:
        raise ConfigError("--gate needs --baseline REPORT (or --baseline last): a gate compares this run "
                          "with a baseline run.")
    resolve_tape(cfg, flags, given.env)
    return cfg


def plugin_settings(flags: Flags, suite: Suite, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The plugins' settings (the rows with no RunConfig attribute), by name, each resolved as `run` resolves
    it (flag, environment, suite, default): what a command that writes outputs but runs nothing hands them."""
    given = Given(flags, os.environ if environ is None else environ, suite)
    cfg = RunConfig(cases_file=suite.path.resolve())
    for row in all_settings():
        if row.name not in _BUILT_IN_NAMES and not _has_attribute(row):
            _resolve_row(cfg, row, given)
    return cfg.extra


def resolve_value(row: Setting[Any], cfg: RunConfig, given: Given) -> Any:
    """A row's value: its flag, then its environment variable, then its suite key, then its default, as the
    row's type, in the row's range; the source is recorded in cfg.sources (when the row records one). A value
    of the wrong type, or out of range, is a ConfigError naming where it came from."""
    sources = cfg.sources if row.sourced and row.shown != "hidden" else {}
    flag = given.flags.value(row.name)
    value = pick(sources, row.key, ("flag", None if flag is False or flag == () else flag),
                 ("env", given.env.get(row.env) if row.env else None),
                 ("suite", _suite_value(given.suite.settings, row.suite_key)), default=row.default)
    where = sources.get(row.key, "flag")
    return row.checked(_typed(row, value, where),
                       f"{row.suite_key} in {given.suite.path.resolve()}" if where == "suite" else None)


def _resolve_row(cfg: RunConfig, row: Setting[Any], given: Given) -> None:
    value = resolve_value(row, cfg, given)
    cfg.set_value(row, not value if row.negated else value)


def _suite_value(block: Mapping[str, Any], key: str | None) -> Any:
    """The suite block's value at `key` ("defaults.repeat": the `repeat` of its `defaults`)."""
    value: Any = block if key else None
    for part in (key or "").split(".") if key else ():
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _typed(row: Setting[Any], value: Any, where: str) -> Any:
    if row.repeatable:
        return list(value or ())
    if value is None:
        return None
    if row.type is bool:
        if isinstance(value, bool):
            return value
        if (text := str(value).strip().lower()) in _SWITCH:  # an environment variable's (or suite's) text
            return _SWITCH[text]
    elif isinstance(value, bool) or (row.type is int and isinstance(value, float) and not value.is_integer()):
        pass  # true for a count, or 2.5 runs: refused below (int() took them as 1 and 2)
    elif isinstance(value, row.type):
        return value
    else:
        try:
            return row.type(value)
        except (TypeError, ValueError):
            pass
    given = {"flag": row.flags[0] if row.flags else "its flag", "env": row.env,
             "suite": f"the suite's {row.suite_key}", "default": "its default"}.get(where, where)
    kind = {int: "an integer", float: "a number", bool: "true or false (1, yes, on; 0, no, off)"}.get(
        row.type, f"a {row.type.__name__}")
    raise ConfigError(f"the setting {row.name!r} ({given}) must be {kind}, not {value!r}.")


_SWITCH = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False,
           "": False}


def _base_url(cfg: RunConfig, row: Setting[Any], given: Given) -> None:
    cfg.base_url = resolve_value(row, cfg, given)
    # A local server (Ollama, vLLM, llama.cpp) takes no key: a set base URL without one sends a placeholder.
    cfg.api_key = first(given.env.get("OPENAI_API_KEY"), PLACEHOLDER_KEY if cfg.base_url else None)


def _judge(cfg: RunConfig, row: Setting[Any], given: Given) -> None:
    """The judge falls back to the agent's model, endpoint and key."""
    cfg.judge_model, cfg.judge_base_url, cfg.judge_api_key = resolve_judge(
        given.flags.text("judge_model"), given.suite.settings.get("judge") or {}, given.env, cfg.model, cfg.base_url,
        cfg.api_key, cfg.sources)


def _user(cfg: RunConfig, row: Setting[Any], given: Given) -> None:
    """The user simulator: --user or --user-model, then the environment, then the suite block."""
    from agent_eval.run.scenario import resolve_user

    cfg.user_sim = resolve_user(given.flags, given.suite.settings, given.suite.base_dir, given.env, cfg.base_url,
                                cfg.api_key)
    cfg.user_sim.timeout_s = cfg.judge_timeout
    cfg.user = cfg.user_sim.label
    cfg.sources["user"] = cfg.user_sim.source


def _rate_limit(cfg: RunConfig, row: Setting[Any], given: Given) -> None:
    raw = resolve_value(row, cfg, given)
    where = {"env": row.env, "suite": f"the suite's {row.suite_key} in {cfg.cases_file}"}.get(
        cfg.sources.get(row.key, "flag"), row.flags[0])
    cfg.set_value(row, _parse_rate_limit(raw, str(where)))


def _resolved_elsewhere(cfg: RunConfig, row: Setting[Any], given: Given) -> None:
    """A row another row's resolver reads (--user-model, the --ray flags), or that a command reads itself."""


_RESOLVERS: dict[str, Callable[[RunConfig, Setting[Any], Given], None]] = {
    "cases": _resolved_elsewhere, "resume": _resolved_elsewhere, "last_failed": _resolved_elsewhere,
    "base_url": _base_url, "judge_model": _judge, "user": _user, "user_model": _resolved_elsewhere,
    "workers": lambda cfg, row, given: _resolve_workers(cfg, given.flags), "ray": _resolved_elsewhere,
    "ray_address": _resolved_elsewhere, "ray_runtime_env": _resolved_elsewhere,
    "rate_limit": _rate_limit, "judge_rate_limit": _rate_limit,
}


RECORDING = "recording"  # settings.sources of a value the replayed recording's cassette.json gave


def resolve_tape(cfg: RunConfig, flags: Flags, env: Mapping[str, str]) -> None:
    """--record / --replay DIR and --replay-miss. A replay needs no key (the provider is not asked unless
    --replay-miss live) and follows the recording: the models its cassette.json names (the agent's, the
    judge's, the simulated user's) beat the environment's and the suite's; a flag still beats them
    (`settings.sources` says `recording`)."""
    if flags.path("record") and flags.path("replay"):
        raise ConfigError("--record and --replay both given: record a suite with --record DIR, replay it with "
                          "--replay DIR (--replay-miss live adds what the recording lacks).")
    miss = cfg.replay_miss
    if miss not in ("error", "live"):
        raise ConfigError(f"--replay-miss must be error or live (got {miss!r}).")
    if flags.text("replay_miss") and not flags.path("replay") and not flags.path("record"):
        raise ConfigError("--replay-miss needs --replay DIR (or --record DIR, to extend its recording).")
    if cfg.replay is None:
        return
    from agent_eval.provider.cassette import read_header

    cfg.recorded = read_header(cfg.replay)
    for name in ("model", "judge_model"):
        if cfg.sources.get(name) != "flag" and isinstance(cfg.recorded.get(name), str):
            setattr(cfg, name, cfg.recorded[name])
            cfg.sources[name] = RECORDING
    recorded_user = cfg.recorded.get("user_model")
    if cfg.user_sim.source != "flag" and isinstance(recorded_user, str):  # the recording's LLM user, not the suite's
        user = cfg.user_sim
        user.spec, user.spec_base, user.model, user.source = None, None, recorded_user, RECORDING
        user.base_url = env.get("AGENT_EVAL_USER_BASE_URL") or cfg.base_url
        user.api_key = env.get("AGENT_EVAL_USER_API_KEY") or cfg.api_key
        cfg.user, cfg.sources["user"] = user.label, RECORDING
    if miss == "error":  # nothing is sent: a placeholder key lets a keyless CI job replay
        cfg.api_key = cfg.api_key or PLACEHOLDER_KEY
        cfg.judge_api_key = cfg.judge_api_key or PLACEHOLDER_KEY
        cfg.user_sim.api_key = cfg.user_sim.api_key or PLACEHOLDER_KEY


def _parse_rate_limit(raw: str | None, where: str) -> RateLimit | None:
    if raw is None:
        return None
    try:
        return parse_rate_limit(raw)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}.") from None


def resolve_judge(judge_model: str | None, judge_block: Mapping[str, Any], env: Mapping[str, str],
                  model: str | None, base_url: str | None, api_key: str | None,
                  sources: dict[str, str] | None = None) -> tuple[str | None, str | None, str | None]:
    """The judge's (model, base_url, api_key): --judge-model, the environment, the suite's judge block, then
    the agent's (model, base_url, api_key as resolved); the one rule of `run`, `rescore`, `label`, `calibrate`."""
    src = {} if sources is None else sources
    judge_model = pick(src, "judge_model", ("flag", judge_model), ("env", env.get("AGENT_EVAL_JUDGE_MODEL")),
                       ("suite", judge_block.get("model")), ("agent", model))
    judge_base_url = pick(src, "judge_base_url", ("env", env.get("AGENT_EVAL_JUDGE_BASE_URL")), ("agent", base_url))
    judge_api_key = first(env.get("AGENT_EVAL_JUDGE_API_KEY"), api_key, PLACEHOLDER_KEY if judge_base_url else None)
    return judge_model, judge_base_url, judge_api_key


def resolve_agent_llm(suite_block: Mapping[str, Any], env: Mapping[str, str], model: str | None = None,
                      base_url: str | None = None) -> tuple[str | None, str | None, str | None]:
    """The agent's (model, base_url, api_key) from the flags given, the environment and the suite block."""
    model = first(model, env.get("AGENT_EVAL_MODEL"), suite_block.get("model"))
    base_url = first(base_url, env.get("OPENAI_BASE_URL"))
    return model, base_url, first(env.get("OPENAI_API_KEY"), PLACEHOLDER_KEY if base_url else None)


def _resolve_workers(cfg: RunConfig, flags: Flags) -> None:
    """--workers, --ray, --ray-address, --ray-runtime-env; an address or a runtime env implies --ray."""
    cfg.ray = bool(flags.is_on("ray") or flags.text("ray_address") or flags.text("ray_runtime_env"))
    cfg.ray_address = flags.text("ray_address") or None
    workers = flags.count("workers")
    cfg.workers = int(workers) if workers is not None else (0 if cfg.ray else 1)  # 0: Ray's CPU count
    cfg.sources["workers"] = "flag" if workers is not None else "default"
    cfg.sources["ray"] = "flag" if cfg.ray else "default"
    setting("workers").checked(workers)
    if cfg.ray:
        require_ray()
    raw = flags.text("ray_runtime_env")
    if raw is not None:
        cfg.ray_runtime_env = parse_runtime_env(raw)


def require_llm(cfg: RunConfig, who: str) -> None:
    """Exit-2 check: the openai agent needs a model and a key before anything runs."""
    if not cfg.model:
        raise ConfigError(f"the {who} agent needs a model: pass --model NAME, set AGENT_EVAL_MODEL, or set "
                          f"\"model\" in the suite block of {cfg.cases_file}.")
    if not cfg.api_key:
        raise ConfigError(f"the {who} agent needs an API key: set OPENAI_API_KEY (and OPENAI_BASE_URL or "
                          f"--base-url for a non-OpenAI endpoint), or use a Python agent with --agent file.py:fn.")
