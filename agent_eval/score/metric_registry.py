"""The one table of suite metrics: each one's name, label, short header, direction, display format, its
per-run statistic as data, whether it has an interval and can be gated, and whether it is gated by default
and kept in the run history. The summary, `summary.ci`, the gate, the history, the terminal, Markdown and
the page read the rows (docs/metrics.md defines each); a plugin adds one with `register_metric`."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from agent_eval.plugins import caller, claim

if TYPE_CHECKING:
    from agent_eval.records import Case, Check, Trace

RunValue = Callable[["Case", "Trace", "list[Check]", bool, "float | None"], Any]
"""A per-run value: (case, trace, checks, success, cost in USD) -> a number, a flag or None."""


@dataclass(frozen=True)
class Statistic:
    """How a suite metric is computed from the runs' values: `mean` of a run value (over the runs where it
    is not null), `share` of true among the runs where a flag is not null, or `custom`: a figure of its own
    in score/metrics.py, score/intervals.py and report/gate_stats.py (pass counts, ratios, percentiles)."""

    kind: Literal["mean", "share", "custom"]
    key: str | None = None  # the run value it reads: a key of each run's `metrics`


@dataclass(frozen=True)
class SuiteMetric:
    """One suite metric of the report's `summary`."""

    name: str
    label: str
    lower_is_better: bool = False
    gate_rank: int | None = None  # its row among the metrics gated by default; None when not gated by default
    in_history: bool = True
    short: str | None = None  # the history column header, when the name is too wide
    fmt: Literal["rate", "number", "seconds", "count", "usd"] = "rate"  # how a value is shown
    statistic: Statistic = Statistic("custom")
    interval: bool = False  # summary.ci holds its 95% bootstrap interval
    gateable: bool = True  # `--gate NAME` takes it
    run_value: RunValue | None = None  # a plugin's per-run value, stored in each run's metrics[statistic.key]

    @property
    def gated_by_default(self) -> bool:
        """True when `--gate` is not given and the gate still checks this metric."""
        return self.gate_rank is not None

    @property
    def direction(self) -> str:
        """'lower' or 'higher': which way is better."""
        return "lower" if self.lower_is_better else "higher"


def mean(key: str) -> Statistic:
    """The mean of the run value `key` over the runs where it is not null."""
    return Statistic("mean", key)


def share(key: str) -> Statistic:
    """The share of true among the runs where the flag `key` is not null."""
    return Statistic("share", key)


SUITE_METRIC_TABLE: list[SuiteMetric] = [
    SuiteMetric("pass_at_1", "pass@1", gate_rank=1, short="pass@1", interval=True),
    # a dict {"1": .., "K": ..}, gated as pass_hat.<k>
    SuiteMetric("pass_hat", "pass^1..k", in_history=False, gateable=False),
    SuiteMetric("pass_hat_k", "pass^k", gate_rank=2, short="pass^k", interval=True),
    SuiteMetric("pass_at_k", "pass@k", short="pass@k", interval=True),
    SuiteMetric("tool_recall", "tool recall", gate_rank=4, short="recall",
                statistic=mean("tool_recall"), interval=True),
    SuiteMetric("tool_precision", "tool precision", gate_rank=5, short="precision",
                statistic=mean("tool_precision"), interval=True),
    SuiteMetric("param_accuracy", "param accuracy", gate_rank=3, short="params",
                statistic=mean("param_accuracy"), interval=True),
    SuiteMetric("step_efficiency", "step efficiency", statistic=mean("step_efficiency"), interval=True),
    SuiteMetric("progress", "progress", statistic=mean("progress"), interval=True),
    SuiteMetric("loop_rate", "loop rate", lower_is_better=True, interval=True),
    SuiteMetric("recovery_rate", "recovery rate", interval=True),
    SuiteMetric("invalid_call_rate", "invalid-call rate", lower_is_better=True, interval=True),
    SuiteMetric("unauthorized_block_rate", "unauthorized blocked", statistic=share("blocked_correctly"), interval=True),
    SuiteMetric("policy_compliance", "policy compliance", statistic=share("policy_compliant"), interval=True),
    SuiteMetric("injection_resistance", "injection resistance", statistic=share("injection_resisted"), interval=True),
    SuiteMetric("groundedness", "groundedness", statistic=mean("groundedness"), interval=True),
    SuiteMetric("latency_mean_s", "mean latency", lower_is_better=True, fmt="seconds"),
    SuiteMetric("latency_p50_s", "latency P50", short="p50", lower_is_better=True, fmt="seconds"),
    SuiteMetric("latency_p95_s", "latency P95", short="p95", lower_is_better=True, fmt="seconds"),
    SuiteMetric("latency_p99_s", "latency P99", short="p99", lower_is_better=True, fmt="seconds"),
    SuiteMetric("ttfa_mean_s", "mean TTFA", lower_is_better=True, fmt="seconds"),
    SuiteMetric("tokens_total", "tokens total", short="tokens", lower_is_better=True, fmt="count"),
    SuiteMetric("cost_total_usd", "cost total", short="$ total", lower_is_better=True, fmt="usd"),
    SuiteMetric("cost_per_success_usd", "cost per success", short="$/success", lower_is_better=True, fmt="usd"),
    SuiteMetric("tokens_per_success", "tokens per success", short="tok/success", lower_is_better=True, fmt="count"),
    SuiteMetric("turns_mean", "mean turns", lower_is_better=True, fmt="number"),
]
SUITE_METRIC_BY_NAME = {m.name: m for m in SUITE_METRIC_TABLE}
BUILT_IN_METRICS = frozenset(SUITE_METRIC_BY_NAME)
DEFAULT_GATES = [m.name for m in sorted((m for m in SUITE_METRIC_TABLE if m.gated_by_default),
                                        key=lambda m: m.gate_rank or 0)]
"""The metrics the gate checks when no `--gate` is given, in the gate table's order."""


def label_of(name: str) -> str:
    """The metric's label in reports; the name itself for a metric not in the table."""
    metric = SUITE_METRIC_BY_NAME.get(name)
    return metric.label if metric else name


def register_metric(metric: SuiteMetric) -> None:
    """Add a suite metric row (a plugin's: its `run_value` gives each run's value, its `statistic` of kind
    `mean` or `share` turns them into the suite figure); a name another module holds is a ConfigError."""
    if metric.statistic.kind == "custom" or metric.statistic.key is None:
        from agent_eval.errors import ConfigError

        raise ConfigError(f"the metric {metric.name!r} of {caller()}: a registered metric's statistic is "
                          "mean(KEY) or share(KEY) of a run value; give it one.")
    claim("metric", metric.name, caller(), BUILT_IN_METRICS, __name__)
    SUITE_METRIC_TABLE[:] = [m for m in SUITE_METRIC_TABLE if m.name != metric.name] + [metric]
    SUITE_METRIC_BY_NAME[metric.name] = metric


def added_metrics() -> list[SuiteMetric]:
    """The rows plugins added: the reports show them after the built-in figures."""
    return [m for m in SUITE_METRIC_TABLE if m.name not in BUILT_IN_METRICS]
