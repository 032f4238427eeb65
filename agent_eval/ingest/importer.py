"""`agent-eval import FORMAT SOURCE`: other tools' files as a validated case file (docs/import-and-score.md)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from rich.console import Console

from agent_eval.records import CASE_FILE_SHAPE, Case, split_case_file
from agent_eval.errors import CaseFileError, ConfigError
from agent_eval.ingest.formats import format_row, import_formats
from agent_eval.ingest.records import TOO_DEEP, Unmappable
from agent_eval.suite.fields import id_problem, is_too_deep

if TYPE_CHECKING:
    from agent_eval.suite.cases import Suite


def map_records(fmt: str, source: Path, logs: Path | None = None,
                ) -> tuple[list[tuple[str, Case]], list[Unmappable], list[str]]:
    """(record label, case) for every record that maps, the records that do not, and notes."""
    row = format_row(fmt, "cases", logs, f"unknown import format {fmt!r}; use one of {', '.join(import_formats())}.",
                     f"--logs {logs} joins OTLP log records to OpenTelemetry spans; it goes with "
                     f"`import otel`, not `import {fmt}`.")
    assert row.cases is not None
    return row.cases(source, logs)


def screen(cases: list[tuple[str, Case]], bad: list[Unmappable]) -> list[tuple[str, Case]]:
    """Every reader's cases pass here: one nested too deep, or whose id or a tool name holds a control
    character, is left out as unmappable, so the rest import."""
    kept = []
    for where, case in cases:
        names = [c.get("name") for c in case.get("expected_tools") or () if isinstance(c, dict)]
        problem = id_problem(case.get("id")) or next(
            (f"the tool name {n!r} holds a control character (a newline, tab or escape); remove it"
             for n in names if isinstance(n, str) and id_problem(n)), None)
        if problem is None and is_too_deep(case):
            problem = TOO_DEEP
        if problem is not None:
            bad.append(Unmappable(where, problem))
        else:
            kept.append((where, case))
    return kept


def tools_ref(tools: str, out_dir: Path) -> str:
    """The suite's `tools`: a file path relative to the written case file, or a dotted module as given."""
    path = Path(tools)
    if path.suffix == ".py" or path.exists():
        if not path.is_file():
            raise ConfigError(f"--tools {tools}: no such file; pass the tools module (a .py file) the cases use.")
        return Path(os.path.relpath(path.resolve(), out_dir.resolve())).as_posix()
    return tools


# The suite keys a recording can give, and the metadata field each imported case keeps it in.
LIFTED = (("system_prompt", "recorded_system_prompt"), ("model", "recorded_model"))


def suite_block(cases: list[Case], tools_ref: str | None) -> dict[str, Any]:
    """The suite block `import --out` writes: the tools module, and the system prompt and model when every
    case's recording gave the same one (the system prompt then leaves the cases' metadata)."""
    block: dict[str, Any] = {"tools": tools_ref} if tools_ref else {}
    for key, field in LIFTED:
        values = [(c.get("metadata") or {}).get(field) for c in cases]
        if values and values[0] is not None and all(v == values[0] for v in values):
            block[key] = values[0]
    if "system_prompt" in block:
        for case in cases:
            del case["metadata"]["recorded_system_prompt"]
    return block


def document(cases: list[Case], block: dict[str, Any]) -> bytes:
    """The case file `import --out` writes: a bare list of cases when there is no suite block to write."""
    doc: Any = {"suite": block, "cases": cases} if block else cases
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


def _probe(cases: list[Case], block: dict[str, Any] | None) -> bytes:
    """The document validated beside the output. `block` None: a new file's, which names no tools unless
    --tools did, so no code is loaded (a bare list would load a tools.py found in that folder)."""
    if block is None:
        return orjson.dumps({"suite": {"tools": []}, "cases": cases})
    return orjson.dumps({"suite": block, "cases": cases} if block else cases)


def validate(cases: list[tuple[str, Case]], block: dict[str, Any] | None, out_dir: Path,
             bad: list[Unmappable]) -> tuple[list[tuple[str, Case]], Suite | None]:
    """Keep the cases that validate beside the output file under the suite block `block` (None: a new file
    with no tools); the others become unmappable records. Also returns the loaded suite of those kept."""
    from agent_eval.suite.cases import load_suite

    probe = out_dir / f".agent-eval-import-{os.getpid()}.json"
    try:
        for _ in range(2):  # a second pass only confirms the file once the invalid cases are out
            probe.write_bytes(_probe([c for _, c in cases], block))
            try:
                return cases, load_suite(probe)
            except CaseFileError as exc:
                problems_of: dict[str, list[str]] = {}
                for problem in exc.problems:
                    if problem.case_id is None:
                        raise ConfigError(f"the imported cases cannot be validated: {problem.field}: "
                                          f"{problem.message}") from None
                    field = f"{problem.field}: " if problem.field else ""
                    problems_of.setdefault(problem.case_id, []).append(field + problem.message)
                kept = []
                for where, case in cases:
                    if case["id"] in problems_of:
                        bad.append(Unmappable(where, f"case {case['id']!r} does not validate: "
                                              + "; ".join(problems_of[case["id"]])))
                    else:
                        kept.append((where, case))
                cases = kept
                if not cases:
                    return cases, None
        raise ConfigError("the imported cases do not validate; this is a bug, please report it.")
    except OSError as exc:
        raise ConfigError(f"cannot write in {out_dir} ({exc.strerror or exc}); pass --out with a writable "
                          "path.") from None
    finally:
        probe.unlink(missing_ok=True)


