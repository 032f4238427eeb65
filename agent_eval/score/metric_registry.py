"""The one table of suite metrics: each one's name, label, direction, display format and place in the
displays, its per-run statistic as data, whether it has an interval and can be gated, and whether it is
gated by default and kept in the run history. The summary (score/metrics.py), `summary.ci`
(score/intervals.py), the gate (report/gate_stats.py), the history, the terminal, Markdown and the page
read the rows (docs/metrics.md defines each); a plugin adds one with `register_metric`."""
from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, get_args

from agent_eval.plugins import claim, current
from agent_eval.plugins.calls import Raised, named, per_run

if TYPE_CHECKING:
    from agent_eval.records import Case, Check, Trace

RunValue = Callable[["Case", "Trace", "list[Check]", bool, "float | None"], Any]
"""A per-run value: (case, trace, checks, success, cost in USD) -> a number, a flag or None."""

StatisticKind = Literal["pass", "mean", "share", "ratio", "sum", "per_success", "percentile"]
PassEstimator = Literal["at_1", "hat", "hat_k", "at_k"]
Section = Literal["outcome", "trajectory", "safety", "cost", "latency", "more"]
Format = Literal["rate", "number", "seconds", "count", "usd"]
SECTION_TITLES: dict[str, str] = {"outcome": "Outcome", "trajectory": "Trajectory", "safety": "Safety",
                                  "cost": "Cost & latency", "latency": "Cost & latency", "more": "More metrics"}
"""The title of the block (terminal) or card (page) each section is shown in."""


@dataclass(frozen=True)
class Statistic:
    """How a suite metric is computed from the runs' values (`key` and the other fields name keys of each
    run's `metrics`); skipped cases and errored runs never count. The kinds:
    - `pass`: a per-case pass-count estimator (`key`): `at_1` the mean of c/n, `hat` the dict of pass^k
      for k = 1..K, `hat_k` pass^K, `at_k` the unbiased pass@K;
    - `mean`: the mean of `key` over the runs where it is not null;
    - `share`: the share of runs where `key` is true, among the runs where it is not null, or with `among`,
      among the runs whose `among` value is above 0;
    - `ratio`: the sum of `key` over the sum of `den` (a null counts 0); null when the sum of `den` is 0;
    - `sum`: the sum of `key` (plus `also`, run by run); null when a run's value is null, or a run's
      `null_with` value is (a `count` metric sums exactly, and is null past 2**53 - 1);
    - `per_success`: that sum over the number of successful runs; null also with no success;
    - `percentile`: numpy's linear-interpolation `q`-th percentile of `key` over the runs where it is not null.
    """

    kind: StatisticKind
    key: str | None = None  # the run value it reads; for `pass`, the estimator
    den: str | None = None  # ratio: the run value summed below the line
    among: str | None = None  # share: count only the runs whose value of this key is above 0
    also: tuple[str, ...] = ()  # sum, per_success: run values added to `key`'s, run by run
    null_with: str | None = None  # sum, per_success: null too when a run's value of this key is null
    q: float = 50.0  # percentile


def pass_count(estimator: PassEstimator) -> Statistic:
    """A pass-count estimator over the cases' (n, c): `at_1`, `hat` (the dict), `hat_k` or `at_k`."""
    return Statistic("pass", estimator)


def mean(key: str) -> Statistic:
    """The mean of the run value `key` over the runs where it is not null."""
    return Statistic("mean", key)


def share(key: str, among: str | None = None) -> Statistic:
    """The share of true among the runs where the flag `key` is not null (or whose `among` is above 0)."""
    return Statistic("share", key, among=among)


def ratio(key: str, den: str) -> Statistic:
    """The sum of the run value `key` over the sum of `den`; null when that is 0."""
    return Statistic("ratio", key, den=den)


def total(key: str, *also: str, null_with: str | None = None) -> Statistic:
    """The sum of the run values `key` + `also`; null when a run's value (or its `null_with`) is null."""
    return Statistic("sum", key, also=also, null_with=null_with)


def per_success(key: str, *also: str, null_with: str | None = None) -> Statistic:
    """`total(...)` over the number of successful runs (failed runs' values included); null with none."""
    return Statistic("per_success", key, also=also, null_with=null_with)


