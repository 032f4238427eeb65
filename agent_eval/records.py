"""The records that flow through agent-eval, typed: a case, a step, a trace, a run record, a report.

They are plain dicts at run time (JSON in, JSON out, and fast); these TypedDicts give them names and
keys for readers and type checkers, and `Case` is the model a case file's cases are validated against.
`total=False`: a report written by an earlier version may lack a key, and readers treat a missing key as
null (report/shapes.py reads them; a test pairs its keys with these). The keys are documented in
docs/reference.md.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from typing_extensions import Required, TypedDict  # pydantic reads typing's only from Python 3.12

StopReason = Literal["completed", "max_steps", "max_turns", "timeout", "agent_error", "max_tool_errors"]
"""Why a run ended; every reason but `completed` fails the run (the agent's fault)."""
RunStatus = Literal["passed", "failed", "error"]
"""A run's status: `error` is an infrastructure failure, not the agent's."""
CaseStatus = Literal["passed", "failed", "error", "skipped", "not_run"]
"""A case's status over its runs (`not_run`: none of its runs finished before Ctrl-C or -x)."""
UNCOMPARED: frozenset[CaseStatus] = frozenset({"skipped", "error", "not_run"})
"""The statuses of a case with no verdict to compare: the gate, compare --pairwise and plan leave it out."""


class AsWritten:
    """`Annotated[T, AsWritten(U)]`: the case model checks a U where the loaded case holds a T (load_suite
    reads a path's JSON, makes one check a list of one; the run passes the calls and faults on as dicts).
    pydantic's hook, without importing pydantic: this module is imported by every command."""

    def __init__(self, written: Any, strict: bool = False) -> None:
        self.written, self.strict = written, strict

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        schema = handler.generate_schema(self.written)
        return {**schema, "strict": True} if self.strict else schema


CHECKED = AsWritten(Any)
"""`Annotated[T, CHECKED]`: a case field its own validator checks (suite/validation*.py, a check family's
`validate`) with its own messages; the case model lets any value through."""
_FORBID, _ALLOW = {"extra": "forbid"}, {"extra": "allow"}  # pydantic's ConfigDict, as the dict it is


class ExpectedCall(TypedDict, total=False):
    """One reference call of `expected_tools`; any other key is an error."""

    __pydantic_config__ = _FORBID  # type: ignore[misc]
    name: Required[str]
    args: dict[str, Any] | None
    turn: Annotated[int, AsWritten(int, strict=True)] | None  # the 0-based user message whose answer makes this call


class Fault(TypedDict, total=False):
    """One injected tool failure of `faults`; any other key is an error."""

    __pydantic_config__ = _FORBID  # type: ignore[misc]
    tool: Required[str]
    fail_times: int | None
    error: str | None
    delay_ms: float | None


class Case(TypedDict, total=False):
    """One case of the case file, after loading (paths resolved, the suite's settings merged in). It is the
    case model too: load_suite validates each case against it (a pydantic TypeAdapter; a key it does not
    name is kept, for custom scorers), and its keys are the case fields validation knows."""

    __pydantic_config__ = _ALLOW  # type: ignore[misc]
    id: Required[str]
    tags: list[str]
    query: str | None
    messages: list[str] | None
    scenario: Annotated[str, CHECKED]
    user_description: Annotated[str, CHECKED]
    expected_outcome: Annotated[str, CHECKED]
    max_turns: Annotated[int, CHECKED]
    metadata: dict[str, Any]
    initial_env: Annotated[dict[str, Any] | None, AsWritten(dict[str, Any] | str | None)]
    expected_tools: Annotated[list[dict[str, Any]] | None, AsWritten(list[ExpectedCall] | None)]
    trajectory: Literal["unordered", "strict", "subset", "superset"] | None
    expected_env: dict[str, Any] | str | None  # an object, or "replay" / "replay_per_turn" (a path is read)
    expected_env_check: Annotated[list[dict[str, Any]], AsWritten(dict[str, Any] | list[dict[str, Any]] | None)]
    expect: dict[str, Any] | None
    rubric: str | None
    faults: Annotated[list[dict[str, Any]], AsWritten(list[Fault])]
    policy: Annotated[list[dict[str, Any]], CHECKED]
    authorized: Annotated[bool, CHECKED]
    injection: Annotated[dict[str, Any], CHECKED]
    requires: list[str]
    expected_output: Annotated[Any, CHECKED]  # other tools' field (suite/fields.py, OTHER_TOOLS_FIELDS)
    tools: Annotated[list[str], CHECKED]  # the suite tools this case offers (run/offer.py)
    tools_added: Annotated[dict[str, list[str]], CHECKED]  # "<turn>" -> tools offered from that user turn on
    expected_observations: Annotated[str, CHECKED]  # "replay": each turn's gold observations must be in the run's
    gold_reply: Annotated[str | list[str], CHECKED]  # the gold agent's reply (one per turn in a list)
    max_tool_errors: Annotated[int, CHECKED]  # the run ends (stop_reason max_tool_errors) at this many tool errors
    _safety: Annotated[dict[str, Any], CHECKED]  # what scoring needs of the suite (score/safety.py), set by load_suite


def field_of(record: Mapping[str, Any], name: str) -> Any:
    """A record's value of a key named at run time (a custom scorer's parameter, a judged field)."""
    return record.get(name)


CASE_FILE_SHAPE = 'a list of cases or an object {"suite": {...}, "cases": [...]}'
"""What a case file holds, as every message about one of another shape says it."""


def split_case_file(doc: object) -> tuple[object, list[Any]] | None:
    """A parsed case file as (its suite block as written, {} when absent or null; its cases as written), or
    None when it is neither a list of cases nor an object with a "cases" list (say CASE_FILE_SHAPE then).
    What the block and each case hold is for the caller to check."""
    if isinstance(doc, list):
        return {}, doc
    if isinstance(doc, dict) and isinstance(doc.get("cases"), list):
        return doc.get("suite") or {}, doc["cases"]
    return None


class Step(TypedDict, total=False):
    """One tool call the agent made, with its observation (every output stored in full)."""

    step: int
    name: str
    args: Any
    output: str | None
    error: str | None
    error_traceback: str | None
    invalid_args: str | None
    latency_s: float | None  # None: an imported step that was not timed
    t_start_s: float | None
    executed: bool  # False: the model issued the call but it never reached the sandbox
    call_id: str  # the model's id of the call, while a run is played (removed when its steps are paired)
    not_yet_offered: bool  # present (true) for a call of a tool the case adds at a later user turn


class Check(TypedDict):
    """One check entry of a run: its name, whether it passed, and why."""

    name: str
    passed: bool
    detail: str


class Trace(TypedDict, total=False):
    """What one run produced, frozen when it ended; scoring reads only this and the case."""

    user_messages: list[str]
    replies: list[str | None]  # None: an imported turn whose reply was not recorded
    final_answer: str | None
    cards: list[dict[str, Any]]
    final_agent: str | None
    stop_reason: StopReason
    agent_error: str | None
    agent_error_traceback: str | None
    steps: list[Step]
    llm_calls: list[dict[str, Any]]
    latency_s: float | None  # None: an imported run that was not timed
    ttfa_s: float | None
    rate_limit_wait_s: float  # time spent waiting for the provider's rate limit (not the agent's)
    final_env_diff: list[dict[str, Any]]
    turn_steps: list[int]
    turn_env_diffs: list[list[dict[str, Any]]]  # per answered user turn, the state's diff (replay_per_turn cases)
    assistant_texts: list[str]  # every assistant text, text sent beside tool calls included (when there was such)
    framework_calls: list[dict[str, Any]]  # calls of a framework's own tools (agents on the endpoint)
    started_at_unix_ns: int | None  # the wall clock when the run started (the spans of --otel)
    trace_id: str | None  # an imported run: the recording's trace id
    state_resource: str | None  # an MCP suite's env came from this resource (rescore keeps its env checks)
    has_env: bool  # False: an imported run recorded no environment, so env checks are skipped


class RunRecord(TypedDict, total=False):
    """One scored run of a case: the report's `cases[i].runs[j]`."""

    trial: int
    status: RunStatus
    error: str | None
    success: bool
    checks: list[Check]
    judge: dict[str, Any] | None
    judge_expected_outcome: dict[str, Any] | None
    metrics: dict[str, Any]
    scorers: dict[str, Any]
    scorer_errors: dict[str, str]
    escalated: bool
    skipped_checks: list[dict[str, Any]]  # `score`: checks a recording could not decide (no env recorded)
    judge_skipped: bool  # present (true) only when --no-judge left the case's rubric or expected outcome unasked
    metric_errors: dict[str, str]  # present only when a plugin metric's run value raised: {key: message}
    trace: Trace


class CaseEntry(TypedDict, total=False):
    """One case of a report: its status over its runs."""

    id: str
    tags: list[str]
    status: CaseStatus
    pass_rate: float | None
    skip_reason: str | None
    flaky: bool
    judge_agreement: float | None  # rescore --judge-repeat: the share of its runs whose answers were unanimous
    runs: list[RunRecord]  # while a run is going, lite ones (their traces are in the journal)


class Report(TypedDict, total=False):
    """The JSON report of one run (or rescore): settings, summary, cases, gate and exit code."""

    schema_version: int
    run_id: str
    created_at: str
    suite: str | None
    agent: str | None
    model: str | None
    cases_file: str
    settings: dict[str, Any]
    summary: dict[str, Any]
    cases: list[CaseEntry]
    gate: dict[str, Any] | None
    interrupted: bool
    stopped_early: bool
    stopped_at_budget: bool
    exit_code: int | None
