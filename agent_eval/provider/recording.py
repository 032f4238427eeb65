"""`run --record DIR`: one recording per folder, one recording command at a time (docs/ci-without-a-key.md).

The folder is locked for the command's life (`DIR/.lock`, an advisory lock the system drops when the
process ends), so a second command recording into it stops at once. A folder that holds another
recording (another suite path, agent spec or model, or trials beyond this run's) is refused, unless
the command extends it (`--replay-miss live`): then it replays what is recorded and records the rest.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import orjson

from agent_eval.errors import ConfigError
from agent_eval.provider import cassette
from agent_eval.provider.tape import Tape

LOCK = ".lock"
SAME = ("suite", "cases_file", "agent", "model")  # what makes a recording the same one (not the version)
_TRIAL = re.compile(r"^(0|[1-9][0-9]{0,9})\.jsonl$")


def lock_folder(folder: Path) -> int:
    """The descriptor holding DIR/.lock (exclusive, not waited for); ConfigError when another command holds it."""
    import fcntl

    path = folder / LOCK
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise ConfigError(f"--record {folder}: cannot lock {path} ({exc.strerror or exc}); pass a writable "
                          "folder with no link at .lock.") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise ConfigError(f"--record {folder}: another agent-eval command is recording into it now ({path} is "
                          "locked); wait for it to end, or record into another folder.") from None
    return fd


def other_recording(folder: Path, header: dict[str, Any], runs: list[tuple[str, int]]) -> str | None:
    """What makes DIR another recording than the one `header` describes, or None (empty, or the same one)."""
    path = folder / cassette.HEADER
    if not path.exists():
        return None
    try:
        old = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        old = None
    if not isinstance(old, dict):
        return f"{path} is not an agent-eval recording's header"
    for key in SAME:
        if old.get(key) != header.get(key):
            return f"{path} records {key} {old.get(key)!r}, not {header.get(key)!r}"
    trials: dict[str, set[int]] = {}
    for case_id, trial in runs:
        trials.setdefault(case_id, set()).add(trial)
    for case_id, mine in trials.items():
        folder_of = folder / cassette.case_folder(case_id)
        if not folder_of.is_dir():
            continue
        beyond = sorted(int(m.group(1)) for name in os.listdir(folder_of) if (m := _TRIAL.match(name))
                        and int(m.group(1)) not in mine)
        if beyond:
            return f"{folder_of} holds trial {', '.join(map(str, beyond[:5]))} of case {case_id!r}, beyond this run's"
    return None


def open_recording(folder: Path, header: dict[str, Any], runs: list[tuple[str, int]], extend: bool) -> Tape:
    """--record DIR: the command's tape, DIR locked and its header written. DIR holding another recording is
    exit 2, unless `extend` (--replay-miss live): then the tape replays DIR and records what it lacks."""
    header_path = folder / cassette.HEADER
    if header_path.is_symlink():
        raise ConfigError(f"--record {folder}: {header_path} is a symbolic link, which a recording never "
                          "follows; remove it, or record into another folder.")
    lock, kept = lock_folder(folder), False
    try:
        if extend and header_path.exists():  # acts as --replay DIR --replay-miss live
            cassette.read_header(folder)  # exit 2 when it is not a recording
            kept = True
            return Tape(folder, True, True, lock=lock, extends=True)
        other = other_recording(folder, header, runs)
        if other is not None:
            raise ConfigError(f"--record {folder} holds another recording ({other}); record into an empty "
                              "folder, or add --replay-miss live to extend it (its answers replayed, what it "
                              "lacks recorded).")
        try:
            cassette.write_header(folder, header)
        except OSError as exc:
            raise ConfigError(f"--record {folder}: cannot write there ({exc.strerror or exc}); pass a "
                              "writable folder.") from None
        kept = True
        return Tape(folder, False, lock=lock)
    finally:
        if not kept:
            os.close(lock)
