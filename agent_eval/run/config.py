"""Resolve run settings: the flag, then the environment, then the suite block, then the default."""
from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_eval.run.budget import check_max_cost
from agent_eval.errors import ConfigError
from agent_eval.llm import PLACEHOLDER_KEY, redact_url
from agent_eval.redaction import redact_urls
from agent_eval.flags import DEFAULTS, MAX_COUNT, SETTINGS, Flags, Setting
from agent_eval.provider.throttle import RateLimit, parse_rate_limit
from agent_eval.run.agents.base import BUILT_IN
from agent_eval.run.scenario import UserSettings
from agent_eval.suite.cases import Suite


@dataclass
class RunConfig:
    """Every setting of one `agent-eval run`, resolved. `api_key` is never written anywhere."""

    cases_file: Path
    filters: list[str] = field(default_factory=list)
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
    gates: list[str] = field(default_factory=list)  # --gate METRIC[=MAX_DROP], against the baseline
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
    extra: dict[str, Any] = field(default_factory=dict)  # the settings plugins added (flags.SETTINGS), by name

    def settings(self) -> dict[str, Any]:
        """The report's `settings` block: no keys, no secrets (URLs are shown with theirs replaced by ***)."""
        return {
            "repeat": self.repeat, "threshold": self.threshold, "filter": list(self.filters),
            "judge": self.judge, "judge_model": self.judge_model if self.judge else None,
            "judge_base_url": redact_url(self.judge_base_url) if self.judge else None, "no_cache": self.no_cache,
            "concurrency": self.concurrency, "max_steps": self.max_steps, "timeout": self.timeout,
            "judge_timeout": self.judge_timeout, "base_url": redact_url(self.base_url), "user": redact_urls(self.user),
            "agent": redact_urls(self.agent), "model": self.model, "sources": dict(self.sources),
            "last_failed": self.last_failed,
            **({"scored_from": self.source} if self.source else {}),
            "workers": self.workers, "ray": redact_urls(self.ray_address or "local") if self.ray else None,
            "otel": str(self.otel) if self.otel else None, "otlp_endpoint": redact_url(self.otlp_endpoint),
            "rate_limit": _shown(self.rate_limit), "judge_rate_limit": _shown(self.judge_rate_limit),
            "retry_budget": self.retry_budget, "max_cost": self.max_cost,
            "record": str(self.record) if self.record else None, "replay": str(self.replay) if self.replay else None,
            **({"replay_miss": self.replay_miss, "replay_recorded_at": (self.recorded or {}).get("created_at"),
                "replay_model": (self.recorded or {}).get("model")} if self.replay else {}),
            **self.extra,
        }


def _shown(limit: RateLimit | None) -> str | None:
    return str(limit) if limit is not None else None


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


