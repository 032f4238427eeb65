"""What each command reads of a report read back, as pydantic types, and the first problem as a key path.

A *shape* is a TypeAdapter over TypedDicts of the keys one command uses. Every key may be missing or
null (it reads as null, so reports written before a key was added still load) unless it is `Required`;
unknown keys are kept and not checked. A value of the wrong type, or a null where a list holds items, is
a problem named by its key path, such as `cases[3].runs[0].metrics.latency_s must be a number, found a
string`. Strict: a number written as text, or true for a count, is the wrong type. Each key is one the
records of records.py write, of a type their value fits (tests/report/test_shapes_match_records.py).
"""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import (AllowInfNan, ConfigDict, Field, Strict, StrictBool, StrictInt, StrictStr, TypeAdapter,
                      ValidationError)
from typing_extensions import Required, TypedDict

_CONFIG = ConfigDict(extra="allow", strict=True)

Number = Annotated[float, Strict(), AllowInfNan(False)]  # an int is a number too; true/false is not
Count = StrictInt
Text = StrictStr
Id = StrictStr | StrictInt
_BOUND = 2**53  # a run's metric past it (1e308) overflowed the gate's sums; no real metric comes near
Value = StrictBool | Annotated[Number, Field(ge=-_BOUND, le=_BOUND)] | None  # a run's metric: a number, a flag or null
Object = dict[str, Any]


# ---------------------------------------------------------------- compare, plan, --baseline


