"""A setting: one key typed by its value, with its flag, environment variable, suite key, default, range, help,
the commands that take it, how the report shows it and what `--resume` does with it (`Setting`).

The built-in rows are the table of `flags/rows.py`; a plugin adds one with `register_setting`.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from agent_eval.limits import JUDGE_TIMEOUT_S, MAX_COUNT, RETRY_BUDGET_S

if TYPE_CHECKING:
    from agent_eval.run.config import Given, Settings

T = TypeVar("T", covariant=True)  # the value's type: a Setting[int] is a Setting[float]

ResumeRule = Literal["kept", "renewed", "command"]
"""What `--resume` does with a setting: "kept", the run's stored value, and a different value given again is
an error; "renewed", the stored value unless it is given again; "command", the resumed command line's."""

Shown = Literal["value", "text", "url", "urls", "hidden"]
"""How the report's `settings` show a resolved value: as it is, as text (a path, a rate limit), a URL with
its secret replaced by ***, text whose URLs are so redacted; or not at all."""


@dataclass(frozen=True)
class Defaults:
    """Defaults that code outside the rows reads by name (a row's own default is its `default`)."""

    cases: Path = Path("cases/test_cases.json")
    repeat: int = 1
    threshold: float = 1.0
    concurrency: int = 8
    max_steps: int = 8
    output_dir: Path = Path("reports")
    judge_timeout: float = JUDGE_TIMEOUT_S
    retry_budget: float = RETRY_BUDGET_S
    history_last: int = 10  # runs `agent-eval history` shows


DEFAULTS = Defaults()


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One setting, a key typed by its value (`T`): its flag on the commands it names, its environment variable
    and suite key, its default, its range, and what `--resume` does with it. Its value is resolved as the flag,
    then the environment, then the suite block, then the default, checked against `check`, and shown in the
    report's `settings` under its name (sources recorded)."""

    name: str
    type: type = str  # str, int, float, bool (a flag without a value) or Path
    flags: tuple[str, ...] = ()  # ("--tone",): the flag names; none: no flag
    env: str | None = None  # the environment variable that sets it
    suite_key: str | None = None  # the key of the suite block that sets it ("defaults.repeat": a nested key)
    default: Any = None
    help: str = ""
    commands: tuple[str, ...] = ("run",)
    resume: ResumeRule | bool = True  # True: "renewed", False: "command" (a plugin's older spelling)
    repeatable: bool = False  # the flag may be given several times: its value is a tuple
    shown: Shown = "value"
    sourced: bool = True  # its source is recorded in `settings.sources`
    attr: str | None = None  # its report key, when not `name` (a --no-X flag's X)
    negated: bool = False  # the report shows the opposite of the flag (--no-judge: judge)
    eager: bool = False  # the option's default is `default` (shown in --help), not "not given"
    command_help: Mapping[str, str] = dataclasses.field(default_factory=dict)  # a command's own help text
    command_default: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # a command's own default
    option: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # more of typer.Option (min, max)
    check: Callable[[Any], str | None] | None = None  # why a value is out of range (the words after "must be")
    report: int | None = None  # its place in the report's `settings` (None: after the built-in rows, in table order)
    # How its value is resolved when it is more than flag, environment, suite key, default: called with the row and
    # the resolution so far (run/config.py's Given), it sets the row's value, source and any field it gives.
    resolve: Callable[[Setting[Any], Given], None] | None = None
    show: Callable[[Settings], Mapping[str, Any]] | None = None  # its report `settings` entries, if not {key: value}

    def checked(self, value: Any, where: str | None = None) -> Any:
        """`value`, or a ConfigError "WHERE must be ..." when `check` refuses it (WHERE: its first flag)."""
        problem = None if value is None or self.check is None else self.check(value)
        if problem is None:
            return value
        from agent_eval.errors import ConfigError

        raise ConfigError(f"{where or (self.flags[0] if self.flags else self.name)} must be {problem}.")

    @property
    def rule(self) -> ResumeRule:
        """The `--resume` rule, with a plugin's True/False read as "renewed"/"command"."""
        if isinstance(self.resume, bool):
            return "renewed" if self.resume else "command"
        return self.resume

    @property
    def key(self) -> str:
        """Its key in the report's `settings` and `sources` (a --no-X flag's X)."""
        return self.attr or self.name

    def unset(self) -> Any:
        """Its value when it is not given: the default of an eager option, else None, False or ()."""
        if self.eager:
            return self.default
        return () if self.repeatable else False if self.type is bool else None


def elsewhere(row: Setting[Any], given: Given) -> None:
    """The resolver of a row another row's resolver reads (--user-model, the --ray flags), or that its command
    reads itself (--cases, --resume, --lf)."""


def count(value: int) -> str | None:
    """The range of a count: 1 to MAX_COUNT."""
    return None if 1 <= value <= MAX_COUNT else f"at least 1 and at most {MAX_COUNT} (got {value})"


def seconds(default: float | None = None) -> Callable[[float], str | None]:
    """The range of a length of time: positive and finite (`default`: named in the message)."""
    def check(value: float) -> str | None:
        if math.isfinite(value) and value > 0:
            return None
        if default is None:
            return f"a positive, finite number of seconds (got {value})"
        return f"a positive number of seconds (got {value}); the default is {default:g}"
    return check
