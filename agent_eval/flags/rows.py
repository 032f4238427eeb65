"""Every setting of the command line, one row each: its flag, environment variable, suite key, default,
help, the commands that take it, how the report shows it and what `--resume` does with it.

The Typer options of every command (`commands/options.py`), `Flags` (`flags/__init__.py`), the resolution chain
and the report's `settings` (`run/config.py`) and the `--resume` rule (`run/resume.py`) are read from
these rows. A plugin adds a row with `register_setting`.
"""
from __future__ import annotations

import dataclasses
import keyword
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, get_args

from agent_eval.limits import JUDGE_TIMEOUT_S, MAX_COUNT, MCP_TIMEOUT_S, RETRY_BUDGET_S

T = TypeVar("T")

ResumeRule = Literal["kept", "renewed", "command"]
"""What `--resume` does with a setting: "kept", the run's stored value, and a different value given again is
an error; "renewed", the stored value unless it is given again; "command", the resumed command line's."""

Shown = Literal["value", "text", "url", "urls", "hidden"]
"""How the report's `settings` show a resolved value: as it is, as text (a path, a rate limit), a URL with
its secret replaced by ***, text whose URLs are so redacted; or not at all."""


@dataclass(frozen=True)
class Defaults:
    """Defaults that code outside the rows reads by name (a row's own default is its `default`)."""

    cases: Path = Path("cases/test_cases.json")
    repeat: int = 1
    threshold: float = 1.0
    concurrency: int = 8
    max_steps: int = 8
    output_dir: Path = Path("reports")
    judge_timeout: float = JUDGE_TIMEOUT_S
    mcp_timeout: float = MCP_TIMEOUT_S
    retry_budget: float = RETRY_BUDGET_S
    history_last: int = 10  # runs `agent-eval history` shows


DEFAULTS = Defaults()


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One setting, a key typed by its value (`T`): its flag on the commands it names, its environment variable
    and suite key, its default, its range, and what `--resume` does with it. Its value is resolved as the flag,
    then the environment, then the suite block, then the default, checked against `check`, and shown in the
    report's `settings` under its name (sources recorded)."""

    name: str
    type: type = str  # str, int, float, bool (a flag without a value) or Path
    flags: tuple[str, ...] = ()  # ("--tone",): the flag names; none: no flag
    env: str | None = None  # the environment variable that sets it
    suite_key: str | None = None  # the key of the suite block that sets it ("defaults.repeat": a nested key)
    default: Any = None
    help: str = ""
    commands: tuple[str, ...] = ("run",)
    resume: ResumeRule | bool = True  # True: "renewed", False: "command" (a plugin's older spelling)
    repeatable: bool = False  # the flag may be given several times: its value is a tuple
    shown: Shown = "value"
    sourced: bool = True  # its source is recorded in `settings.sources`
    attr: str | None = None  # the RunConfig attribute and report key, when not `name` (a --no-X flag's X)
    negated: bool = False  # the attribute holds the opposite of the flag (--no-judge: judge)
    eager: bool = False  # the option's default is `default` (shown in --help), not "not given"
    command_help: Mapping[str, str] = dataclasses.field(default_factory=dict)  # a command's own help text
    command_default: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # a command's own default
    option: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # more of typer.Option (min, max)
    check: Callable[[Any], str | None] | None = None  # why a value is out of range (the words after "must be")

    def checked(self, value: T, where: str | None = None) -> T:
        """`value`, or a ConfigError "WHERE must be ..." when `check` refuses it (WHERE: its first flag)."""
        problem = None if value is None or self.check is None else self.check(value)
        if problem is None:
            return value
        from agent_eval.errors import ConfigError

        raise ConfigError(f"{where or (self.flags[0] if self.flags else self.name)} must be {problem}.")

    @property
    def rule(self) -> ResumeRule:
        """The `--resume` rule, with a plugin's True/False read as "renewed"/"command"."""
        if isinstance(self.resume, bool):
            return "renewed" if self.resume else "command"
        return self.resume

    @property
    def key(self) -> str:
        """Its key in the report's `settings` and `sources`, and its RunConfig attribute."""
        return self.attr or self.name

    def unset(self) -> Any:
        """Its value when it is not given: the default of an eager option, else None, False or ()."""
        if self.eager:
            return self.default
        return () if self.repeatable else False if self.type is bool else None


