"""Custom scorers: load them by SPEC, bind their parameters per case, run them per run.

A scorer is a function or an `agent_eval.Scorer` subclass. Its parameters are filled by name, first
from what the run produced (RUN_VALUES), then from the case's top-level fields, then from its
`metadata` keys. The lookup is done once per (scorer, case) when the case file loads, so a run only
reads the few values it produced.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import orjson

from agent_eval.records import Case, Check, Trace, field_of
from agent_eval.tracebacks import await_user, call_user, describe, with_location
from agent_eval.score.custom_summary import summarize_rows

RESERVED_KEY = "errors"  # a returned `errors` is a scorer error, never a value
CHECK_PREFIX = "scorer:"
DETAIL_MAX_CHARS = 200


def conversation(trace: Trace) -> list[dict[str, str | None]]:
    """The run's conversation in chat format: user messages and the agent's replies, no tool messages."""
    messages: list[dict[str, str | None]] = []
    replies = trace.get("replies") or []
    for i, text in enumerate(trace.get("user_messages") or []):
        messages.append({"role": "user", "content": text})
        if i < len(replies):
            messages.append({"role": "assistant", "content": replies[i]})
    return messages


# What a run produced, by the parameter name a scorer asks for: (case, trace, final env) -> value.
RUN_VALUES: dict[str, Callable[[Case, Trace, dict[str, Any]], Any]] = {
    "output": lambda case, trace, env: trace.get("final_answer"),
    "replies": lambda case, trace, env: trace.get("replies") or [],
    "trace": lambda case, trace, env: trace,
    "env": lambda case, trace, env: env,
    "messages": lambda case, trace, env: conversation(trace),
    "case": lambda case, trace, env: case,
}


class ScorerError(Exception):
    """A scorer returned something the scorer contract does not allow (recorded on the run, never raised further)."""


class Scorer:
    """Base class of a class scorer: define `score(self, <params>)`, sync or async.

    Optional: `name` (default: the class name), `column_map` ({param: name}), and
    `summarize(self, rows)`, where rows holds each counted run's dict (None where the scorer raised).
    """

    name: ClassVar[str | None] = None
    column_map: ClassVar[dict[str, str] | None] = None

    def score(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("a Scorer subclass must define score()")

    def summarize(self, rows: list[dict[str, Any] | None]) -> Any:
        """The automatic summary; override it to report your own figures."""
        return summarize_rows(rows)


def scorer(fn: Callable[..., Any] | None = None, *, column_map: dict[str, str] | None = None,
           name: str | None = None) -> Any:
    """Mark a function as a scorer: `@scorer` or `@scorer(column_map={param: name}, name=...)`."""

    def mark(f: Callable[..., Any]) -> Callable[..., Any]:
        if column_map is not None:
            f.column_map = dict(column_map)  # type: ignore[attr-defined]
        if name is not None:
            f.name = name  # type: ignore[attr-defined]
        return f

    return mark(fn) if fn is not None else mark


@dataclass(frozen=True)
class Param:
    """One parameter of `score`: the name it is filled from (after column_map) and whether it must be."""

    param: str
    source: str
    required: bool


@dataclass
class LoadedScorer:
    """A scorer ready to run: its name, the callable, its parameters, and its summarize (classes only)."""

    name: str
    spec: str
    call: Callable[..., Any]
    params: list[Param]
    summarize: Callable[[list[Any]], Any] | None = None


@dataclass(frozen=True)
class Binding:
    """One scorer's arguments for one case: constants from the case, and the names the run fills."""

    consts: dict[str, Any]
    live: tuple[tuple[str, str], ...]  # (param, RUN_VALUES key)


