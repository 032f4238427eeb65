"""Human labels: the JSON Lines file that `label` and the HTML page write and `calibrate` reads.

Each line is `{"run_id", "case_id", "trial", "label": "pass" | "fail", "criterion": "rubric" |
"expected_outcome" (default "rubric"), "note"?, "labeler"?}`. The last line for one (run_id, case_id,
trial, criterion, labeler) wins.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agent_eval.errors import ConfigError
from agent_eval.score.judge import CRITERION_FIELDS

LABELS = ("pass", "fail")
CRITERIA = CRITERION_FIELDS  # a label names the case field its verdict is about
"""The judged criteria, in the order calibration lists them (the judge's own order)."""


class LabelsError(ConfigError):
    """A labels file that cannot be read, or a line of it that is not a label (exit 2)."""


@dataclass(frozen=True)
class Label:
    """One human label of one run's criterion."""

    run_id: str
    case_id: str
    trial: int
    label: str
    criterion: str = "rubric"
    note: str | None = None
    labeler: str | None = None
    line: int = 0  # its line in the file (1-based), for messages

    @property
    def key(self) -> tuple[str, str, int, str, str | None]:
        """What a later line for the same run, criterion and labeler replaces."""
        return self.run_id, self.case_id, self.trial, self.criterion, self.labeler

    @property
    def is_pass(self) -> bool:
        return self.label == "pass"

    def as_json(self) -> dict[str, Any]:
        """The label as a line of the file (note and labeler only when given)."""
        out: dict[str, Any] = {"run_id": self.run_id, "case_id": self.case_id, "trial": self.trial,
                               "label": self.label, "criterion": self.criterion}
        if self.note is not None:
            out["note"] = self.note
        if self.labeler is not None:
            out["labeler"] = self.labeler
        return out


def _problem(record: Any) -> str | None:
    """What is wrong with one parsed line; None when it is a label."""
    if not isinstance(record, dict):
        return "it is not a JSON object"
    for key in ("run_id", "case_id"):
        value = record.get(key)
        is_int_id = key == "case_id" and isinstance(value, int) and not isinstance(value, bool)
        if (not isinstance(value, str) or not value) and not is_int_id:
            return f'"{key}" must be a non-empty string'
    trial = record.get("trial")
    if not isinstance(trial, int) or isinstance(trial, bool) or trial < 0:
        return '"trial" must be a whole number, 0 or more'
    if record.get("label") not in LABELS:
        return f'"label" must be "pass" or "fail" (found {record.get("label")!r})'
    if record.get("criterion", "rubric") not in CRITERIA:
        return f'"criterion" must be "rubric" or "expected_outcome" (found {record.get("criterion")!r})'
    for key in ("note", "labeler"):
        if record.get(key) is not None and not isinstance(record.get(key), str):
            return f'"{key}" must be a string when given'
    return None


def parse_labels(data: bytes, path: str | Path) -> list[Label]:
    """Every label of the file's bytes, the last line per key winning (in the order keys first appeared);
    LabelsError naming the line of the first malformed one. Blank lines are skipped."""
    kept: dict[tuple[str, str, int, str, str | None], Label] = {}
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise LabelsError(f"{path}: line {number} is not JSON ({exc}); each line is one label such as "
                              '{"run_id": "...", "case_id": "...", "trial": 0, "label": "pass"}.') from None
        problem = _problem(record)
        if problem:
            raise LabelsError(f"{path}: line {number} is not a label: {problem}; fix or remove that line.")
        label = Label(run_id=record["run_id"], case_id=str(record["case_id"]), trial=record["trial"],
                      label=record["label"], criterion=record.get("criterion") or "rubric",
                      note=record.get("note"), labeler=record.get("labeler"), line=number)
        kept.pop(label.key, None)
        kept[label.key] = label
    return sorted(kept.values(), key=lambda lab: lab.line)


def read_labels(path: str | Path) -> list[Label]:
    """The labels of the file at path (see parse_labels); LabelsError when it cannot be read."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise LabelsError(f"{path}: cannot read the labels file ({exc.strerror or exc}); check the path.") from None
    return parse_labels(data, path)


def append_label(path: Path, label: Label) -> None:
    """Append one label as a line of the file (created when missing), flushed at once."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as f:
        f.write(orjson.dumps(label.as_json()) + b"\n")
        f.flush()