class _Settings(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    repeat: Count | None


class _RunScores(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    trial: Count | None
    status: Text | None
    success: StrictBool | StrictInt | None
    metrics: dict[str, Value] | None
    scorers: Object | None


class _CaseScores(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    id: Required[Id]
    status: Text | None
    pass_rate: Number | None
    runs: list[_RunScores] | None


class _CompareReport(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    run_id: Text | None
    suite: Text | None
    agent: Text | None
    model: Text | None
    settings: _Settings | None
    summary: Object | None
    cases: Required[list[_CaseScores]]


COMPARE_SHAPE: TypeAdapter[Any] = TypeAdapter(_CompareReport)
"""What `compare`, `plan` and `--baseline` read: each run's status, success, metrics and scorers."""


# ---------------------------------------------------------------- rescore, score


class _Step(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    name: Required[Text]


class _DiffEntry(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    path: Required[list[Any]]


class _Trace(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    stop_reason: Required[Text]
    agent_error: Text | None
    steps: list[_Step] | None
    llm_calls: Required[list[Object]]
    replies: list[Text | None] | None  # None: an imported turn whose reply was not recorded
    user_messages: list[Text] | None
    final_answer: Text | None
    final_env_diff: list[_DiffEntry] | None


class _Check(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    name: Text | None
    passed: StrictBool | None
    detail: Text | None


class _RescoreRun(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    trial: Required[Count]
    error: Text | None
    checks: list[_Check] | None
    trace: Required[_Trace]


class _RescoreCase(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    id: Required[Id]
    status: Text | None
    skip_reason: Text | None
    runs: list[_RescoreRun] | None


class _RescoreSettings(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    repeat: Count | None
    threshold: Number | None
    concurrency: Count | None
    judge_base_url: Text | None


class _RescoreReport(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    run_id: Text | None
    suite: Text | None
    agent: Text | None
    model: Text | None
    cases_file: Text | None
    interrupted: StrictBool | None
    settings: _RescoreSettings | None
    summary: Object | None
    cases: Required[list[_RescoreCase]]


RESCORE_SHAPE: TypeAdapter[Any] = TypeAdapter(_RescoreReport)
"""What `rescore` (and `calibrate --judge-repeat`) reads: the runs' traces, which it scores again."""


class _ScoreRun(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    trial: Count | None
    error: Text | None
    trace: Required[_Trace]


class _ScoreSettings(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    agent: Text | None
    model: Text | None


class _ScoreCase(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    id: Required[Id]
    runs: list[_ScoreRun] | None


class _ScoreReport(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    agent: Text | None
    model: Text | None
    settings: _ScoreSettings | None
    cases: Required[list[_ScoreCase]]


SCORE_RUN_SHAPE: TypeAdapter[Any] = TypeAdapter(_ScoreRun)
SCORE_SHAPE: TypeAdapter[Any] = TypeAdapter(_ScoreReport)
"""What `score --format agent-eval` reads: the runs' traces, scored against a case file (a journal's runs
are checked against SCORE_RUN_SHAPE)."""


# ---------------------------------------------------------------- view


class _ViewTrace(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    steps: list[Object] | None


class _ViewRun(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    status: Text | None
    metrics: Object | None
    trace: _ViewTrace | None


class _ViewCase(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    status: Text | None
    pass_rate: Number | None
    runs: list[_ViewRun] | None


class _ViewReport(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    suite: Text | None
    run_id: Text | None
    settings: Object | None
    summary: Object | None
    cases: Required[list[_ViewCase]]


VIEW_SHAPE: TypeAdapter[Any] = TypeAdapter(_ViewReport)
"""What `view` reads before it embeds the report in the page."""


# ---------------------------------------------------------------- label, calibrate


class _Verdict(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    verdict: Text | None
    reason: Text | None


class _JudgedTrace(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    user_messages: list[Text] | None
    final_answer: Text | None


class _JudgedRun(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    trial: Required[Count]
    error: Text | None
    judge: _Verdict | None
    judge_expected_outcome: _Verdict | None
    trace: _JudgedTrace | None


class _JudgedCase(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    id: Required[Id]
    runs: list[_JudgedRun] | None


class _JudgeSettings(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    judge_base_url: Text | None


class _JudgedReport(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    run_id: Required[Text]
    cases_file: Text | None
    settings: _JudgeSettings | None
    cases: Required[list[_JudgedCase]]


JUDGED_SHAPE: TypeAdapter[Any] = TypeAdapter(_JudgedReport)
"""What `label` and `calibrate` read: the run id, each run's verdicts, user messages and final answer."""


# ---------------------------------------------------------------- the first problem, as a key path

_EXPECTED = {"int_type": "a whole number", "int_from_float": "a whole number", "float_type": "a number",
             "finite_number": "a finite number", "string_type": "a string", "bool_type": "true or false",
             "dict_type": "an object", "typed_dict_type": "an object", "list_type": "a list",
             "greater_than_equal": "a number from -2**53 to 2**53", "less_than_equal": "a number from -2**53 to 2**53"}


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "true/false", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _located(value: Any, loc: tuple[Any, ...], missing: bool = False) -> tuple[str, Any, bool]:
    """(the key path of loc, the value there, whether the last step was a list index); pydantic's union
    member names in loc (`int`, `str`, ...) are not keys of the data and are skipped."""
    path, here, indexed = "", value, False
    for n, part in enumerate(loc):
        if isinstance(here, list) and isinstance(part, int) and 0 <= part < len(here):
            path, here, indexed = f"{path}[{part}]", here[part], True
        elif isinstance(here, dict) and isinstance(part, str) and (part in here or missing and n == len(loc) - 1):
            path, here, indexed = f"{path}.{part}" if path else part, here.get(part), False
    return path, here, indexed


def shape_problem(value: Any, shape: TypeAdapter[Any], path: str = "") -> str | None:
    """The first place where `value` does not fit `shape`, as "PATH must be ..., found ..." (under `path`);
    None when it fits."""
    try:
        shape.validate_python(value)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        where, found, indexed = _located(value, tuple(errors[0]["loc"]), errors[0]["type"] == "missing")
        full = ".".join(p for p in (path, where) if p).replace(".[", "[") or "the top level"
        if errors[0]["type"] == "missing" or (found is None and not indexed):
            return f"{full} is missing"
        wanted = [_EXPECTED.get(e["type"], e["msg"]) for e in errors if _located(value, tuple(e["loc"]))[0] == where]
        return f"{full} must be {' or '.join(dict.fromkeys(wanted))}, found {_kind(found)}"
    return None