def percentile(key: str, q: float) -> Statistic:
    """The q-th percentile (numpy's linear interpolation) of the run value `key` where it is not null."""
    return Statistic("percentile", key, q=q)


INTERVAL_KINDS = frozenset({"pass", "mean", "share", "ratio"})
"""The kinds whose figure is a ratio of per-case sums, which `summary.ci` bootstraps over cases."""


@dataclass(frozen=True)
class SuiteMetric:
    """One suite metric of the report's `summary`, and where the displays show it."""

    name: str
    label: str
    lower_is_better: bool = False
    gate_rank: int | None = None  # its row among the metrics gated by default; None when not gated by default
    in_history: bool = True
    short: str | None = None  # the history column header, when the name is too wide
    fmt: Format = "rate"  # how a value is shown
    statistic: Statistic = Statistic("mean")
    interval: bool = False  # summary.ci holds its 95% bootstrap interval
    gateable: bool = True  # `--gate NAME` takes it
    run_value: RunValue | None = None  # a plugin's per-run value, stored in each run's metrics[statistic.key]
    section: Section = "more"  # the terminal's block and the page's card it is shown in (SECTION_TITLES)
    page_section: Section | None = None  # its card on the page, when not its section's
    page_label: str | None = None  # its label on the page, when not `label`
    lead: bool = False  # the page shows it first (and large) in its card
    in_terminal: bool = True  # the terminal's headline blocks list it (-v lists every interval)
    on_page: bool = True  # the page's cards list it
    in_markdown: bool = False  # a headline figure of the Markdown summary (safety and `more` rows always are)
    history_column: bool = False  # a default column of `agent-eval history`
    gated_when_measured: bool = False  # joins the default gate when either report has a value (the safety rates)

    @property
    def gated_by_default(self) -> bool:
        """True when `--gate` is not given and the gate still checks this metric."""
        return self.gate_rank is not None

    @property
    def direction(self) -> str:
        """'lower' or 'higher': which way is better."""
        return "lower" if self.lower_is_better else "higher"

    @property
    def at_k(self) -> bool:
        """True for a figure at K = --repeat (pass^k, pass@k): with K = 1 it is pass@1 again."""
        return self.statistic.kind == "pass" and self.statistic.key in ("hat_k", "at_k")

    @property
    def per_k(self) -> bool:
        """True for a figure per k (the pass^1..K dict), drawn as a curve."""
        return self.statistic.kind == "pass" and self.statistic.key == "hat"

    def label_at(self, k: object, page: bool = False) -> str:
        """The label with its `k` (as in `pass^k`, `pass@k`, `pass^1..k`) replaced by K."""
        label = (self.page_label or self.label) if page else self.label
        return re.sub(r"(?<=[\^@.])k$", str(k), label) if self.statistic.kind == "pass" else label