def resolve(flags: Flags, suite: Suite, environ: Mapping[str, str] | None = None) -> RunConfig:
    """Build the RunConfig of a run from its flags, the environment and the suite block."""
    env = os.environ if environ is None else environ
    block = suite.settings
    defaults = block.get("defaults") or {}
    judge_block = block.get("judge") or {}
    cfg = RunConfig(cases_file=suite.path.resolve())
    src = cfg.sources
    cfg.filters = list(pick(src, "filter", ("flag", flags.filter or None), default=[]))
    cfg.repeat = int(pick(src, "repeat", ("flag", flags.repeat), ("suite", defaults.get("repeat")),
                          default=DEFAULTS.repeat))
    cfg.threshold = float(pick(src, "threshold", ("flag", flags.threshold),
                               ("suite", defaults.get("threshold")), default=DEFAULTS.threshold))
    cfg.judge = not pick(src, "judge", ("flag", flags.no_judge or None), default=False)
    cfg.agent = pick(src, "agent", ("flag", flags.agent), ("suite", block.get("agent")), default=BUILT_IN)
    cfg.model = pick(src, "model", ("flag", flags.model), ("env", env.get("AGENT_EVAL_MODEL")),
                     ("suite", block.get("model")))
    cfg.base_url = pick(src, "base_url", ("flag", flags.base_url), ("env", env.get("OPENAI_BASE_URL")))
    # A local server (Ollama, vLLM, llama.cpp) takes no key: a set base URL without one sends a placeholder.
    cfg.api_key = first(env.get("OPENAI_API_KEY"), PLACEHOLDER_KEY if cfg.base_url else None)
    cfg.judge_model, cfg.judge_base_url, cfg.judge_api_key = resolve_judge(
        flags.judge_model, judge_block, env, cfg.model, cfg.base_url, cfg.api_key, src)
    cfg.judge_timeout = float(pick(src, "judge_timeout", ("flag", flags.judge_timeout),
                                   default=DEFAULTS.judge_timeout))
    cfg.no_cache = bool(pick(src, "no_cache", ("flag", flags.no_cache or None), default=False))
    cfg.concurrency = int(pick(src, "concurrency", ("flag", flags.concurrency),
                               default=DEFAULTS.concurrency))
    cfg.max_steps = int(pick(src, "max_steps", ("flag", flags.max_steps), ("suite", block.get("max_steps")),
                             default=DEFAULTS.max_steps))
    cfg.timeout = pick(src, "timeout", ("flag", flags.timeout))
    cfg.output_dir = Path(first(flags.output_dir, DEFAULTS.output_dir))
    cfg.quiet = bool(flags.quiet)
    cfg.html = not flags.no_html
    from agent_eval.run.scenario import resolve_user

    cfg.user_sim = resolve_user(flags, block, suite.base_dir, env, cfg.base_url, cfg.api_key)
    cfg.user_sim.timeout_s = cfg.judge_timeout
    cfg.user = cfg.user_sim.label
    src["user"] = cfg.user_sim.source
    cfg.baseline, cfg.junit, cfg.markdown = flags.baseline, flags.junit, flags.markdown
    cfg.otel, cfg.otlp_endpoint = flags.otel, flags.otlp_endpoint
    cfg.gates = list(flags.gate or [])
    if cfg.gates and not cfg.baseline:
        raise ConfigError("--gate needs --baseline REPORT (or --baseline last): a gate compares this run "
                          "with a baseline run.")
    cfg.verbose, cfg.exitfirst = bool(flags.verbose), bool(flags.exitfirst)
    cfg.max_cost = pick(src, "max_cost", ("flag", flags.max_cost))
    check_max_cost(cfg.max_cost)
    resolve_tape(cfg, flags)
    _resolve_workers(cfg, flags)
    _resolve_limits(cfg, flags, env, block)
    _check_ranges(cfg)
    cfg.extra = {s.name: resolve_setting(s, src, flags, env, block) for s in SETTINGS if "run" in s.commands}
    return cfg


def resolve_setting(setting: Setting, sources: dict[str, str], flags: Flags, env: Mapping[str, str],
                    block: Mapping[str, Any]) -> Any:
    """A plugin setting's value: its flag, then its environment variable, then its suite key, then its
    default; a value of the wrong type is a ConfigError naming where it came from."""
    value = pick(sources, setting.name, ("flag", flags.extra.get(setting.name)),
                 ("env", env.get(setting.env) if setting.env else None),
                 ("suite", block.get(setting.suite_key) if setting.suite_key else None), default=setting.default)
    if value is None or isinstance(value, setting.type):
        return value
    try:
        return setting.type(value) if setting.type is not bool else str(value).lower() in ("1", "true", "yes")
    except (TypeError, ValueError):
        raise ConfigError(f"the setting {setting.name!r} ({sources[setting.name]}) must be a "
                          f"{setting.type.__name__}, not {value!r}.") from None


