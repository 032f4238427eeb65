"""Resolve a command's settings into one frozen value: each row of the settings table (`flags/rows.py`) that
names the command, from its flag, then its environment variable, then its suite key, then its default, in its
range, recording where it came from in `sources`; read by key (`settings[MODEL]`) or, a plugin's, by name."""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from agent_eval.errors import ConfigError
from agent_eval.redaction import PLACEHOLDER_KEY
from agent_eval.flags import BUILT_IN_NAMES, Flags, Setting, all_settings
from agent_eval.flags.rows import (
    BASE_URL, CONCURRENCY, JUDGE_MODEL, JUDGE_RATE_LIMIT, JUDGE_TIMEOUT, MODEL, RATE_LIMIT, RAY, RAY_ADDRESS, REPLAY,
    REPLAY_MISS, RETRY_BUDGET, USER, WORKERS, attach,
)
from agent_eval.provider import endpoints
from agent_eval.provider.throttle import parse_rate_limit
from agent_eval.run.frozen import FrozenMap, frozen
from agent_eval.run.ray_env import parse_runtime_env, require_ray
from agent_eval.run.scenario import UserSettings
from agent_eval.suite.cases import Suite

T = TypeVar("T")


@dataclass(frozen=True)
class Settings:
    """Every setting of one command, resolved: each row's value, read by its key (`settings[MODEL]`, typed
    by the key) or by its name (`settings.get("tone")`, a plugin's), where each came from, and the values that
    are not one row's. `api_key` and the other keys are never written anywhere."""

    cases_file: Path
    values: Mapping[str, Any] = field(default_factory=FrozenMap)  # each resolved row's value, by row name
    sources: Mapping[str, str] = field(default_factory=FrozenMap)  # setting -> flag | env | suite | default | ...
    api_key: str | None = None
    judge_base_url: str | None = None
    judge_api_key: str | None = None
    user_sim: UserSettings = field(default_factory=UserSettings)  # holds the simulator's key: never written
    recorded: Mapping[str, Any] | None = None  # --replay: the recording's cassette.json
    source: Mapping[str, str] | None = None  # `score`: the recorded traces scored, {"traces", "format"}
    last_failed: tuple[str, ...] | None = None  # the ids --lf selected

    def __post_init__(self) -> None:
        """Read-only all the way down (a dict a FrozenMap, a list a tuple): no reader changes what the next sees."""
        for name in ("values", "sources", "recorded", "source", "last_failed"):
            object.__setattr__(self, name, frozen(getattr(self, name)))

    def __getitem__(self, key: Setting[T]) -> T:
        """The value of `key` (a row not resolved for this command: its value when not given)."""
        return self.values[key.name] if key.name in self.values else key.unset()

    def get(self, name: str) -> Any:
        """The value of the row named `name` (a plugin's own), None when it has none."""
        return self.values.get(name)

    def replace(self, sources: Mapping[str, str] | None = None, **changes: Any) -> Settings:
        """These settings with `changes` (a row's value by its name, or a field) and `sources` added."""
        fields = {name: value for name, value in changes.items() if name in _FIELDS}
        values = {name: value for name, value in changes.items() if name not in _FIELDS}
        return dataclasses.replace(self, **fields, values={**self.values, **values},
                                   sources={**self.sources, **(sources or {})})

    def settings(self) -> dict[str, Any]:
        """The report's `settings` block: no keys, no secrets (URLs are shown with theirs replaced by ***)."""
        from agent_eval.run.settings_block import settings_block

        return settings_block(self)


_FIELDS = frozenset(f.name for f in dataclasses.fields(Settings))


def endpoint_settings(cfg: Settings) -> endpoints.Settings:
    """What every endpoint of this process is set to: --concurrency, the rate limits and --retry-budget."""
    return endpoints.Settings(ceiling=cfg[CONCURRENCY], rate_limit=cfg[RATE_LIMIT],
                              judge_rate_limit=cfg[JUDGE_RATE_LIMIT], retry_budget_s=cfg[RETRY_BUDGET])


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
    """What a command's settings are resolved from: its flags, the environment and the suite; and, while
    they are resolved, the values and sources so far and the fields that are not one row's."""

    flags: Flags
    env: Mapping[str, str]
    suite: Suite
    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)