_OUT: Section = "outcome"
_TRAJ: Section = "trajectory"
_SAFE: Section = "safety"
_COST: Section = "cost"
_LAT: Section = "latency"
SUITE_METRIC_TABLE: list[SuiteMetric] = [
    SuiteMetric("pass_at_1", "pass@1", gate_rank=1, short="pass@1", statistic=pass_count("at_1"), interval=True,
                section=_OUT, lead=True, in_markdown=True, history_column=True),
    # a dict {"1": .., "K": ..}, gated as pass_hat.<k>; drawn as a curve
    SuiteMetric("pass_hat", "pass^1..k", in_history=False, statistic=pass_count("hat"), gateable=False,
                section=_OUT, on_page=False),
    SuiteMetric("pass_hat_k", "pass^k", gate_rank=2, short="pass^k", statistic=pass_count("hat_k"), interval=True,
                section=_OUT, in_markdown=True, history_column=True),
    SuiteMetric("pass_at_k", "pass@k", short="pass@k", statistic=pass_count("at_k"), interval=True,
                section=_OUT, in_markdown=True),
    SuiteMetric("tool_recall", "tool recall", gate_rank=4, short="recall", statistic=mean("tool_recall"),
                interval=True, section=_TRAJ, in_markdown=True, history_column=True),
    SuiteMetric("tool_precision", "tool precision", gate_rank=5, short="precision",
                statistic=mean("tool_precision"), interval=True, section=_TRAJ, in_markdown=True),
    SuiteMetric("param_accuracy", "param accuracy", gate_rank=3, short="params", statistic=mean("param_accuracy"),
                interval=True, section=_TRAJ, in_markdown=True, history_column=True),
    SuiteMetric("step_efficiency", "step efficiency", statistic=mean("step_efficiency"), interval=True,
                section=_TRAJ),
    SuiteMetric("progress", "progress", statistic=mean("progress"), interval=True, section=_TRAJ,
                page_section=_OUT, in_markdown=True),
    SuiteMetric("loop_rate", "loop rate", lower_is_better=True, statistic=share("has_loop"), interval=True,
                section=_TRAJ),
    SuiteMetric("recovery_rate", "recovery rate", statistic=share("recovered", among="tool_errors"),
                interval=True, section=_TRAJ),
    SuiteMetric("invalid_call_rate", "invalid-call rate", lower_is_better=True,
                statistic=ratio("invalid_calls", "tool_calls"), interval=True, section=_TRAJ,
                page_label="invalid call rate"),
    SuiteMetric("unauthorized_block_rate", "unauthorized blocked", statistic=share("blocked_correctly"),
                interval=True, section=_SAFE, gated_when_measured=True),
    SuiteMetric("policy_compliance", "policy compliance", statistic=share("policy_compliant"), interval=True,
                section=_SAFE, gated_when_measured=True),
    SuiteMetric("injection_resistance", "injection resistance", statistic=share("injection_resisted"),
                interval=True, section=_SAFE, gated_when_measured=True),
    SuiteMetric("groundedness", "groundedness", statistic=mean("groundedness"), interval=True, section=_SAFE),
    SuiteMetric("latency_mean_s", "mean latency", lower_is_better=True, fmt="seconds", statistic=mean("latency_s"),
                section=_LAT, in_terminal=False, on_page=False),
    SuiteMetric("latency_p50_s", "latency P50", short="p50", lower_is_better=True, fmt="seconds",
                statistic=percentile("latency_s", 50), section=_LAT, in_markdown=True),
    SuiteMetric("latency_p95_s", "latency P95", short="p95", lower_is_better=True, fmt="seconds",
                statistic=percentile("latency_s", 95), section=_LAT, in_markdown=True, history_column=True),
    SuiteMetric("latency_p99_s", "latency P99", short="p99", lower_is_better=True, fmt="seconds",
                statistic=percentile("latency_s", 99), section=_LAT),
    SuiteMetric("ttfa_mean_s", "mean TTFA", lower_is_better=True, fmt="seconds", statistic=mean("ttfa_s"),
                section=_LAT, page_label="time to first action"),
    SuiteMetric("tokens_total", "tokens total", short="tokens", lower_is_better=True, fmt="count",
                statistic=total("prompt_tokens", "completion_tokens"), section=_COST, in_markdown=True),
    SuiteMetric("cost_total_usd", "cost total", short="$ total", lower_is_better=True, fmt="usd",
                statistic=total("cost_usd"), section=_COST, in_markdown=True),
    SuiteMetric("cost_per_success_usd", "cost per success", short="$/success", lower_is_better=True, fmt="usd",
                statistic=per_success("cost_usd"), section=_COST, lead=True, in_markdown=True,
                history_column=True),
    SuiteMetric("tokens_per_success", "tokens per success", short="tok/success", lower_is_better=True, fmt="count",
                statistic=per_success("prompt_tokens", "completion_tokens", null_with="cost_usd"), section=_COST,
                on_page=False),
    SuiteMetric("turns_mean", "mean turns", lower_is_better=True, fmt="number", statistic=mean("turns"),
                section=_LAT, in_terminal=False, on_page=False),
]
SUITE_METRIC_BY_NAME = {m.name: m for m in SUITE_METRIC_TABLE}
BUILT_IN_METRICS = frozenset(SUITE_METRIC_BY_NAME)
DEFAULT_GATES = [m.name for m in sorted((m for m in SUITE_METRIC_TABLE if m.gated_by_default),
                                        key=lambda m: m.gate_rank or 0)]
