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
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from agent_eval.flags.setting import DEFAULTS, ResumeRule, Setting, Shown, count, elsewhere, seconds
from agent_eval.limits import MAX_COUNT

if TYPE_CHECKING:
    from agent_eval.provider.throttle import RateLimit
    from agent_eval.run.config import Given, Settings


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

# The order is each command's --help order and the order in which `run` resolves its settings.
LABELS: Setting[Path] = _row("labels", Path, ("--labels",), "The labels file (JSON Lines) of that report.",
    ("calibrate",), default=..., eager=True)
CASES: Setting[Path] = _row("cases", Path, ("--cases",), _CASES_HELP,
    ("run", "list", "validate", "history", "score", "rescore", "label", "calibrate", "compare"), "kept",
    default=DEFAULTS.cases, eager=True, resolve=elsewhere,
    command_help={"rescore": _REPORT_CASES, "label": _REPORT_CASES, "calibrate": _REPORT_CASES,
                  "compare": _COMPARE_CASES},
    command_default={"rescore": None, "label": None, "calibrate": None, "compare": None})
REPORT: Setting[Path | None] = _row("report", Path, (), "", ("rescore",))  # rescore's REPORT argument
TRACES: Setting[Path | None] = _row("traces", Path, (), "", ("score",))  # score's TRACES argument
OUT: Setting[Path | None] = _row("out", Path, ("--out",), "", ("view", "import", "label"), command_help={
    "view": "The page (default: REPORT as .html).", "import": "Write the case file here (default: stdout).",
    "label": "The labels file (default: <report stem>.labels.jsonl)."})
INTO: Setting[Path | None] = _row("into", Path, ("--into",), "Append the cases to this case file (its suite kept).",
    ("import",))
TOOLS: Setting[str | None] = _row("tools", str, ("--tools",), "The tools module the cases are validated against.",
    ("import",))
FORMAT: Setting[str | None] = _row("format", str, ("--format",), "otel, inspect or agent-eval (default: detected).",
    ("score",))
LOGS: Setting[Path | None] = _row("logs", Path, ("--logs",),
    "An OTLP logs export whose GenAI events hold the traces' messages.", ("score", "import"))
FILTER: Setting[tuple[str, ...]] = _row("filter", str, ("--filter",),
    "Keep cases whose id or a tag contains TEXT (repeatable).", ("run", "list", "score"), "kept", "value",
    repeatable=True, default=(), report=3)
REPEAT: Setting[int] = _row("repeat", int, ("--repeat", "-k"), f"Runs per case (default {DEFAULTS.repeat}).", ("run",),
    "kept", "value", suite_key="defaults.repeat", default=DEFAULTS.repeat, check=count, report=1)
THRESHOLD: Setting[float] = _row("threshold", float, ("--threshold",),
    f"Pass rate a case needs (default {DEFAULTS.threshold}).", _SCORED, "kept", "value", suite_key="defaults.threshold",
    default=DEFAULTS.threshold, check=_share, report=2)
NO_JUDGE: Setting[bool] = _row("no_judge", bool, ("--no-judge",), "Never call the judge; skip rubric-only cases.",
    _RESCORED, "kept", "value", attr="judge", negated=True, default=False, report=4)
AGENT: Setting[str] = _row("agent", str, ("--agent",),
    "openai, file.py:function, module:function or \"cmd:COMMAND ARGS...\".", ("run", "validate"), "kept", "urls",
    suite_key="agent", default="openai", command_help={"validate": "Also load this agent, as run would."}, report=14)
MODEL: Setting[str | None] = _row("model", str, ("--model",), "The agent's model (AGENT_EVAL_MODEL).", ("run",), "kept",
    "value", env="AGENT_EVAL_MODEL", suite_key="model", report=15)
BASE_URL: Setting[str | None] = _row("base_url", str, ("--base-url",), "OpenAI-compatible endpoint (OPENAI_BASE_URL).",
    ("run",), "kept", "url", env="OPENAI_BASE_URL", report=12)
PAIRWISE: Setting[bool] = _row("pairwise", bool, ("--pairwise",), "Judge each pair of answers, both orders.",
    ("compare",))
JUDGE_MODEL: Setting[str | None] = _row("judge_model", str, ("--judge-model",),
    "The judge's model (AGENT_EVAL_JUDGE_MODEL).", ("run", "rescore", "compare", "score", "calibrate"), "kept", "value",
    report=5)
JUDGE_TIMEOUT: Setting[float] = _row("judge_timeout", float, ("--judge-timeout",),
    "Seconds each judge or simulator request may take, "
    f"retries included (default {DEFAULTS.judge_timeout:g}).", ("run", "rescore", "score", "calibrate"), "renewed",
    "value", default=DEFAULTS.judge_timeout, check=seconds(DEFAULTS.judge_timeout), report=11)
