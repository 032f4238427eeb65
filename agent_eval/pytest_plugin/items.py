"""The plugin's options and its collection: a case file as a pytest File, each case as an Item.

Imported with the plugin, so it imports nothing of agent-eval's at module level.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from agent_eval.pytest_plugin.session import SessionState

# (name, help, type): the run settings the plugin takes, as `--agent-eval-NAME` options and `agent_eval_NAME` ini keys.
SETTINGS: list[tuple[str, str, type]] = [
    ("agent", "The agent SPEC (openai, file.py:function, module:function, cmd:...).", str),
    ("model", "The agent's model (AGENT_EVAL_MODEL).", str),
    ("base-url", "OpenAI-compatible endpoint (OPENAI_BASE_URL).", str),
    ("repeat", "Runs per case (default 1).", int),
    ("threshold", "Pass rate a case needs (default 1.0).", float),
    ("concurrency", "Runs at once (default 8).", int),
    ("no-judge", "Never call the judge; skip rubric-only cases.", bool),
    ("output-dir", "Where the report, journal, page and history go (default reports).", str),
    ("record", "Record each run's model exchanges in DIR (as run --record).", str),
    ("replay", "Answer model requests from DIR's recording (as run --replay).", str),
    ("replay-miss", "A request with no recorded answer: error (default) or live (ask the provider).", str),
    ("baseline", "Gate the session's report against this report, or last (as run --baseline).", str),
    ("gate", "METRIC[=MAX_DROP] to gate on (repeatable; needs --agent-eval-baseline).", list),
]
PATHS = ("output-dir", "record", "replay", "baseline")  # relative to where pytest started, or to the ini file
PAYLOAD = "agent_eval"  # the key of an xdist worker's books in its workeroutput
STATE: pytest.StashKey[SessionState] = pytest.StashKey()  # the session's state, once the plugin is asked


def case_files(config: pytest.Config) -> list[Path]:
    """The case files asked for: `--agent-eval` (relative to where pytest started), else the ini's."""
    given = [config.invocation_params.dir / p for p in config.getoption("agent_eval") or ()]
    return [p.resolve() for p in (given or config.getini("agent_eval_cases") or ())]


def settings_of(config: pytest.Config, start: Path | None = None) -> dict[str, Any]:
    """The settings given as `--agent-eval-*` options or ini keys (the option wins), as `run`'s flags. A
    relative path is taken from where pytest started (an option) or from the ini file's folder (an ini key),
    once: a conftest that changes the working directory later moves none of them."""
    found: dict[str, Any] = {}
    for name, _, kind in SETTINGS:
        dest = "agent_eval_" + name.replace("-", "_")
        value = config.getoption(dest)
        base = start or config.invocation_params.dir
        if value is None or value == []:
            value = config.getini(dest)
            base = config.inipath.parent if config.inipath is not None else config.rootpath
            if value is not None and kind is not bool and kind is not list:
                try:
                    value = kind(value)
                except ValueError:
                    raise pytest.UsageError(f"{dest} = {value!r} in the ini file: not a valid {kind.__name__}") \
                        from None
        if value is None or value is False or value == []:
            continue
        if name in PATHS and not (name == "baseline" and value == "last"):
            value = str(base / value)
        found[name.replace("-", "_")] = tuple(value) if kind is list else value
    return found


class CaseFile(pytest.File):
    """A case file: one item per case, its tags as (registered) markers."""

    def collect(self) -> Iterator[pytest.Item]:
        state = self.config.stash[STATE]
        book = state.open(self.path)
        lines = _lines_of(self.path.read_text(encoding="utf-8", errors="replace"))
        for case in book.suite.cases:
            item = CaseItem.from_parent(self, name=case["id"])
            item.line = lines.get(case["id"], 0)
            for tag in case.get("tags") or ():
                if _MARKER.fullmatch(tag):  # what `-m` can name and the ini's `markers` can register
                    state.register_marker(tag)
                    item.add_marker(tag)
                item.extra_keyword_matches.add(tag)  # `-k` finds every tag
            yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        from agent_eval.errors import CaseFileError, ConfigError

        if isinstance(excinfo.value, CaseFileError):
            return "the case file is invalid:\n" + "\n".join(f"  - {p}" for p in excinfo.value.problems)
        if isinstance(excinfo.value, ConfigError):
            return as_options(str(excinfo.value))
        return super().repr_failure(excinfo)


_MARKER = re.compile(r"[A-Za-z_][\w.+-]*")
_ID = re.compile(r'"id"\s*:\s*("(?:[^"\\]|\\.)*")')


def as_options(message: str) -> str:
    """A message of `run`'s with its flags named as this plugin's options (--model: --agent-eval-model)."""
    return re.sub(r"--(" + "|".join(name for name, _, _ in SETTINGS) + r")\b", r"--agent-eval-\1", message)


def _lines_of(text: str) -> dict[str, int]:
    """The 0-based line where each case id is first written in the case file's text, in one pass."""
    import json

    lines: dict[str, int] = {}
    line, at = 0, 0
    for found in _ID.finditer(text):
        line += text.count("\n", at, found.start())
        at = found.start()
        try:
            lines.setdefault(json.loads(found.group(1)), line)
        except ValueError:
            continue
    return lines


class CaseError(Exception):
    """An infrastructure error of a case (pytest reports it as an error, not a failure)."""


class CaseFailed(AssertionError):
    """A failed case: its reason and failed checks."""


class CaseItem(pytest.Item):
    """One case of a case file. Its setup plays the runs (of every case not played yet, at once)."""

    line = 0

    def setup(self) -> None:
        state = self.config.stash[STATE]
        self.outcome = state.outcome_of(self)
        if self.outcome.status == "error":
            raise CaseError(self.outcome.message)
        if self.outcome.status in ("skipped", "not_run"):  # shown at the case file, not in this module
            raise pytest.skip.Exception(self.outcome.message, _use_item_location=True)

    def runtest(self) -> None:
        if self.outcome.status != "passed":
            raise CaseFailed(self.outcome.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, (CaseFailed, CaseError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.line, f"agent-eval case {self.name}"
