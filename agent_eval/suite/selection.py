"""Which selected cases run: --filter's selection, and why a case is skipped (an unset variable it requires,
or only judged checks under --no-judge)."""
from __future__ import annotations

from collections.abc import Mapping

from agent_eval.records import Case


def select_cases(cases: list[Case], filters: list[str]) -> list[Case]:
    """Keep a case when its id or one of its tags contains one of the filter texts."""
    if not filters:
        return list(cases)
    return [c for c in cases if any(f in c["id"] or any(f in t for t in c.get("tags", ())) for f in filters)]


def skip_reason(case: Case, environ: Mapping[str, str], judge_on: bool) -> str | None:
    """Why a case is skipped, or None when it runs."""
    missing = [name for name in case.get("requires", ()) if not environ.get(name)]
    if missing:
        return f"requires {', '.join(missing)} (unset)"
    if not judge_on and has_only_judged_checks(case):
        return "judge disabled"
    return None


def has_only_judged_checks(case: Case) -> bool:
    """True when the case's only checks are judged ones (rubric, expected_outcome)."""
    from agent_eval.score.judge import judged_fields
    from agent_eval.suite.validation import deterministic_checks

    return bool(judged_fields(case)) and not deterministic_checks(case)