JUDGE_REPEAT: Setting[int | None] = _row("judge_repeat", int, ("--judge-repeat",), "N uncached judge answers per run.",
    ("rescore", "compare", "calibrate"), command_help={"compare": "N uncached answers per order (--pairwise).",
                                                       "calibrate": "Compare N fresh majority verdicts."}, check=count)
NO_CACHE: Setting[bool] = _row("no_cache", bool, ("--no-cache",), "Ask the judge again; ignore cached answers.",
    ("run",), "kept", "value", default=False, report=7)
CONCURRENCY: Setting[int] = _row("concurrency", int, ("--concurrency",),
    f"Runs at once (default {DEFAULTS.concurrency}).", ("run",), shown="value", default=DEFAULTS.concurrency,
    check=count, report=8)
MAX_STEPS: Setting[int] = _row("max_steps", int, ("--max-steps",),
    f"Model completions per user turn (default {DEFAULTS.max_steps}).", ("run",), "kept", "value",
    suite_key="max_steps", default=DEFAULTS.max_steps, check=count, report=9)
TIMEOUT: Setting[float | None] = _row("timeout", float, ("--timeout",), "Seconds one run may take (default: none).",
    ("run",), "kept", "value", check=seconds(), report=10)
OUTPUT_DIR: Setting[Path] = _row("output_dir", Path, ("--output-dir",),
    f"Where reports go (default {DEFAULTS.output_dir}).", ("run", "score", "history"), default=DEFAULTS.output_dir,
    sourced=False, command_help={"history": "Where history.sqlite is."},
    command_default={"history": DEFAULTS.output_dir})
QUIET: Setting[bool] = _row("quiet", bool, ("--quiet", "-q"), "No progress bar; print only the verdict line.",
    _RESCORED, command_help={"rescore": "Print only the verdict line.", "score": "Print only the verdict line."})
BASELINE: Setting[str | None] = _row("baseline", str, ("--baseline",), "Gate against this report (or `last`).", _SCORED)
GATE: Setting[tuple[str, ...]] = _row("gate", str, ("--gate",), "METRIC[=MAX_DROP] to gate on (needs --baseline).",
    ("run", "compare", "score"), repeatable=True, command_help={"compare": "METRIC[=MAX_DROP] to gate on (repeatable).",
                                   "score": "METRIC[=MAX_DROP] to gate on (repeatable)."})
JUNIT: Setting[Path | None] = _row("junit", Path, ("--junit",), "Also write JUnit XML here.", _RESCORED)
MARKDOWN: Setting[Path | None] = _row("markdown", Path, ("--markdown",), "Also append a Markdown summary here.",
    ("run", "rescore", "compare", "score"), command_help={"compare": "Also append the comparison as Markdown here."})
HTML_OUT: Setting[Path | None] = _row("html_out", Path, ("--html",), "Also write the comparison as an HTML page here.",
    ("compare",))
NO_HTML: Setting[bool] = _row("no_html", bool, ("--no-html",), "Do not write the HTML page.", _SCORED, attr="html",
    negated=True)
RESUME: Setting[str | None] = _row("resume", str, ("--resume",), "Finish run RUN_ID: run only what its journal lacks.",
    resolve=elsewhere)
USER: Setting[str | None] = _row("user", str, ("--user",), "Python user simulator (file.py:function).", ("run",),
    "kept", "urls", report=13)
USER_MODEL: Setting[str | None] = _row("user_model", str, ("--user-model",),
    "LLM user simulator (AGENT_EVAL_USER_MODEL).", ("run",), "kept", resolve=elsewhere)
MAX_COST: Setting[float | None] = _row("max_cost", float, ("--max-cost",),
    "Stop taking runs before the spend passes USD.", ("run",), "renewed", "value", check=_dollars, report=26)
VERBOSE: Setting[bool] = _row("verbose", bool, ("--verbose", "-v"),
    "Every failed check of every failed run, all cases.", _SCORED,
    command_help={"score": "Every failed check, and the whole case table."})
# --resume reproduces the ids --lf selected (`last_failed_ids`), not the flag.
LAST_FAILED: Setting[bool] = _row("last_failed", bool, ("--last-failed", "--lf"),
    "Run only the cases that failed or errored in the last run.", report=17, resolve=elsewhere)
EXITFIRST: Setting[bool] = _row("exitfirst", bool, ("--exitfirst", "-x"),
    "Stop taking new runs after the first failure.")
WORKERS: Setting[int] = _row("workers", int, ("--workers",), "Worker processes sharing --concurrency (default 1).",
    shown="value", check=count, report=19)
RAY: Setting[bool] = _row("ray", bool, ("--ray",), "Place the workers on Ray (pip install 'agent-eval-trials\\[ray]').",
    report=20, resolve=elsewhere)