def resolve(flags: Flags, suite: Suite, environ: Mapping[str, str] | None = None, command: str = "run") -> Settings:
    """The settings of `command` (`run`, which `score` and the pytest plugin play too, or `rescore`) from its
    flags, the environment and the suite block: every row that names the command, and a plugin's row that
    names the command of `flags` (`score`, which resolves as `run`), or, under `rescore`, every plugin's row
    (its outputs read them as under `run`: one with no flag there is its environment variable, suite key or
    default), in the table's order (the order of `sources`), the few that are more than one value
    by their own `resolve`."""
    given = Given(flags, os.environ if environ is None else environ, suite)
    for row in all_settings():
        if command in row.commands or row.name not in BUILT_IN_NAMES and (
                command == "rescore" or flags.command in row.commands):
            (row.resolve or _resolve_row)(row, given)
    if given.values.get("gate") and not given.values.get("baseline"):
        raise ConfigError("--gate needs --baseline REPORT (or --baseline last): a gate compares this run "
                          "with a baseline run.")
    settings = Settings(suite.path.resolve(), given.values, given.sources, **given.fields)
    return resolve_tape(settings, flags, given.env)


def resolve_value(row: Setting[Any], given: Given) -> Any:
    """A row's value: its flag, then its environment variable, then its suite key, then its default, as the
    row's type, in the row's range; the source is recorded (when the row records one). A value of the wrong
    type, or out of range, is a ConfigError naming where it came from."""
    sources = given.sources if row.sourced and row.shown != "hidden" else {}
    flag = given.flags.value(row.name)
    value = pick(sources, row.key, ("flag", None if flag is False or flag == () else flag),
                 ("env", given.env.get(row.env) if row.env else None),
                 ("suite", _suite_value(given.suite.settings, row.suite_key)), default=row.default)
    where = sources.get(row.key, "flag")
    return row.checked(_typed(row, value, where),
                       f"{row.suite_key} in {given.suite.path.resolve()}" if where == "suite" else None)


def _resolve_row(row: Setting[Any], given: Given) -> None:
    given.values[row.name] = resolve_value(row, given)


def _suite_value(block: Mapping[str, Any], key: str | None) -> Any:
    """The suite block's value at `key` ("defaults.repeat": the `repeat` of its `defaults`)."""
    value: Any = block if key else None
    for part in (key or "").split(".") if key else ():
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _typed(row: Setting[Any], value: Any, where: str, item: bool = False) -> Any:
    if row.repeatable and not item:  # a list of its type; one value (an environment variable's text) is a list of one
        items = value if isinstance(value, (list, tuple)) else () if value is None else (value,)
        return tuple(_typed(row, one, where, item=True) for one in items)
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


def _base_url(row: Setting[Any], given: Given) -> None:
    base_url = given.values[row.name] = resolve_value(row, given)
    # A local server (Ollama, vLLM, llama.cpp) takes no key: a set base URL without one sends a placeholder.
    given.fields["api_key"] = first(given.env.get("OPENAI_API_KEY"), PLACEHOLDER_KEY if base_url else None)


def _judge(row: Setting[Any], given: Given) -> None:
    """The judge falls back to the agent's model, endpoint and key."""
    given.values[row.name], given.fields["judge_base_url"], given.fields["judge_api_key"] = resolve_judge(
        given.flags.text("judge_model"), given.suite.settings.get("judge") or {}, given.env,
        given.values.get(MODEL.name), given.values.get(BASE_URL.name), given.fields.get("api_key"), given.sources)


def _user(row: Setting[Any], given: Given) -> None:
    """The user simulator: --user or --user-model, then the environment, then the suite block."""
    from agent_eval.run.scenario import resolve_user

    user = resolve_user(given.flags, given.suite.settings, given.suite.base_dir, given.env,
                        given.values.get(BASE_URL.name), given.fields.get("api_key"))
    given.fields["user_sim"] = dataclasses.replace(user, timeout_s=given.values[JUDGE_TIMEOUT.name])
    given.values[row.name], given.sources["user"] = user.label, user.source


def _rate_limit(row: Setting[Any], given: Given) -> None:
    raw = resolve_value(row, given)
    where = {"env": row.env, "suite": f"the suite's {row.suite_key} in {given.suite.path.resolve()}"}.get(
        given.sources.get(row.key, "flag"), row.flags[0])
    try:
        given.values[row.name] = None if raw is None else parse_rate_limit(raw)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}.") from None