def count(value: int) -> str | None:
    """The range of a count: 1 to MAX_COUNT."""
    return None if 1 <= value <= MAX_COUNT else f"at least 1 and at most {MAX_COUNT} (got {value})"


def seconds(default: float | None = None) -> Callable[[float], str | None]:
    """The range of a length of time: positive and finite (`default`: named in the message)."""
    def check(value: float) -> str | None:
        if math.isfinite(value) and value > 0:
            return None
        if default is None:
            return f"a positive, finite number of seconds (got {value})"
        return f"a positive number of seconds (got {value}); the default is {default:g}"
    return check


def _share(value: float) -> str | None:
    return None if 0.0 < value <= 1.0 else \
        f"above 0 and at most 1 (got {value}); a threshold of 0 passes a case that never succeeds"


def _dollars(value: float) -> str | None:
    return None if math.isfinite(value) and value > 0 else \
        f"a positive, finite number of US dollars (got {value}), such as --max-cost 5 for $5.00"


def _row(name: str, type: type, flags: tuple[str, ...], help: str, commands: tuple[str, ...] = ("run",),
         resume: ResumeRule = "command", shown: Shown = "hidden", **more: Any) -> Setting[Any]:
    """A built-in row; unless it says otherwise, it is not in the report's `settings`, and a resumed run takes
    it from its own command line."""
    return Setting(name, type, flags, help=help, commands=commands, resume=resume, shown=shown, **more)


_CASES_HELP = "The case file (a JSON list of cases, or {\"suite\": ..., \"cases\": [...]})."
_REPORT_CASES = "The case file (default: the report's cases_file)."
_COMPARE_CASES = "The case file whose rubrics --pairwise judges by (default: the NEW report's cases_file)."
_SCORED = ("run", "score")
_DETECT, _POWER = 0.05, 0.8  # `plan`: the drop of pass_at_1 to detect, and the power to detect it with
_RESCORED = ("run", "rescore", "score")
_RATE_LIMIT_HELP = ("RPM[:BURST]: at most RPM requests a minute to the agent's endpoint, BURST at once "
                   "(AGENT_EVAL_RATE_LIMIT, the suite's rate_limit; default: none, the window adapts).")