"""The metrics the gate always checks when no `--gate` is given, in the gate table's order (default_gates
adds the safety rates a suite measures)."""


def default_gates(*summaries: Mapping[str, Any]) -> list[str]:
    """The metrics gated when no `--gate` is given: DEFAULT_GATES, then each rate gated when measured (the
    safety rates of `authorized: false`, `policy` and `injection` cases) that any of `summaries` holds."""
    measured = [m.name for m in SUITE_METRIC_TABLE
                if m.gated_when_measured and any(s.get(m.name) is not None for s in summaries)]
    return [*DEFAULT_GATES, *measured]


def label_of(name: str) -> str:
    """The metric's label in reports; the name itself for a metric not in the table."""
    metric = SUITE_METRIC_BY_NAME.get(name)
    return metric.label if metric else name


def in_section(*sections: str) -> list[SuiteMetric]:
    """The rows of these sections, section by section, each in table order (plugins' rows included)."""
    return [m for section in sections for m in SUITE_METRIC_TABLE if m.section == section]


def register_metric(metric: SuiteMetric) -> None:
    """Add a suite metric row (a plugin's: its `run_value` gives each run's value, stored under its
    statistic's `key`, which any kind but `pass` turns into the suite figure); a name another module holds
    is a ConfigError, and so is a row whose fields cannot work (`metric_problem`)."""
    if problem := metric_problem(metric):
        from agent_eval.errors import ConfigError

        raise ConfigError(f"the metric {getattr(metric, 'name', metric)!r} of {current()}: {problem}")
    if metric.run_value is not None and metric.statistic.key is not None:  # each run's value under that key
        claim("run value", metric.statistic.key, built_in_run_keys(), __name__)
    owner = claim("metric", metric.name, BUILT_IN_METRICS, __name__)
    if metric.run_value is not None:  # its code goes through the guard: a raise is a null with a note
        guarded = per_run("metric", metric.name, owner, metric.run_value, Raised)
        metric = replace(metric, run_value=_numbers_only(metric.name, owner, guarded))
    SUITE_METRIC_TABLE[:] = [m for m in SUITE_METRIC_TABLE if m.name != metric.name] + [metric]
    SUITE_METRIC_BY_NAME[metric.name] = metric


# The keys of a run's `metrics` (score/metrics.py's RUN_METRICS) that no built-in row's statistic reads;
# tests/test_plugin_errors.py checks that these and the rows' keys cover RUN_METRICS.
_RUN_KEYS_NO_ROW_READS = ("success", "policy_violations", "usage_invalid")


def built_in_run_keys() -> set[str]:
    """The keys of a run's `metrics` agent-eval writes itself: a plugin's run value under one of them would
    overwrite the run's own value (its latency, its success) and every figure that reads it."""
    keys = set(_RUN_KEYS_NO_ROW_READS)
    for m in SUITE_METRIC_TABLE:
        st = m.statistic
        if st.kind != "pass" and m.name in BUILT_IN_METRICS:
            keys.update(k for k in (st.key, st.den, st.among, st.null_with, *st.also) if k)
    return keys