RAY_ADDRESS: Setting[str | None] = _row("ray_address", str, ("--ray-address",),
    "Join this Ray cluster (implies --ray).", resolve=elsewhere)
RAY_RUNTIME_ENV: Setting[dict[str, Any] | None] = _row("ray_runtime_env", str, ("--ray-runtime-env",),
    "Ray's runtime_env, as JSON.", resolve=elsewhere)
OTEL: Setting[Path | None] = _row("otel", Path, ("--otel",),
    "Also write each run as an OpenTelemetry GenAI trace (OTLP/JSON lines) here.", _RESCORED, shown="text",
    sourced=False, report=21)
OTLP_ENDPOINT: Setting[str | None] = _row("otlp_endpoint", str, ("--otlp-endpoint",),
    "Also POST each run's trace here as OTLP/HTTP JSON "
    "(e.g. http://127.0.0.1:4318/v1/traces).", _RESCORED, shown="url", sourced=False, report=22)
RATE_LIMIT: Setting[RateLimit | None] = _row("rate_limit", str, ("--rate-limit",), _RATE_LIMIT_HELP, shown="text",
    env="AGENT_EVAL_RATE_LIMIT", suite_key="rate_limit", report=23)
JUDGE_RATE_LIMIT: Setting[RateLimit | None] = _row("judge_rate_limit", str, ("--judge-rate-limit",),
    "RPM[:BURST] for the judge's and the simulator's "
    "endpoints (default: none).", shown="text", report=24)
RETRY_BUDGET: Setting[float] = _row("retry_budget", float, ("--retry-budget",),
    "Seconds one request may keep retrying rate limits, from its "
    f"first attempt (default {DEFAULTS.retry_budget:g}).", shown="value", default=DEFAULTS.retry_budget,
    check=seconds(DEFAULTS.retry_budget), report=25)
RECORD: Setting[Path | None] = _row("record", Path, ("--record",), "Record each run's model exchanges in DIR.",
    ("run",), "renewed", "text", sourced=False, report=27)
REPLAY: Setting[Path | None] = _row("replay", Path, ("--replay",), "Answer model requests from DIR's recording.",
    ("run",), "renewed", "text", sourced=False, report=28)
REPLAY_MISS: Setting[str] = _row("replay_miss", str, ("--replay-miss",), "error (default) or live: ask the provider.",
    ("run",), "renewed", default="error", report=29)
LAST: Setting[int] = _row("last", int, ("--last",), "How many recent runs to show.", ("history",),
    default=DEFAULTS.history_last, eager=True, option={"min": 1, "max": MAX_COUNT})
METRIC: Setting[tuple[str, ...]] = _row("metric", str, ("--metric",), "A summary metric to show (repeatable).",
    ("history",), repeatable=True)
CASE_ID: Setting[str | None] = _row("case_id", str, ("--case-id",), "Show one case's pass rate over the recent runs.",
    ("history",))
MIN_KAPPA: Setting[float] = _row("min_kappa", float, ("--min-kappa",), "Exit 1 when the overall kappa is below this.",
    ("calibrate",), default=0.6, eager=True)
DETECT: Setting[float] = _row("detect", float, ("--detect",), "The drop of pass_at_1 to detect.", ("plan",),
    default=_DETECT, eager=True)
POWER: Setting[float] = _row("power", float, ("--power",), "The probability of detecting it.", ("plan",),
    default=_POWER, eager=True)
PORT: Setting[int] = _row("port", int, ("--port",), "The port to listen on (0: any free one).", ("scripted-model",),
    default=0, eager=True)
# Set by --resume, never by a flag: the stored --lf selection, and the folder relative agent SPECs start from.
LAST_FAILED_IDS: Setting[tuple[str, ...]] = _row("last_failed_ids", str, (), "", (), repeatable=True)
AGENT_DIR: Setting[Path | None] = _row("agent_dir", Path, (), "", ())

BUILT_IN: tuple[Setting[Any], ...] = (
    LABELS, CASES, REPORT, TRACES, OUT, INTO, TOOLS, FORMAT, LOGS, FILTER, REPEAT, THRESHOLD, NO_JUDGE, AGENT, MODEL,
    BASE_URL, PAIRWISE, JUDGE_MODEL, JUDGE_TIMEOUT, JUDGE_REPEAT, NO_CACHE, CONCURRENCY, MAX_STEPS, TIMEOUT,
    OUTPUT_DIR, QUIET, BASELINE, GATE, JUNIT, MARKDOWN, HTML_OUT, NO_HTML, RESUME, USER, USER_MODEL, MAX_COST,
    VERBOSE, LAST_FAILED, EXITFIRST, WORKERS, RAY, RAY_ADDRESS, RAY_RUNTIME_ENV, OTEL, OTLP_ENDPOINT, RATE_LIMIT,
    JUDGE_RATE_LIMIT, RETRY_BUDGET, RECORD, REPLAY, REPLAY_MISS, LAST, METRIC, CASE_ID, MIN_KAPPA, DETECT, POWER,
    PORT, LAST_FAILED_IDS, AGENT_DIR,
)