BUILT_IN: tuple[Setting[Any], ...] = (
    # The order is each command's --help order and the order in which `run` resolves its settings.
    _row("labels", Path, ("--labels",), "The labels file (JSON Lines) of that report.", ("calibrate",),
         default=..., eager=True),
    _row("cases", Path, ("--cases",), _CASES_HELP,
         ("run", "list", "validate", "history", "score", "rescore", "label", "calibrate", "compare"), "kept",
         default=DEFAULTS.cases, eager=True,
         command_help={"rescore": _REPORT_CASES, "label": _REPORT_CASES, "calibrate": _REPORT_CASES,
                       "compare": _COMPARE_CASES},
         command_default={"rescore": None, "label": None, "calibrate": None, "compare": None}),
    _row("report", Path, (), "", ("rescore",)),  # rescore's REPORT argument
    _row("traces", Path, (), "", ("score",)),  # score's TRACES argument
    _row("out", Path, ("--out",), "", ("view", "import", "label"), command_help={
        "view": "The page (default: REPORT as .html).", "import": "Write the case file here (default: stdout).",
        "label": "The labels file (default: <report stem>.labels.jsonl)."}),
    _row("into", Path, ("--into",), "Append the cases to this case file (its suite kept).", ("import",)),
    _row("tools", str, ("--tools",), "The tools module the cases are validated against.", ("import",)),
    _row("format", str, ("--format",), "otel, inspect or agent-eval (default: detected).", ("score",)),
    _row("logs", Path, ("--logs",), "An OTLP logs export whose GenAI events hold the traces' messages.",
         ("score", "import")),
    _row("filter", str, ("--filter",), "Keep cases whose id or a tag contains TEXT (repeatable).",
         ("run", "list", "score"), "kept", "value", repeatable=True, default=()),
    _row("repeat", int, ("--repeat", "-k"), f"Runs per case (default {DEFAULTS.repeat}).", ("run",), "kept",
         "value", suite_key="defaults.repeat", default=DEFAULTS.repeat, check=count),
    _row("threshold", float, ("--threshold",), f"Pass rate a case needs (default {DEFAULTS.threshold}).",
         _SCORED, "kept", "value", suite_key="defaults.threshold", default=DEFAULTS.threshold, check=_share),
    _row("no_judge", bool, ("--no-judge",), "Never call the judge; skip rubric-only cases.", _RESCORED, "kept",
         "value", attr="judge", negated=True, default=False),
    _row("agent", str, ("--agent",), "openai, file.py:function, module:function or \"cmd:COMMAND ARGS...\".",
         ("run", "validate"), "kept", "urls", suite_key="agent", default="openai",
         command_help={"validate": "Also load this agent, as run would."}),
    _row("model", str, ("--model",), "The agent's model (AGENT_EVAL_MODEL).", ("run",), "kept", "value",
         env="AGENT_EVAL_MODEL", suite_key="model"),
    _row("base_url", str, ("--base-url",), "OpenAI-compatible endpoint (OPENAI_BASE_URL).", ("run",), "kept",
         "url", env="OPENAI_BASE_URL"),
    _row("pairwise", bool, ("--pairwise",), "Judge each pair of answers, both orders.", ("compare",)),
    _row("judge_model", str, ("--judge-model",), "The judge's model (AGENT_EVAL_JUDGE_MODEL).",
         ("run", "rescore", "compare", "score", "calibrate"), "kept", "value"),
    _row("judge_timeout", float, ("--judge-timeout",), "Seconds each judge or simulator request may take, "
         f"retries included (default {DEFAULTS.judge_timeout:g}).", ("run", "rescore", "score", "calibrate"),
         "renewed", "value", default=DEFAULTS.judge_timeout, check=seconds(DEFAULTS.judge_timeout)),
    _row("judge_repeat", int, ("--judge-repeat",), "N uncached judge answers per run.",
         ("rescore", "compare", "calibrate"), command_help={"compare": "N uncached answers per order (--pairwise).",
                                                            "calibrate": "Compare N fresh majority verdicts."},
         check=count),
    _row("no_cache", bool, ("--no-cache",), "Ask the judge again; ignore cached answers.", ("run",), "kept",
         "value", default=False),
    _row("concurrency", int, ("--concurrency",), f"Runs at once (default {DEFAULTS.concurrency}).", ("run",),
         shown="value", default=DEFAULTS.concurrency, check=count),
    _row("max_steps", int, ("--max-steps",), f"Model completions per user turn (default {DEFAULTS.max_steps}).",
         ("run",), "kept", "value", suite_key="max_steps", default=DEFAULTS.max_steps, check=count),
    _row("timeout", float, ("--timeout",), "Seconds one run may take (default: none).", ("run",), "kept", "value",
         check=seconds()),
    _row("output_dir", Path, ("--output-dir",), f"Where reports go (default {DEFAULTS.output_dir}).",
         ("run", "score", "history"), default=DEFAULTS.output_dir, sourced=False,
         command_help={"history": "Where history.sqlite is."}, command_default={"history": DEFAULTS.output_dir}),
    _row("quiet", bool, ("--quiet", "-q"), "No progress bar; print only the verdict line.", _RESCORED,
         command_help={"rescore": "Print only the verdict line.", "score": "Print only the verdict line."}),
    _row("baseline", str, ("--baseline",), "Gate against this report (or `last`).", _SCORED),
    _row("gate", str, ("--gate",), "METRIC[=MAX_DROP] to gate on (needs --baseline).", ("run", "compare", "score"),
         repeatable=True, command_help={"compare": "METRIC[=MAX_DROP] to gate on (repeatable).",
                                        "score": "METRIC[=MAX_DROP] to gate on (repeatable)."}),
    _row("junit", Path, ("--junit",), "Also write JUnit XML here.", _RESCORED),
    _row("markdown", Path, ("--markdown",), "Also append a Markdown summary here.",
         ("run", "rescore", "compare", "score"),
         command_help={"compare": "Also append the comparison as Markdown here."}),
    _row("html_out", Path, ("--html",), "Also write the comparison as an HTML page here.", ("compare",)),
    _row("no_html", bool, ("--no-html",), "Do not write the HTML page.", _SCORED, attr="html", negated=True),
    _row("resume", str, ("--resume",), "Finish run RUN_ID: run only what its journal lacks."),
    _row("user", str, ("--user",), "Python user simulator (file.py:function).", ("run",), "kept", "urls"),
    _row("user_model", str, ("--user-model",), "LLM user simulator (AGENT_EVAL_USER_MODEL).", ("run",), "kept"),
    _row("max_cost", float, ("--max-cost",), "Stop taking runs before the spend passes USD.", ("run",), "renewed",
         "value", check=_dollars),
    _row("verbose", bool, ("--verbose", "-v"), "Every failed check of every failed run, all cases.", _SCORED,
         command_help={"score": "Every failed check, and the whole case table."}),
    # --resume reproduces the ids --lf selected (`last_failed_ids`), not the flag.
    _row("last_failed", bool, ("--last-failed", "--lf"), "Run only the cases that failed or errored in the last run."),
    _row("exitfirst", bool, ("--exitfirst", "-x"), "Stop taking new runs after the first failure."),
    _row("workers", int, ("--workers",), "Worker processes sharing --concurrency (default 1).", shown="value",
         check=count),
    _row("ray", bool, ("--ray",), "Place the workers on Ray (pip install 'agent-eval-trials\\[ray]')."),
    _row("ray_address", str, ("--ray-address",), "Join this Ray cluster (implies --ray)."),
    _row("ray_runtime_env", str, ("--ray-runtime-env",), "Ray's runtime_env, as JSON."),
    _row("otel", Path, ("--otel",), "Also write each run as an OpenTelemetry GenAI trace (OTLP/JSON lines) here.",
         _RESCORED, shown="text", sourced=False),
    _row("otlp_endpoint", str, ("--otlp-endpoint",), "Also POST each run's trace here as OTLP/HTTP JSON "
         "(e.g. http://127.0.0.1:4318/v1/traces).", _RESCORED, shown="url", sourced=False),
    _row("rate_limit", str, ("--rate-limit",), _RATE_LIMIT_HELP, shown="text", env="AGENT_EVAL_RATE_LIMIT",
         suite_key="rate_limit"),
    _row("judge_rate_limit", str, ("--judge-rate-limit",), "RPM[:BURST] for the judge's and the simulator's "
         "endpoints (default: none).", shown="text"),
    _row("retry_budget", float, ("--retry-budget",), "Seconds one request may keep retrying rate limits, from its "
         f"first attempt (default {DEFAULTS.retry_budget:g}).", shown="value", default=DEFAULTS.retry_budget,
         check=seconds(DEFAULTS.retry_budget)),
    _row("record", Path, ("--record",), "Record each run's model exchanges in DIR.", ("run",), "renewed", "text",
         sourced=False),
    _row("replay", Path, ("--replay",), "Answer model requests from DIR's recording.", ("run",), "renewed", "text",
         sourced=False),
    _row("replay_miss", str, ("--replay-miss",), "error (default) or live: ask the provider.", ("run",), "renewed",
         default="error"),
    _row("last", int, ("--last",), "How many recent runs to show.", ("history",), default=DEFAULTS.history_last,
         eager=True, option={"min": 1, "max": MAX_COUNT}),
    _row("metric", str, ("--metric",), "A summary metric to show (repeatable).", ("history",), repeatable=True),
    _row("case_id", str, ("--case-id",), "Show one case's pass rate over the recent runs.", ("history",)),
    _row("min_kappa", float, ("--min-kappa",), "Exit 1 when the overall kappa is below this.", ("calibrate",),
         default=0.6, eager=True),
    _row("detect", float, ("--detect",), "The drop of pass_at_1 to detect.", ("plan",),
         default=_DETECT, eager=True),
    _row("power", float, ("--power",), "The probability of detecting it.", ("plan",),
         default=_POWER, eager=True),
    _row("port", int, ("--port",), "The port to listen on (0: any free one).", ("scripted-model",), default=0,
         eager=True),
    # Set by --resume, never by a flag: the stored --lf selection, and the folder relative agent SPECs start from.
    _row("last_failed_ids", str, (), "", (), repeatable=True),
    _row("agent_dir", Path, (), "", ()),
)