@dataclass
class ScorerSet:
    """The suite's scorers and their bindings per case id."""

    scorers: list[LoadedScorer] = field(default_factory=list)
    bindings: dict[str, list[Binding]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.scorers)

    def get(self, name: str) -> LoadedScorer | None:
        return next((s for s in self.scorers if s.name == name), None)

    def bind(self, case: Case) -> list[tuple[str, str]]:
        """Resolve every scorer's parameters for `case`; return (field, message) for each one missing."""
        problems: list[tuple[str, str]] = []
        metadata = case.get("metadata") or {}
        bindings = []
        for s in self.scorers:
            consts: dict[str, Any] = {}
            live: list[tuple[str, str]] = []
            for p in s.params:
                if p.source in RUN_VALUES:
                    live.append((p.param, p.source))
                elif p.source in case:
                    consts[p.param] = field_of(case, p.source)
                elif isinstance(metadata, dict) and p.source in metadata:
                    consts[p.param] = metadata[p.source]
                elif p.required:
                    problems.append((p.source, _missing_message(s, p)))
            bindings.append(Binding(consts, tuple(live)))
        if not problems:
            self.bindings[case["id"]] = bindings
        return problems

    async def score(self, case: Case, trace: Trace, final_env: dict[str, Any],
                    ) -> tuple[dict[str, Any], dict[str, Any], list[Check]]:
        """Run every scorer on one run: (scorers {name: dict | None}, scorer_errors, `scorer:` checks)."""
        bindings = self.bindings.get(case["id"])
        if bindings is None:
            if self.bind(case):
                raise ValueError(f"case {case['id']!r} was not validated against the suite's scorers")
            bindings = self.bindings[case["id"]]
        values: dict[str, Any] = {}
        errors: dict[str, str] = {}
        checks: list[Check] = []
        produced: dict[str, Any] = {}  # each run value computed once, however many scorers ask for it
        async def one(s: LoadedScorer, binding: Binding) -> dict[str, Any]:
            kwargs = dict(binding.consts)
            for param, key in binding.live:
                if key not in produced:
                    produced[key] = RUN_VALUES[key](case, trace, final_env)
                kwargs[param] = produced[key]
            result = s.call(**kwargs)
            if inspect.isawaitable(result):
                result = await result
            return as_row(s.name, result)

        for s, binding in zip(self.scorers, bindings, strict=True):
            called = await await_user(one, s, binding)
            if called.error is not None:  # the scorer's bug (SystemExit too): recorded on the run
                values[s.name] = None
                errors[s.name] = with_location(describe(called.error), called.error)
                continue
            row = called.value or {}
            values[s.name] = row
            if "passed" in row:
                checks.append({"name": CHECK_PREFIX + s.name, "passed": row["passed"],
                               "detail": check_detail(row)})
        return values, errors, checks


def _missing_message(s: LoadedScorer, p: Param) -> str:
    mapped = f" (column_map maps {p.param!r} to it)" if p.source != p.param else ""
    return (f"scorer {s.name!r} ({s.spec}) needs {p.source!r}{mapped}, which is not a value of the run "
            f"({', '.join(RUN_VALUES)}), a field of this case, or a key of its metadata; add "
            f"\"{p.source}\" to the case or its metadata, or give the parameter a default")


def as_row(name: str, result: Any) -> dict[str, Any]:
    """The stored value of one scorer call: a checked dict, a bare bool/number wrapped as {name: value}."""
    result = _plain(result)
    if isinstance(result, dict):
        if RESERVED_KEY in result:
            raise ScorerError(str(result[RESERVED_KEY]))
        row = {k: _checked(v, k) for k, v in _keys_checked(result, "").items()}
        if "passed" in row and not isinstance(row["passed"], bool):
            raise ScorerError(f"'passed' must be true or false, not {type(row['passed']).__name__}")
        return row
    if isinstance(result, (bool, int, float)):
        return {name: result}
    raise ScorerError(f"score returned {type(result).__name__}; return a dict, a bool or a number")


def _plain(value: Any) -> Any:
    # numpy scalars (np.float64 aside) are not bool/int/float, and orjson would reject them later.
    item = getattr(value, "item", None)
    if type(value).__module__ == "numpy" and callable(item) and getattr(value, "ndim", None) == 0:
        return item()
    return value