def unique(cases: list[tuple[str, Case]], bad: list[Unmappable]) -> list[tuple[str, Case]]:
    seen: dict[str, str] = {}
    kept = []
    for where, case in cases:
        if case["id"] in seen:
            bad.append(Unmappable(where, f"duplicate case id {case['id']!r} (first at {seen[case['id']]})"))
            continue
        seen[case["id"]] = where
        kept.append((where, case))
    return kept


def print_problems(bad: list[Unmappable], notes: list[str], source: Path, err: Console) -> None:
    if bad:
        what = f"records of {source} could not be mapped and were" if len(bad) != 1 else \
            f"record of {source} could not be mapped and was"
        err.print(f"{len(bad)} {what} left out:", highlight=False, markup=False, soft_wrap=True)
        for item in bad:
            err.print(f"  - {item}", highlight=False, markup=False, soft_wrap=True)
    for note in notes:
        err.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)


class Target:
    """The case file `import --into` appends to: its document as read, its suite block and its case ids."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.doc: Any = orjson.loads(path.read_bytes())
        except FileNotFoundError:
            raise ConfigError(f"--into {path}: no such file; to start a new case file, use --out {path}.") from None
        except OSError as exc:
            raise ConfigError(f"--into {path}: cannot read it ({exc.strerror or exc}).") from None
        except orjson.JSONDecodeError as exc:
            raise ConfigError(f"--into {path}: not JSON ({exc}); fix the file or pick another.") from None
        split = split_case_file(self.doc)
        if split is None:
            raise ConfigError(f"--into {path}: not a case file ({CASE_FILE_SHAPE}); pick the case file to append to.")
        block, self.cases = split
        self.block: dict[str, Any] = block if isinstance(block, dict) else {}
        self.ids = {str(c["id"]) for c in self.cases if isinstance(c, dict) and "id" in c}

    def renumber(self, cases: list[tuple[str, Case]]) -> list[tuple[str, Case]]:
        """Each case whose id the file already holds gets the first free `-2`, `-3`, ... suffix."""
        taken = self.ids | {c["id"] for _, c in cases}
        for _, case in cases:
            if case["id"] in self.ids:
                n = 2
                while f"{case['id']}-{n}" in taken:
                    n += 1
                case["id"] = f"{case['id']}-{n}"
                taken.add(case["id"])
        return cases

    def write(self, new: list[Case]) -> Path:
        """Rewrite the file with `new` appended (atomically), the file as it was kept in a new backup
        (CASEFILE.bak, else .bak.1, .bak.2, ...: an earlier backup is never overwritten); the backup's path."""
        import tempfile

        doc = {**self.doc, "cases": [*self.cases, *new]} if isinstance(self.doc, dict) else [*self.cases, *new]
        real = self.path.resolve()  # a symlinked case file is updated where it lives, the link kept
        tmp: Path | None = None
        try:
            backup = _back_up(real, self.path)
            fd, name = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)  # never a link
            tmp = Path(name)
            with os.fdopen(fd, "wb") as out:
                out.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
            os.chmod(tmp, real.stat().st_mode & 0o777)
            os.replace(tmp, real)
        except OSError as exc:
            if tmp is not None:
                tmp.unlink(missing_ok=True)
            raise ConfigError(f"--into {self.path}: cannot rewrite it ({exc.strerror or exc}); the file is "
                              "unchanged.") from None
        return backup


MAX_BACKUPS = 10_000


def _back_up(real: Path, given: Path) -> Path:
    """A copy of `real` in the first free name of CASEFILE.bak, .bak.1, .bak.2, ... (created, never opened
    through a link or over an existing file); ConfigError when one of them is a symbolic link."""
    import shutil

    for n in range(MAX_BACKUPS):
        backup = real.with_name(real.name + ".bak" + (f".{n}" if n else ""))
        if backup.is_symlink():
            raise ConfigError(f"--into {given}: the backup {backup} is a symbolic link, which import never "
                              "writes through; remove it and import again. The file is unchanged.")
        try:
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as out, real.open("rb") as original:
            shutil.copyfileobj(original, out)
        shutil.copystat(real, backup)
        return backup
    raise ConfigError(f"--into {given}: {MAX_BACKUPS} backups of it exist already ({real.name}.bak ...); "
                      "remove the old ones and import again. The file is unchanged.")


def empty_env_warning(suite: Suite, where: str) -> str | None:
    """The warning `import --out` prints when the tools read the run's env and the cases give none."""
    takers = suite.tools.env_tools()
    if not takers or suite.initial_env or any(c.get("initial_env") for c in suite.cases):
        return None
    named = ", ".join(takers[:3]) + (f" and {len(takers) - 3} more" if len(takers) > 3 else "")
    return (f"warning: the tools {named} take the run's env, but {where} gives no initial_env: these cases will "
            "run on an empty env, and a tool that reads it will raise. Append them to your suite with "
            "`agent-eval import ... --into CASEFILE` (its initial_env is kept), or add \"initial_env\" to the "
            "suite block.")