SETTINGS: list[Setting[Any]] = []
"""The settings plugins added (`register_setting`), after the built-in ones."""

_BY_NAME = {s.name: s for s in BUILT_IN}
_BUILT_IN_NAMES = frozenset(_BY_NAME)
# The keys of the report's settings block that a plugin's row may not take: the built-in rows' (a --no-X flag's
# X), and those no row owns, which run/config.py writes itself.
_BUILT_IN_KEYS = frozenset(s.key for s in BUILT_IN) | {"sources", "judge_base_url", "scored_from", "prices",
                                                      "replay_recorded_at", "replay_model"}


def all_settings() -> tuple[Setting[Any], ...]:
    """Every row: the built-in ones, then the plugins'."""
    return (*BUILT_IN, *SETTINGS)


def setting(name: str) -> Setting[Any]:
    """The row of `name`; a name with no row is a KeyError (a bug, not a user's mistake)."""
    row = _BY_NAME.get(name)
    if row is not None:
        return row
    for row in SETTINGS:
        if row.name == name:
            return row
    raise KeyError(f"no setting is named {name!r}")


def without_plugin_keys(block: Mapping[str, Any], known: Collection[str] = ()) -> Mapping[str, Any]:
    """The suite block without the keys plugins' settings read (`suite_key`, "a.b" a nested one) that the
    block's own schema does not know (`known`: its keys, dotted; one it knows is still checked by it);
    `block` itself is left as it is."""
    for row in SETTINGS:
        if row.suite_key and row.suite_key not in known:
            block = _without(block, row.suite_key.split("."))
    return block


