"""The deterministic checks of a run (docs/reference.md#checks), family by family: trajectory here, the env
checks in env_checks.py, `expect` in expect.py, authorization and policy in safety.py.

Every check is a small pure function; tables map a name to its function, so adding a check is one
function and one row. A check entry is `{"name", "passed", "detail"}`.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agent_eval.records import Case, Check, Step, Trace
from agent_eval.plugins import claim
from agent_eval.plugins.calls import optional, per_run
from agent_eval.score.env_checks import env_checks
from agent_eval.score.envdiff import show_json as _show
from agent_eval.score.matchers import RegexTimeout, match_call
from agent_eval.score.expect import expect_checks
from agent_eval.score.gold import observation_checks, state_checks
from agent_eval.score.safety import authorization_checks, policy_checks, safety_of
from agent_eval.score.verdict import Verdict, check_entry


def _show_call(name: Any, args: Any) -> str:
    return f"{name}({_show(args, 120)})" if args not in (None, {}) else f"{name}()"


# ---------------------------------------------------------------- trajectory


def _names(steps: Sequence[Mapping[str, Any]]) -> str:
    shown = ", ".join(str(step.get("name")) for step in steps[:_SHOWN_NAMES])
    more = f", ... {len(steps) - _SHOWN_NAMES} more" if len(steps) > _SHOWN_NAMES else ""
    return f"[{shown}{more}]"


_SHOWN_NAMES = 50


def _uncovered_detail(expected: list[dict[str, Any]], steps: list[Step], pairing: list[int | None]) -> str:
    seen_args: dict[Any, list[Any]] = {}  # name -> the args of its first three calls, in one pass
    for step in steps:
        shown = seen_args.setdefault(_hashable(step.get("name")), [])
        if len(shown) < 3:
            shown.append(step.get("args"))
    uncovered = [exp for exp, j in zip(expected, pairing, strict=True) if j is None]
    parts = []
    for exp in uncovered[:_SHOWN_UNCOVERED]:
        same_name = seen_args.get(_hashable(exp.get("name")))
        seen = f"; calls of it had args {', '.join(_show(a, 80) for a in same_name)}" if same_name else ""
        parts.append(_show_call(exp.get("name"), exp.get("args")) + seen)
    if len(uncovered) > _SHOWN_UNCOVERED:
        parts.append(f"and {len(uncovered) - _SHOWN_UNCOVERED} more")
    return f"expected calls not covered: {'; '.join(parts)}. Actual calls: {_names(steps)}"


_SHOWN_UNCOVERED = 20


def _hashable(name: Any) -> Any:
    return name if isinstance(name, str) or name is None else repr(name)


def _max_matching(expected: list[dict[str, Any]], steps: list[Step]) -> list[int | None]:
    from agent_eval.score.call_matching import max_matching  # numpy: when scoring, not when validating

    return max_matching(expected, steps)


def _covers_expected(expected: list[dict[str, Any]], steps: list[Step]) -> Verdict:
    pairing = _max_matching(expected, steps)
    if all(j is not None for j in pairing):
        return True, f"all {len(expected)} expected calls matched among {len(steps)} calls"
    return False, _uncovered_detail(expected, steps, pairing)


def _strict(expected: list[dict[str, Any]], steps: list[Step]) -> Verdict:
    if len(expected) != len(steps):
        return False, (
            f"expected {len(expected)} calls in order {_names(expected)}, "
            f"got {len(steps)}: {_names(steps)}"
        )
    for index, (exp, step) in enumerate(zip(expected, steps, strict=True)):
        if not match_call(exp, step):
            return False, (
                f"step {index}: expected {_show_call(exp.get('name'), exp.get('args'))}, "
                f"got {_show_call(step.get('name'), step.get('args'))}"
            )
    return True, f"all {len(steps)} calls matched in order"


def _subset(expected: list[dict[str, Any]], steps: list[Step]) -> Verdict:
    pairing = _max_matching(expected, steps)
    used = {j for j in pairing if j is not None}
    extra = [i for i in range(len(steps)) if i not in used]
    if not extra:
        return True, f"all {len(steps)} calls are among the {len(expected)} expected calls"
    shown = "; ".join(
        f"step {i} {_show_call(steps[i].get('name'), steps[i].get('args'))}" for i in extra[:5]
    )
    return False, (
        f"{len(extra)} call(s) not allowed by expected_tools: {shown}. "
        f"Expected calls: {_names(expected)}"
    )


TRAJECTORY_MODES: dict[str, Callable[[list[dict[str, Any]], list[Step]], Verdict]] = {
    "unordered": _covers_expected,
    "superset": _covers_expected,
    "strict": _strict,
    "subset": _subset,
}


def check_trajectory(mode: str, expected: list[dict[str, Any]], steps: list[Step]) -> Check:
    """The `trajectory` check entry: the run's calls against expected_tools in this mode."""
    judge = TRAJECTORY_MODES.get(mode)
    if judge is None:
        return check_entry("trajectory", (False, f"unknown trajectory mode {mode!r}"))
    try:
        passed, detail = judge(expected, steps)
    except RegexTimeout as exc:
        passed, detail = False, str(exc)
    return check_entry("trajectory", (passed, f"{mode}: {detail}"))