def resolve_tape(cfg: RunConfig, flags: Flags) -> None:
    """--record / --replay DIR and --replay-miss. A replay needs no key (the provider is not asked unless
    --replay-miss live) and takes the recording's models where none is set."""
    if flags.record and flags.replay:
        raise ConfigError("--record and --replay both given: record a suite with --record DIR, replay it with "
                          "--replay DIR (--replay-miss live adds what the recording lacks).")
    cfg.record, cfg.replay = flags.record, flags.replay
    miss = flags.replay_miss or "error"
    if miss not in ("error", "live"):
        raise ConfigError(f"--replay-miss must be error or live (got {miss!r}).")
    if flags.replay_miss and not flags.replay:
        raise ConfigError("--replay-miss needs --replay DIR.")
    cfg.replay_miss = miss
    if cfg.replay is None:
        return
    from agent_eval.provider.cassette import read_header

    cfg.recorded = read_header(cfg.replay)
    for name in ("model", "judge_model"):
        if getattr(cfg, name) is None and isinstance(cfg.recorded.get(name), str):
            setattr(cfg, name, cfg.recorded[name])
            cfg.sources[name] = "replay"
    if cfg.user_sim.model is None and cfg.user_sim.spec is None and isinstance(cfg.recorded.get("user_model"), str):
        cfg.user_sim.model, cfg.user_sim.source = cfg.recorded["user_model"], "replay"
        cfg.user = cfg.user_sim.label
    if miss == "error":  # nothing is sent: a placeholder key lets a keyless CI job replay
        cfg.api_key = cfg.api_key or PLACEHOLDER_KEY
        cfg.judge_api_key = cfg.judge_api_key or PLACEHOLDER_KEY
        cfg.user_sim.api_key = cfg.user_sim.api_key or PLACEHOLDER_KEY


def _resolve_limits(cfg: RunConfig, flags: Flags, env: Mapping[str, str], block: Mapping[str, Any]) -> None:
    """--rate-limit (then AGENT_EVAL_RATE_LIMIT, then the suite's rate_limit), --judge-rate-limit, --retry-budget."""
    suite_limit = block.get("rate_limit")
    raw = pick(cfg.sources, "rate_limit", ("flag", flags.rate_limit), ("env", env.get("AGENT_EVAL_RATE_LIMIT")),
               ("suite", None if suite_limit is None else str(suite_limit)))
    where = {"flag": "--rate-limit", "env": "AGENT_EVAL_RATE_LIMIT", "suite": f"the suite's rate_limit in "
             f"{cfg.cases_file}"}.get(cfg.sources["rate_limit"], "--rate-limit")
    cfg.rate_limit = _rate_limit(raw, where)
    judge_raw = pick(cfg.sources, "judge_rate_limit", ("flag", flags.judge_rate_limit))
    cfg.judge_rate_limit = _rate_limit(judge_raw, "--judge-rate-limit")
    cfg.retry_budget = float(pick(cfg.sources, "retry_budget", ("flag", flags.retry_budget),
                                  default=DEFAULTS.retry_budget))
    if not math.isfinite(cfg.retry_budget) or cfg.retry_budget <= 0:
        raise ConfigError(f"--retry-budget must be a positive number of seconds (got {cfg.retry_budget}); the "
                          f"default is {DEFAULTS.retry_budget:g}.")


def _rate_limit(raw: str | None, where: str) -> RateLimit | None:
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
    cfg.ray = bool(flags.ray or flags.ray_address or flags.ray_runtime_env)
    cfg.ray_address = flags.ray_address or None
    workers = flags.workers
    cfg.workers = int(workers) if workers is not None else (0 if cfg.ray else 1)  # 0: Ray's CPU count
    cfg.sources["workers"] = "flag" if workers is not None else "default"
    cfg.sources["ray"] = "flag" if cfg.ray else "default"
    if workers is not None and not 1 <= cfg.workers <= MAX_COUNT:
        raise ConfigError(f"--workers must be at least 1 and at most {MAX_COUNT} (got {cfg.workers}).")
    if cfg.ray:
        require_ray()
    raw = flags.ray_runtime_env
    if raw is not None:
        cfg.ray_runtime_env = _parse_runtime_env(raw)