def _without(block: Mapping[str, Any], path: list[str]) -> Mapping[str, Any]:
    head, *rest = path
    if not isinstance(block, Mapping) or head not in block:
        return block
    if not rest:
        return {key: value for key, value in block.items() if key != head}
    return {**block, head: _without(block[head], rest)}


def register_setting(row: Setting[Any]) -> None:
    """Add a setting; a name (or flag) that a built-in setting or another module holds is a ConfigError, and
    so is a row whose fields cannot work (`setting_problem`)."""
    from agent_eval.plugins import claim, current

    if problem := setting_problem(row):
        from agent_eval.errors import ConfigError

        raise ConfigError(f"the setting {getattr(row, 'name', row)!r} of {current()}: {problem}")
    if row.key != row.name:  # its key in the report's settings (and sources) is held as a name is
        claim("setting", row.key, _BUILT_IN_NAMES | _BUILT_IN_KEYS, __name__)
    claim("setting", row.name, _BUILT_IN_NAMES | _BUILT_IN_KEYS, __name__)
    for flag in row.flags:
        claim("flag", flag, (), __name__)
    SETTINGS[:] = [s for s in SETTINGS if s.name != row.name] + [row]


_TYPES = (str, int, float, bool, Path)
_OPTION_KEYS = frozenset({"min", "max", "clamp", "metavar", "show_default", "hidden", "rich_help_panel",
                          "case_sensitive", "exists", "file_okay", "dir_okay", "writable", "readable", "resolve_path",
                          "allow_dash"})
_RULES = (True, False, *get_args(ResumeRule))


def setting_problem(row: Setting[Any]) -> str | None:
    """Why a registered row cannot work (its name is not a Python name, a type the command line cannot
    read, a flag without its dash, an unknown `resume` rule or `shown` form), or None."""
    if not isinstance(row, Setting):
        return f"register_setting takes a Setting(...), not {type(row).__name__}."
    if not row.name.isidentifier() or keyword.iskeyword(row.name):
        return "its name must be a Python name (letters, digits and _), as run_suite() takes it: rename it."
    if row.name in ("command", "explicit"):
        return f"{row.name!r} is a name the flags hold for themselves (their command, the flags typed): rename it."
    if row.type not in _TYPES:
        given = row.type.__name__ if isinstance(row.type, type) else f"the text {row.type!r}"
        return f"its type must be str, int, float, bool or Path (repeatable=True for several values), not {given}."
    bad = [f for f in row.flags if not isinstance(f, str) or not f.startswith("-") or f in ("-", "--")]
    if bad:
        return f"a flag starts with - or -- (\"--{row.name.replace('_', '-')}\"), not {bad[0]!r}."
    if row.type is bool and row.default not in (None, False) and not row.eager:
        return ("a switch (type bool) is off until its flag is given, so its default is False (its environment "
                "variable or suite key may turn it on); for one that is on by default, name the flag --no-X.")
    if "--help" in row.flags:
        return "--help is every command's own flag (it shows the command's help): give the setting another flag."
    if row.option and (unknown := sorted(set(row.option) - _OPTION_KEYS)):
        return (f"option takes {', '.join(sorted(_OPTION_KEYS))} (more of the flag's typer.Option), "
                f"not {', '.join(map(repr, unknown))}.")
    if row.resume not in _RULES:
        return f"resume must be \"kept\", \"renewed\", \"command\", True or False, not {row.resume!r}."
    if row.shown not in get_args(Shown):
        return f"shown must be one of {', '.join(map(repr, get_args(Shown)))}, not {row.shown!r}."
    return None
