"""The command line's flags as one frozen value, and every setting's default, written once.

The CLI builds a `Flags` (None or empty: not given) and records which flags were typed on the command
line; `--resume` and `score` derive theirs with `dataclasses.replace`. `run/config.py` resolves them
against the environment and the suite block, falling back to `DEFAULTS`.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Defaults:
    """Each setting's default, used when no flag, environment variable or suite block sets it."""

    cases: Path = Path("cases/test_cases.json")
    repeat: int = 1
    threshold: float = 1.0
    concurrency: int = 8
    max_steps: int = 8
    output_dir: Path = Path("reports")
    judge_timeout: float = 120.0  # one judge or simulator request, retries included
    mcp_timeout: float = 30.0  # one request to an MCP server, and its start (a server entry's `timeout`)
    retry_budget: float = 600.0  # seconds one request may keep retrying rate limits
    history_last: int = 10  # runs `agent-eval history` shows


DEFAULTS = Defaults()
MAX_COUNT = 2**31 - 1  # a count past this (-k, --concurrency, --max-steps, --workers) is a typo, not a plan
MAX_MESSAGE_BYTES = 64 * 2**20  # the most read of one message from outside: a provider's answer (decoded), an
# MCP message, a cmd: agent's reply, a request to the recording endpoint


# The help text of the options that several commands share (cli.py).
CASES_HELP = "The case file (a JSON list of cases, or {\"suite\": ..., \"cases\": [...]})."
FILTER_HELP = "Keep cases whose id or a tag contains TEXT (repeatable)."
REPEAT_HELP = f"Runs per case (default {DEFAULTS.repeat})."
THRESHOLD_HELP = f"Pass rate a case needs (default {DEFAULTS.threshold})."
CONCURRENCY_HELP = f"Runs at once (default {DEFAULTS.concurrency})."
MAX_STEPS_HELP = f"Model completions per user turn (default {DEFAULTS.max_steps})."
OUTPUT_DIR_HELP = f"Where reports go (default {DEFAULTS.output_dir})."
JUDGE_MODEL_HELP = "The judge's model (AGENT_EVAL_JUDGE_MODEL)."
OTEL_HELP = "Also write each run as an OpenTelemetry GenAI trace (OTLP/JSON lines) here."
OTLP_HELP = "Also POST each run's trace here as OTLP/HTTP JSON (e.g. http://127.0.0.1:4318/v1/traces)."
LOGS_HELP = "An OTLP logs export whose GenAI events hold the traces' messages."
JUDGE_TIMEOUT_HELP = ("Seconds each judge or simulator request may take, retries included "
                      f"(default {DEFAULTS.judge_timeout:g}).")
RATE_LIMIT_HELP = ("RPM[:BURST]: at most RPM requests a minute to the agent's endpoint, BURST at once "
                   "(AGENT_EVAL_RATE_LIMIT, the suite's rate_limit; default: none, the window adapts).")
JUDGE_RATE_LIMIT_HELP = "RPM[:BURST] for the judge's and the simulator's endpoints (default: none)."
RETRY_BUDGET_HELP = "Seconds one request may keep retrying rate limits, from its first attempt (default 600)."


@dataclass(frozen=True)
class Flags:
    """The flags of one command; None (or an empty tuple, or False) means the flag was not given."""

    cases: Path = DEFAULTS.cases
    filter: tuple[str, ...] = ()
    repeat: int | None = None
    threshold: float | None = None
    no_judge: bool = False
    agent: str | None = None
    model: str | None = None
    base_url: str | None = None
    judge_model: str | None = None
    no_cache: bool = False
    concurrency: int | None = None
    max_steps: int | None = None
    timeout: float | None = None
    output_dir: Path | None = None
    quiet: bool = False
    baseline: str | None = None  # a report path, or "last"
    junit: Path | None = None
    markdown: Path | None = None
    no_html: bool = False
    resume: str | None = None
    user: str | None = None
    user_model: str | None = None
    judge_timeout: float | None = None
    gate: tuple[str, ...] = ()
    verbose: bool = False
    last_failed: bool = False
    exitfirst: bool = False
    max_cost: float | None = None  # --max-cost USD: the spend of the whole command
    workers: int | None = None
    ray: bool = False
    ray_address: str | None = None
    ray_runtime_env: str | None = None  # JSON text, parsed when resolved
    rate_limit: str | None = None  # RPM[:BURST], parsed when resolved
    judge_rate_limit: str | None = None
    retry_budget: float | None = None
    record: Path | None = None  # --record DIR: a cassette per run (section 22)
    replay: Path | None = None  # --replay DIR: answers from the cassettes, no provider
    replay_miss: str | None = None  # --replay-miss error|live
    traces: Path | None = None  # `score`: the recorded runs
    format: str | None = None  # `score`: their format (None: detected)
    report: Path | None = None  # `rescore`: the report re-scored
    judge_repeat: int | None = None  # `rescore`: N uncached judge answers per run
    otel: Path | None = None  # --otel FILE: the runs as OTLP/JSON lines
    otlp_endpoint: str | None = None  # --otlp-endpoint URL: the runs POSTed as OTLP/HTTP JSON
    logs: Path | None = None  # `score`: GenAI content in OTLP log records beside the traces
    last_failed_ids: tuple[str, ...] | None = None  # a resumed run's stored --lf selection
    agent_dir: Path | None = None  # a resumed run's folder that relative agent SPECs start from
    extra: Mapping[str, Any] = field(default_factory=dict)  # the values given to plugins' settings (SETTINGS)
    explicit: frozenset[str] = frozenset()  # the flags typed on the command line

    def given(self, name: str) -> bool:
        """Whether the flag `name` was typed on the command line."""
        return name in self.explicit


@dataclass(frozen=True)
class Setting:
    """One setting a plugin adds: its flag on the commands it names, its environment variable and suite key,
    its default, and whether `--resume` reproduces it. Its value is resolved like a built-in one (the
    flag, then the environment, then the suite block, then the default), shown in the report's `settings`
    under its name, and read by the plugin from `RunConfig.extra[name]`."""

    name: str
    type: type = str  # str, int, float or bool (a bool is a flag without a value)
    flags: tuple[str, ...] = ()  # ("--tone",): the flag names; none: no flag
    env: str | None = None  # the environment variable that sets it
    suite_key: str | None = None  # the key of the suite block that sets it
    default: Any = None
    help: str = ""
    commands: tuple[str, ...] = ("run",)
    resume: bool = True  # --resume takes the run's stored value (unless the flag is given again)


SETTINGS: list[Setting] = []
"""The settings plugins added (`register_setting`); the built-in ones are the fields of `Flags`."""


def register_setting(setting: Setting) -> None:
    """Add a setting; a name (or flag) that a built-in setting or another module holds is a ConfigError."""
    from agent_eval.plugins import caller, claim

    claim("setting", setting.name, caller(), Flags.__dataclass_fields__, __name__)
    for flag in setting.flags:
        claim("flag", flag, caller(), (), __name__)
    SETTINGS[:] = [s for s in SETTINGS if s.name != setting.name] + [setting]