def _parse_runtime_env(raw: str) -> dict[str, Any]:
    """--ray-runtime-env as a dict; what can be checked without starting Ray is checked here."""
    import orjson

    try:
        env = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"--ray-runtime-env is not valid JSON ({exc}); give a JSON object such as "
                          "'{\"pip\": [\"requests\"], \"env_vars\": {\"A\": \"1\"}}'.") from None
    if not isinstance(env, dict):
        raise ConfigError("--ray-runtime-env must be a JSON object (Ray's runtime_env: pip, env_vars, "
                          "py_modules, ...).")
    if "working_dir" in env:
        raise ConfigError("--ray-runtime-env may not set working_dir: the case file's folder is the job's "
                          "working_dir; give other code with \"py_modules\".")
    env_vars = env.get("env_vars")
    if env_vars is not None:
        if not isinstance(env_vars, dict):
            raise ConfigError("--ray-runtime-env: env_vars must be an object of names and string values, "
                              "such as {\"env_vars\": {\"MY_FLAG\": \"1\"}}.")
        for name, value in env_vars.items():
            if not isinstance(value, str):
                shown = orjson.dumps(value).decode()
                quoted = orjson.dumps({"env_vars": {name: shown}}).decode()
                raise ConfigError(f"--ray-runtime-env: env_vars[{name!r}] is {shown}, but Ray takes string "
                                  f"values only; quote it: {quoted}.")
    for entry in _local_modules(env.get("py_modules")):
        path = Path(entry)
        if not path.exists():
            where = "" if path.is_absolute() else f" (relative to the current directory: {path.absolute()})"
            raise ConfigError(f"--ray-runtime-env: py_modules entry {entry!r} does not exist{where}; give a "
                              "folder, a .py file or a .whl on this machine, or a remote URI.")
    return env


def _local_modules(py_modules: Any) -> list[str]:
    """The py_modules entries that name a path on this machine (not a URI); Ray checks the shape."""
    if not isinstance(py_modules, list):
        return []
    return [m for m in py_modules if isinstance(m, str) and "://" not in m]


def require_ray() -> None:
    """Exit 2 before anything runs when --ray is asked for and Ray is not installed."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise ConfigError("--ray needs Ray, which is not installed: pip install 'agent-eval-trials[ray]' (or run "
                          "without --ray; --workers N needs nothing beyond Python).")


def _check_ranges(cfg: RunConfig) -> None:
    for flag, count in (("--repeat", cfg.repeat), ("--concurrency", cfg.concurrency),
                        ("--max-steps", cfg.max_steps)):
        if not 1 <= count <= MAX_COUNT:
            raise ConfigError(f"{flag} must be at least 1 and at most {MAX_COUNT} (got {count}).")
    if not 0.0 < cfg.threshold <= 1.0:
        where = "--threshold" if cfg.sources.get("threshold") != "suite" else f"defaults.threshold in {cfg.cases_file}"
        raise ConfigError(f"{where} must be above 0 and at most 1 (got {cfg.threshold}); a threshold of 0 passes "
                          "a case that never succeeds.")
    if cfg.gates and not cfg.baseline:
        raise ConfigError("--gate compares against a baseline; add --baseline REPORT (or --baseline last).")
    if cfg.timeout is not None and not (0 < cfg.timeout < math.inf):
        raise ConfigError(f"--timeout must be a positive, finite number of seconds (got {cfg.timeout}).")
    check_judge_timeout(cfg.judge_timeout)


def check_judge_timeout(seconds: float) -> None:
    """ConfigError unless --judge-timeout is a positive, finite number of seconds."""
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError(f"--judge-timeout must be a positive number of seconds (got {seconds}); the default "
                          f"is {DEFAULTS.judge_timeout:g}.")


def require_llm(cfg: RunConfig, who: str) -> None:
    """Exit-2 check: the openai agent needs a model and a key before anything runs."""
    if not cfg.model:
        raise ConfigError(f"the {who} agent needs a model: pass --model NAME, set AGENT_EVAL_MODEL, or set "
                          f"\"model\" in the suite block of {cfg.cases_file}.")
    if not cfg.api_key:
        raise ConfigError(f"the {who} agent needs an API key: set OPENAI_API_KEY (and OPENAI_BASE_URL or "
                          f"--base-url for a non-OpenAI endpoint), or use a Python agent with --agent file.py:fn.")
