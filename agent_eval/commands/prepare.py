"""The preparation every command that scores cases shares: read the case file, resolve, select, check.

Everything here runs before anything is played or scored; a problem is a ConfigError or a
CaseFileError (exit 2, one message naming the file, the case, the field and the fix).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_eval.flags.rows import AGENT, BASELINE, FILTER, GATE, JUDGE_MODEL, NO_JUDGE, OUTPUT_DIR
from agent_eval.records import Case
from agent_eval.errors import ConfigError
from agent_eval.flags import DEFAULTS, Flags
from agent_eval.run.config import Settings, require_llm, resolve
from agent_eval.suite.cases import Suite, load_suite
from agent_eval.suite.selection import select_cases


@dataclass
class Prepared:
    """A loaded suite, its resolved settings and the cases selected from it."""

    suite: Suite
    cfg: Settings
    cases: list[Case]


def prepare(flags: Flags, adjust: Callable[[Settings], Settings] | None = None) -> Prepared:
    """Load the case file, resolve the settings (then `adjust` them), and select the cases.

    `adjust` amends the resolved settings before they are checked (--resume restores stored ones).
    """
    suite = load_suite(flags.path("cases") or DEFAULTS.cases)
    cfg = resolve(flags, suite)
    if adjust is not None:
        cfg = adjust(cfg)
    cases = select_cases(suite.cases, list(cfg[FILTER]))
    if not cases:
        raise ConfigError(f"no case of {suite.path} matches --filter {' '.join(cfg[FILTER])!r}; "
                          "`agent-eval list` shows the ids and tags.")
    return Prepared(suite, cfg, cases)


def check_models(cfg: Settings, runnable: list[Case], suite: Suite) -> None:
    """The checks of what the runs to play will call: the agent's, the judge's and the simulator's models,
    and --agent gold's gold calls."""
    from agent_eval.run.agents import kind_of
    from agent_eval.run.agents.gold import require_gold
    from agent_eval.run.scenario import require_user

    kind = kind_of(cfg[AGENT])
    if kind.uses_llm and runnable:
        require_llm(cfg, kind.name)
    check_judge(cfg, runnable, suite)
    require_user(cfg.user_sim, runnable, suite.path)
    require_gold(cfg[AGENT], runnable, suite.path)


def check_judge(cfg: Settings, runnable: list[Case], suite: Suite) -> None:
    """Exit 2 when a case that will be scored needs the judge and it has no model or key."""
    from agent_eval.score.judge import needs_judge, require_judge

    judged = needs_judge(runnable) if not cfg[NO_JUDGE] else None
    if judged is not None:
        require_judge(cfg[JUDGE_MODEL], cfg.judge_api_key, judged, suite.path)


def check_baseline(cfg: Settings) -> None:
    """Exit 2 when the --baseline report cannot be read or a --gate is unknown."""
    from agent_eval.report.baseline import validate_baseline

    baseline = cfg[BASELINE]
    validate_baseline(Path(baseline) if baseline and baseline != "last" else None, list(cfg[GATE]))


def make_output_dir(cfg: Settings) -> None:
    """Create --output-dir; one that cannot be created is exit 2."""
    try:
        cfg[OUTPUT_DIR].mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the output directory {cfg[OUTPUT_DIR]} ({exc.strerror or exc}); "
                          "pass --output-dir with a writable folder.") from None
