"""Loading the suite block's `scorers`: each SPEC imported as user code, then made a scorer by score/custom.py."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.score.custom import ScorerError, ScorerSet, scorer_of
from agent_eval.suite.imports import load_callable


def load_scorers(specs: Any, base_dir: Path) -> tuple[ScorerSet, list[tuple[str, str]]]:
    """Import the suite's `scorers` SPECs; return the set and (field, message) for each problem."""
    problems: list[tuple[str, str]] = []
    found = ScorerSet()
    if specs is None:
        return found, problems
    if not isinstance(specs, list) or not all(isinstance(s, str) for s in specs):
        return found, [("suite.scorers", "must be a list of SPECs such as \"scorers.py:reply_words\" "
                                         "(file.py:name or module:name)")]
    for i, spec in enumerate(specs):
        where = f"suite.scorers[{i}]"
        try:
            loaded = scorer_of(spec, load_callable(spec, base_dir, "scorer"))
        except (ConfigError, ScorerError) as exc:
            problems.append((where, str(exc)))
            continue
        if found.get(loaded.name) is not None:
            problems.append((where, f"two scorers are named {loaded.name!r}; set `name` on one of them"))
            continue
        found.scorers.append(loaded)
    return found, problems