def _workers(row: Setting[Any], given: Given) -> None:
    """--workers, --ray, --ray-address, --ray-runtime-env; an address or a runtime env implies --ray."""
    flags = given.flags
    ray = bool(flags.is_on("ray") or flags.text("ray_address") or flags.text("ray_runtime_env"))
    workers = row.checked(flags.count("workers"))
    given.values.update({WORKERS.name: int(workers) if workers is not None else (0 if ray else 1),  # 0: Ray's CPUs
                         RAY.name: ray, RAY_ADDRESS.name: flags.text("ray_address") or None})
    given.sources.update(workers="flag" if workers is not None else "default", ray="flag" if ray else "default")
    if ray:
        require_ray()
    raw = flags.text("ray_runtime_env")
    if raw is not None:
        given.values["ray_runtime_env"] = parse_runtime_env(raw)


attach(BASE_URL, resolve=_base_url)
attach(JUDGE_MODEL, resolve=_judge)
attach(USER, resolve=_user)
attach(WORKERS, resolve=_workers)
attach(RATE_LIMIT, resolve=_rate_limit)
attach(JUDGE_RATE_LIMIT, resolve=_rate_limit)


RECORDING = "recording"  # settings.sources of a value the replayed recording's cassette.json gave


def resolve_tape(cfg: Settings, flags: Flags, env: Mapping[str, str]) -> Settings:
    """--record / --replay DIR and --replay-miss. A replay needs no key (the provider is not asked unless
    --replay-miss live) and follows the recording: the models its cassette.json names (the agent's, the
    judge's, the simulated user's) beat the environment's and the suite's; a flag still beats them
    (`settings.sources` says `recording`)."""
    if flags.path("record") and flags.path("replay"):
        raise ConfigError("--record and --replay both given: record a suite with --record DIR, replay it with "
                          "--replay DIR (--replay-miss live adds what the recording lacks).")
    miss = cfg[REPLAY_MISS]
    if REPLAY_MISS.name in cfg.values and miss not in ("error", "live"):
        raise ConfigError(f"--replay-miss must be error or live (got {miss!r}).")
    if flags.text("replay_miss") and not flags.path("replay") and not flags.path("record"):
        raise ConfigError("--replay-miss needs --replay DIR (or --record DIR, to extend its recording).")
    replay = cfg[REPLAY]
    if replay is None:
        return cfg
    from agent_eval.provider.cassette import read_header

    recorded = read_header(replay)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name in ("model", "judge_model"):
        if cfg.sources.get(name) != "flag" and isinstance(recorded.get(name), str):
            values[name], sources[name] = recorded[name], RECORDING
    user, api_key, judge_api_key = cfg.user_sim, cfg.api_key, cfg.judge_api_key
    recorded_user = recorded.get("user_model")
    if user.source != "flag" and isinstance(recorded_user, str):  # the recording's LLM user, not the suite's
        user = dataclasses.replace(user, spec=None, spec_base=None, model=recorded_user, source=RECORDING,
                                   base_url=env.get("AGENT_EVAL_USER_BASE_URL") or cfg[BASE_URL],
                                   api_key=env.get("AGENT_EVAL_USER_API_KEY") or api_key)
        values["user"], sources["user"] = user.label, RECORDING
    if miss == "error":  # nothing is sent: a placeholder key lets a keyless CI job replay
        api_key, judge_api_key = api_key or PLACEHOLDER_KEY, judge_api_key or PLACEHOLDER_KEY
        user = dataclasses.replace(user, api_key=user.api_key or PLACEHOLDER_KEY)
    return cfg.replace(sources, recorded=recorded, user_sim=user, api_key=api_key, judge_api_key=judge_api_key,
                       **values)


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


def require_llm(cfg: Settings, who: str) -> None:
    """Exit-2 check: the openai agent needs a model and a key before anything runs."""
    if not cfg[MODEL]:
        raise ConfigError(f"the {who} agent needs a model: pass --model NAME, set AGENT_EVAL_MODEL, or set "
                          f"\"model\" in the suite block of {cfg.cases_file}.")
    if not cfg.api_key:
        raise ConfigError(f"the {who} agent needs an API key: set OPENAI_API_KEY (and OPENAI_BASE_URL or "
                          f"--base-url for a non-OpenAI endpoint), or use a Python agent with --agent file.py:fn.")