# ---------------------------------------------------------------- the run


def _trajectory_checks(case: Case, trace: Trace, final_env: Any, expected_env: Any) -> list[Check]:
    mode = case.get("trajectory")
    if not mode:
        return []
    return [check_trajectory(mode, case.get("expected_tools") or [], trace.get("steps") or [])]


Problems = list[tuple[str, str]]  # (field, message with the fix)


@dataclass(frozen=True)
class CheckFamily:
    """One family of the check list: the case fields it reads and a function returning its check entries.

    The fields are the case fields validation accepts for it. `given(case, block)` says whether the case has
    a check of this family (by default: one of its fields is set; `block` is the suite block, or None); a
    case with none of any family, and no judged check, is a validation error. `validate(case)` gives the
    problems of its fields in a case."""

    name: str
    fields: tuple[str, ...]
    check: Callable[[Case, Trace, Any, Any], list[Check]]  # (case, trace, final env, expected env) -> entries
    given: Callable[[Case, Mapping[str, Any] | None], bool] | None = None
    validate: Callable[[Case], Problems] | None = None

    def applies(self, case: Case, block: Mapping[str, Any] | None = None) -> bool:
        """True when the case has a check of this family (`block`, the suite block, gives the suite's rules;
        None: the case's)."""
        if self.given is not None:
            return self.given(case, block)
        return any(case.get(name) is not None for name in self.fields)


def _has_policy(case: Case, block: Mapping[str, Any] | None) -> bool:
    # The suite's rules count too: from the suite block when given, else from the case's safety view,
    # which load_suite fills with the suite's rules followed by the case's.
    return bool(case.get("policy") or (block.get("policy") if block is not None else safety_of(case)["policy"]))


CHECK_FAMILIES: list[CheckFamily] = [
    # The safety families come first: a run that broke one gives that check as its reason before any
    # trajectory or state check (report/reasons.py reads the checks in this order).
    CheckFamily("authorized", ("authorized",), authorization_checks,
                lambda case, suite: case.get("authorized") is False),
    CheckFamily("policy", ("policy",), policy_checks, _has_policy),
    CheckFamily("trajectory", ("trajectory", "expected_tools"), _trajectory_checks,
                lambda case, suite: bool(case.get("trajectory"))),
    CheckFamily("expected_env_check", ("expected_env_check",), env_checks,
                lambda case, suite: bool(case.get("expected_env_check"))),
    CheckFamily("expected_env", ("expected_env",), state_checks,
                lambda case, suite: bool(case.get("expected_env")) or case.get("expected_env") == {}),
    CheckFamily("expected_observations", ("expected_observations",), observation_checks,
                lambda case, suite: case.get("expected_observations") is not None),
    CheckFamily("expect", ("expect",), expect_checks, lambda case, suite: bool(case.get("expect"))),
]
"""The families of the check list, in its order. A new family is one function and one row here; its
fields become case fields, and its `given` makes a case holding them a case with a check."""


_BUILT_IN_FAMILIES = frozenset(family.name for family in CHECK_FAMILIES)


def register_check_family(family: CheckFamily) -> None:
    """Add a family at the end of the check list; a name another module registered is a ConfigError. Its
    code goes through the guard: a `check` that raises is one failed check named after the family, whose
    detail names the plugin and the exception (the run's other checks are kept); a `given` or `validate`
    that raises is exit 2 naming them."""
    owner = claim("check family", family.name, _BUILT_IN_FAMILIES, __name__)

    def failed(message: str) -> list[Check]:
        return [{"name": family.name, "passed": False, "detail": message}]

    family = replace(family, check=per_run("check family", family.name, owner, family.check, failed),
                     given=optional("check family", family.name, owner, family.given),
                     validate=optional("check family", family.name, owner, family.validate))
    CHECK_FAMILIES[:] = [f for f in CHECK_FAMILIES if f.name != family.name] + [family]


def case_check_fields() -> tuple[str, ...]:
    """Every case field some check family reads, in the families' order."""
    return tuple(dict.fromkeys(name for family in CHECK_FAMILIES for name in family.fields))


def check_run(case: Case, trace: Trace, final_env: Any, expected_env: Any) -> list[Check]:
    """Every deterministic check entry of one run, in the order of the check list."""
    checks: list[Check] = []
    for family in CHECK_FAMILIES:
        checks.extend(family.check(case, trace, final_env, expected_env))
    return checks