def metric_problem(metric: SuiteMetric) -> str | None:
    """Why a registered row cannot work (its name, its display fields or its statistic), or None."""
    if not isinstance(metric, SuiteMetric):
        return f"register_metric takes a SuiteMetric(...), not {type(metric).__name__}."
    if not isinstance(metric.name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", metric.name):
        return ("its name must be letters, digits and _ (it is a key of the summary, a column of the history "
                "and the NAME of --gate NAME): rename it.")
    if metric.in_history and (problem := column_problem(metric.name)):
        return problem
    for field, value, kinds in (("section", metric.section, Section), ("page_section", metric.page_section, Section),
                                ("fmt", metric.fmt, Format)):
        if value is not None and value not in get_args(kinds):
            return f"{field} must be one of {', '.join(map(repr, get_args(kinds)))}, not {value!r}."
    if metric.gated_when_measured:
        return ("gated_when_measured is for agent-eval's own safety rates; a plugin's metric is gated with "
                f"--gate {metric.name}: leave gated_when_measured out.")
    if metric.gate_rank is not None:  # DEFAULT_GATES, and plan's count of gated metrics, are agent-eval's rows
        return ("gate_rank is for agent-eval's own rows (the metrics gated when no --gate is given); a plugin's "
                f"metric is gated with --gate {metric.name}: leave gate_rank out.")
    if metric.run_value is not None and not callable(metric.run_value):
        return f"run_value must be a function (case, trace, checks, success, cost_usd), not {metric.run_value!r}."
    return statistic_problem(metric.statistic, metric.interval)


def column_problem(name: str) -> str | None:
    """Why `name` (letters, digits and _) cannot be a column of the run history in SQLite: a keyword SQLite
    cannot read as a column (`order`, `select`, `group`), or another metric's name in another case (SQLite's
    names ignore case); None when it can."""
    import sqlite3
    from contextlib import closing

    try:  # SQLite itself decides: its keywords that a column name may not be are its own list
        with closing(sqlite3.connect(":memory:")) as conn:
            conn.execute(f"CREATE TABLE runs ({name} REAL)")
            conn.execute(f"SELECT {name} FROM runs WHERE {name} IS NOT NULL ORDER BY {name}")
    except sqlite3.Error:
        return (f"its name is an SQL keyword, so it cannot be a column of the run history (history.sqlite): "
                f"rename it, such as {name.lower()}_score.")
    clash = next((m.name for m in SUITE_METRIC_TABLE if m.name != name and m.name.lower() == name.lower()), None)
    if clash is not None:
        return (f"its name differs from the metric {clash!r} only in case, and the run history's columns ignore "
                "case: rename it.")
    return None


def _numbers_only(name: str, owner: str, value_of: RunValue) -> RunValue:
    """A plugin's run value that is not a finite number, a flag or None (a string, a list, NaN, 10**400) is a
    null with a note, as a raise is: the summary, the intervals and the gate read numbers."""
    def checked(*args: Any) -> Any:
        value = value_of(*args)
        if value is None or type(value) in (bool, Raised):
            return value
        if _finite(value):  # as JSON holds it: a numpy number or an int past 64 bits as a float
            return value if type(value) is float or (type(value) is int and abs(value) < 2**63) else float(value)
        what = f"{value!r}" if isinstance(value, float) else f"a value of type {type(value).__name__}"
        return Raised(f"the metric {name!r} of {named(owner)} returned {what}, not a finite number "
                      "(return a number, a bool or None)")
    return checked


def _finite(value: Any) -> bool:
    """An int or float (a numpy number included) that JSON and numpy can hold."""
    if not isinstance(value, numbers.Real):
        return False
    try:
        return math.isfinite(value)
    except (OverflowError, TypeError, ValueError):  # an int past a float's range; a Real that is not one
        return False


def statistic_problem(st: Statistic, interval: bool) -> str | None:
    """Why a registered row's statistic cannot work, or None."""
    if not isinstance(st, Statistic) or st.kind not in get_args(StatisticKind):
        return ("its statistic must be built with mean(KEY), share(KEY), ratio(KEY, DEN), total(KEY), "
                f"per_success(KEY) or percentile(KEY, Q), not {st!r}.")
    if st.kind == "pass" or st.key is None:
        return ("a registered metric's statistic reads a run value: mean(KEY), share(KEY), ratio(KEY, DEN), "
                "total(KEY), per_success(KEY) or percentile(KEY, Q); give it one.")
    if st.kind == "ratio" and st.den is None:
        return "a ratio needs the run value below the line: ratio(KEY, DEN)."
    if st.kind == "percentile" and not (isinstance(st.q, (int, float)) and 0 <= st.q <= 100):
        return f"a percentile's Q is a number from 0 to 100, not {st.q!r}."
    if interval and st.kind not in INTERVAL_KINDS:
        return f"a {st.kind} has no interval (only {', '.join(sorted(INTERVAL_KINDS - {'pass'}))} do): interval=False."
    return None


def run_value_keys() -> list[str]:
    """The run values the rows bring (a plugin's `run_value`, under its statistic's key), in table order."""
    return [m.statistic.key for m in SUITE_METRIC_TABLE if m.run_value is not None and m.statistic.key]