SETTINGS: list[Setting[Any]] = []
"""The settings plugins added (`register_setting`), after the built-in ones."""

_BY_NAME = {s.name: s for s in BUILT_IN}  # the built-in rows, as later layers completed them (`attach`)
BUILT_IN_NAMES = frozenset(_BY_NAME)
# The keys of the report's settings block that a plugin's row may not take: the built-in rows' (a --no-X flag's
# X), and those no row owns, which run/settings_block.py writes itself.
BUILT_IN_KEYS = frozenset(s.key for s in BUILT_IN) | {"sources", "judge_base_url", "scored_from", "prices",
                                                     "replay_recorded_at", "replay_model"}


def all_settings() -> tuple[Setting[Any], ...]:
    """Every row: the built-in ones, then the plugins'."""
    return (*_BY_NAME.values(), *SETTINGS)


def setting(name: str) -> Setting[Any]:
    """The row of `name`; a name with no row is a KeyError (a bug, not a user's mistake)."""
    row = _BY_NAME.get(name)
    if row is not None:
        return row
    for row in SETTINGS:
        if row.name == name:
            return row
    raise KeyError(f"no setting is named {name!r}")


def attach(row: Setting[Any], *, resolve: Callable[[Setting[Any], Given], None] | None = None,
           show: Callable[[Settings], Mapping[str, Any]] | None = None) -> None:
    """Give a built-in row its `resolve` or `show` whose code is in a later layer, which flags/ may not import:
    run/config.py attaches its resolvers, run/settings_block.py its shows, when they are imported (a plugin's
    row is given its own in `Setting(...)`)."""
    now = _BY_NAME[row.name]
    _BY_NAME[row.name] = dataclasses.replace(now, resolve=resolve or now.resolve, show=show or now.show)


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
    so is a row whose fields cannot work (`setting_problem`). Its `check`, `resolve` and `show` are called
    through the guard (agent_eval/plugins/calls.py, `once`)."""
    from agent_eval.plugins import claim, current
    from agent_eval.plugins.calls import once

    if problem := setting_problem(row):
        from agent_eval.errors import ConfigError

        raise ConfigError(f"the setting {getattr(row, 'name', row)!r} of {current()}: {problem}")
    if row.key != row.name:  # its key in the report's settings (and sources) is held as a name is
        claim("setting", row.key, BUILT_IN_NAMES | BUILT_IN_KEYS, __name__)
    owner = claim("setting", row.name, BUILT_IN_NAMES | BUILT_IN_KEYS, __name__)
    for flag in row.flags:
        claim("flag", flag, (), __name__)
    # The row's code is the plugin's: one that raises is exit 2 naming it, never a traceback.
    def guard(fn: Any) -> Any:
        return fn and once("setting", row.name, owner, fn)
    row = dataclasses.replace(row, check=guard(row.check and _words(row.check)), resolve=guard(row.resolve),
                              show=guard(row.show and _entries(row.show)))
    SETTINGS[:] = [s for s in SETTINGS if s.name != row.name] + [row]


def _words(check: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    """A plugin row's `check`, whose value must be None (in range) or the words after "must be" (a str)."""
    def checked(value: Any) -> str | None:
        words = check(value)
        if words is not None and not isinstance(words, str):
            raise TypeError(f"its check returned {_a(type(words).__name__)}, not None (in range) or the words after "
                            "\"must be\" (a str)")
        return words
    return checked


def _a(kind: str) -> str:
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def _entries(show: Callable[[Settings], Mapping[str, Any]]) -> Callable[[Settings], Mapping[str, Any]]:
    """A plugin row's `show`, whose value must be the report's `settings` entries (a dict)."""
    def shown(settings: Settings) -> Mapping[str, Any]:
        entries = show(settings)
        if not isinstance(entries, Mapping):
            raise TypeError(f"its show returned {_a(type(entries).__name__)}, not a dict of the report's settings "
                            "entries")
        if own := sorted(set(entries) & BUILT_IN_KEYS):
            raise ValueError(f"its show returned the key {own[0]!r} of agent-eval's own settings; a plugin's row "
                             "shows keys of its own")
        return entries
    return shown


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
    if not all(fn is None or callable(fn) for fn in (row.resolve, row.show, row.check)):
        return "check, resolve and show take a function (check(value), resolve(row, given), show(settings)) or None."
    if row.shown not in get_args(Shown):
        return f"shown must be one of {', '.join(map(repr, get_args(Shown)))}, not {row.shown!r}."
    return None
