"""The one table of suite metrics: each one's name, label, short header, direction, and whether it is
gated by default and kept in the run history. Scoring computes them, the gate, the history and the
reports read their names and labels here (docs/metrics.md defines each)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SuiteMetric:
    """One suite metric of the report's `summary`."""

    name: str
    label: str
    lower_is_better: bool = False
    gate_rank: int | None = None  # its row among the metrics gated by default; None when not gated by default
    in_history: bool = True
    short: str | None = None  # the history column header, when the name is too wide

    @property
    def gated_by_default(self) -> bool:
        """True when `--gate` is not given and the gate still checks this metric."""
        return self.gate_rank is not None

    @property
    def direction(self) -> str:
        """'lower' or 'higher': which way is better."""
        return "lower" if self.lower_is_better else "higher"


SUITE_METRIC_TABLE: tuple[SuiteMetric, ...] = (
    SuiteMetric("pass_at_1", "pass@1", gate_rank=1, short="pass@1"),
    SuiteMetric("pass_hat", "pass^1..k", in_history=False),  # a dict {"1": .., "K": ..}, gated as pass_hat.<k>
    SuiteMetric("pass_hat_k", "pass^k", gate_rank=2, short="pass^k"),
    SuiteMetric("pass_at_k", "pass@k", short="pass@k"),
    SuiteMetric("tool_recall", "tool recall", gate_rank=4, short="recall"),
    SuiteMetric("tool_precision", "tool precision", gate_rank=5, short="precision"),
    SuiteMetric("param_accuracy", "param accuracy", gate_rank=3, short="params"),
    SuiteMetric("step_efficiency", "step efficiency"),
    SuiteMetric("progress", "progress"),
    SuiteMetric("loop_rate", "loop rate", lower_is_better=True),
    SuiteMetric("recovery_rate", "recovery rate"),
    SuiteMetric("invalid_call_rate", "invalid-call rate", lower_is_better=True),
    SuiteMetric("unauthorized_block_rate", "unauthorized blocked"),
    SuiteMetric("policy_compliance", "policy compliance"),
    SuiteMetric("injection_resistance", "injection resistance"),
    SuiteMetric("groundedness", "groundedness"),
    SuiteMetric("latency_mean_s", "mean latency", lower_is_better=True),
    SuiteMetric("latency_p50_s", "latency P50", short="p50", lower_is_better=True),
    SuiteMetric("latency_p95_s", "latency P95", short="p95", lower_is_better=True),
    SuiteMetric("latency_p99_s", "latency P99", short="p99", lower_is_better=True),
    SuiteMetric("ttfa_mean_s", "mean TTFA", lower_is_better=True),
    SuiteMetric("tokens_total", "tokens total", short="tokens", lower_is_better=True),
    SuiteMetric("cost_total_usd", "cost total", short="$ total", lower_is_better=True),
    SuiteMetric("cost_per_success_usd", "cost per success", short="$/success", lower_is_better=True),
    SuiteMetric("tokens_per_success", "tokens per success", short="tok/success", lower_is_better=True),
    SuiteMetric("turns_mean", "mean turns", lower_is_better=True),
)
SUITE_METRIC_BY_NAME = {m.name: m for m in SUITE_METRIC_TABLE}
DEFAULT_GATES = [m.name for m in sorted((m for m in SUITE_METRIC_TABLE if m.gated_by_default),
                                        key=lambda m: m.gate_rank or 0)]
"""The metrics the gate checks when no `--gate` is given, in the gate table's order."""


def label_of(name: str) -> str:
    """The metric's label in reports; the name itself for a metric not in the table."""
    metric = SUITE_METRIC_BY_NAME.get(name)
    return metric.label if metric else name