def _keys_checked(value: dict[str, Any], where: str) -> dict[str, Any]:
    for key in value:
        if not isinstance(key, str):
            raise ScorerError(f"key {key!r}{where} is not a string")
    return value


def _checked(value: Any, path: str) -> Any:
    value = _plain(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {k: _checked(v, f"{path}.{k}") for k, v in _keys_checked(value, f" in {path!r}").items()}
    raise ScorerError(f"the value of {path!r} is a {type(value).__name__}; a scorer returns numbers, "
                      "bools, strings and nested dicts")


def check_detail(row: dict[str, Any]) -> str:
    """A scorer check's detail: its `reason` when it gives one, else its other values."""
    if isinstance(row.get("reason"), str) and row["reason"]:
        text = row["reason"]
    else:
        rest = {k: v for k, v in row.items() if k != "passed"}
        text = ", ".join(f"{k}={orjson.dumps(v).decode()}" for k, v in rest.items())
        text = text or ("passed" if row["passed"] else "returned passed=false")
    return text if len(text) <= DETAIL_MAX_CHARS else text[: DETAIL_MAX_CHARS - 1] + "…"


# --- a loaded scorer (suite/scorers.py imports the SPECs) -----------------------------------


def scorer_of(spec: str, obj: Any) -> LoadedScorer:
    """The loaded scorer of SPEC's object (a function, a Scorer subclass or instance); ScorerError if unusable."""
    summarize = None
    if isinstance(obj, type):
        if not issubclass(obj, Scorer):
            raise ScorerError(f"scorer {spec!r} is a class but not a subclass of agent_eval.Scorer; "
                              "subclass it, or name a function")
        made = call_user(obj)
        if made.error is not None:
            raise ScorerError(f"scorer {spec!r} cannot be created without arguments "
                              f"({describe(made.error)}); give its __init__ defaults") from None
        obj = made.value
    if isinstance(obj, Scorer):
        if type(obj).score is Scorer.score:
            raise ScorerError(f"scorer {spec!r} defines no score() method; add one")
        call, name, column_map = obj.score, obj.name or type(obj).__name__, obj.column_map
        summarize = obj.summarize
    elif callable(obj):
        call = obj
        name = getattr(obj, "name", None) or getattr(obj, "__name__", None) or spec.rpartition(":")[2]
        column_map = getattr(obj, "column_map", None)
    else:
        raise ScorerError(f"scorer {spec!r} names a {type(obj).__name__}, not a function or a subclass "
                          "of agent_eval.Scorer")
    if not isinstance(name, str) or not name or "." in name:
        raise ScorerError(f"scorer {spec!r}: name {name!r} must be a non-empty string without '.' "
                          "(report and --gate paths use '.'); set `name`")
    return LoadedScorer(name, spec, call, _params(spec, call, column_map or {}), summarize)


def _params(spec: str, call: Callable[..., Any], column_map: Any) -> list[Param]:
    if not isinstance(column_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in column_map.items()):
        raise ScorerError(f"scorer {spec!r}: column_map must map parameter names to names, "
                          "e.g. {\"answer\": \"expected_output\"}")
    try:
        signature = inspect.signature(call)
    except (TypeError, ValueError) as exc:
        raise ScorerError(f"scorer {spec!r}: cannot read its parameters ({exc})") from None
    params = []
    for p in signature.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.kind is p.POSITIONAL_ONLY:
            raise ScorerError(f"scorer {spec!r}: parameter {p.name!r} is positional-only; parameters are "
                              "filled by name, so remove the '/'")
        params.append(Param(p.name, column_map.get(p.name, p.name), p.default is p.empty))
    unknown = sorted(set(column_map) - {p.param for p in params})
    if unknown:
        raise ScorerError(f"scorer {spec!r}: column_map maps {unknown[0]!r}, which is not a parameter of "
                          f"its score ({', '.join(p.param for p in params) or 'none'})")
    return params

