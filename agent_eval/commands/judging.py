"""What `label` and `calibrate` share: the case file (the flag, else the report's, named first) and the
judge, resolved as `run` resolves it and never from the report."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from rich.console import Console

from agent_eval.flags.rows import JUDGE_MODEL
from agent_eval.records import CASE_FILE_SHAPE, Case, RunRecord, split_case_file
from agent_eval.errors import ConfigError
from agent_eval.score.labels import Label
from agent_eval.suite.cases import Suite, SuiteBlock, load_suite


def cases_path(data: Mapping[str, Any], report: Path, cases: Path | None, console: Console, code: bool) -> Path:
    """--cases, else the report's cases_file (checked, and printed before it is loaded)."""
    from agent_eval.commands.report_judge import report_cases_file

    return report_cases_file(data, report, cases, lambda line: console.print(
        line, highlight=False, markup=False, soft_wrap=True), runs_code=code)


def load_cases(data: Mapping[str, Any], report: Path, cases: Path | None, console: Console) -> Suite:
    """The suite of --cases, else of the report's cases_file."""
    return load_suite(cases_path(data, report, cases, console, True))


def load_case_data(data: Mapping[str, Any], report: Path, cases: Path | None, console: Console) -> Suite:
    """The suite of --cases, else of the report's cases_file, read as data only: its suite block (checked)
    and its cases as written, with no tools module, scorer or MCP server loaded, since a report that names
    the file chooses no code to run (what `compare --pairwise` needs: the rubrics and the judge's settings)."""
    import orjson

    from agent_eval.score.custom import ScorerSet
    from agent_eval.suite.tools import ToolSet

    path = cases_path(data, report, cases, console, False)
    try:
        doc = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise ConfigError(f"cannot read the case file {path} ({exc.strerror or exc}); pass --cases PATH.") from None
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"the case file {path} is not valid JSON ({exc}); pass --cases PATH.") from None
    block, rows = split_case_file(doc) or (None, [])
    if not isinstance(block, dict):
        raise ConfigError(f"{path} is not a case file ({CASE_FILE_SHAPE}); pass --cases PATH.")
    try:
        SuiteBlock.model_validate(block)
    except ValueError as exc:
        raise ConfigError(f"the suite block of {path} is invalid; run `agent-eval validate --cases {path}` "
                          f"({str(exc).splitlines()[0]}).") from None
    cases_read = [cast(Case, row) for row in rows if isinstance(row, dict) and isinstance(row.get("id"), str)]
    return Suite(path=path, name=str(block.get("name") or path.stem), settings=dict(block), initial_env={},
                 cases=cases_read, tools=ToolSet([]), scorers=ScorerSet())


def resolve_judge(data: Mapping[str, Any], report: Path, cases: Path | None, judge_model: str | None,
                  judge_timeout: float | None, console: Console,
                  environ: Mapping[str, str], code: bool = True) -> tuple[Suite, tuple[str, str | None, str | None]]:
    """(suite, (model, base_url, api_key)): the judge from the flag, the environment and the suite block,
    exactly as `run` resolves it. Exit 2 when that is the provider's default endpoint but the report was
    judged elsewhere (a local server): transcripts are never sent to a place nobody chose. Without `code`,
    the case file is read as data only (`load_case_data`)."""
    from agent_eval.flags import Flags, setting
    from agent_eval.run.config import resolve

    setting("judge_timeout").checked(judge_timeout)
    suite = (load_cases if code else load_case_data)(data, report, cases, console)
    cfg = resolve(Flags(judge_model=judge_model, judge_timeout=judge_timeout), suite, environ)
    model = cfg[JUDGE_MODEL]
    if not model:
        raise ConfigError("the judge has no model: pass --judge-model NAME, set AGENT_EVAL_JUDGE_MODEL, or set "
                          f"\"judge\": {{\"model\": ...}} in the suite block of {suite.path}.")
    if not cfg.judge_api_key:
        raise ConfigError("the judge has no API key: set AGENT_EVAL_JUDGE_API_KEY (or OPENAI_API_KEY), or "
                          "AGENT_EVAL_JUDGE_BASE_URL for a local server that takes none.")
    stored = (data.get("settings") or {}).get("judge_base_url")
    if cfg.judge_base_url is None and stored:
        raise ConfigError(f"{report} was judged at {stored}, and the judge resolved here is the provider's "
                          "default endpoint; set AGENT_EVAL_JUDGE_BASE_URL to the endpoint you mean (the "
                          "report never chooses where transcripts go).")
    return suite, (model, cfg.judge_base_url, cfg.judge_api_key)


def would_be_judged(run: Mapping[str, Any]) -> bool:
    """True for a run `rescore` would ask the judge about: no agent-side error, a completed trace, and
    every deterministic check passed."""
    from agent_eval.score.judge import CRITERIA, JUDGE_ERROR

    error = run.get("error")
    if error and not str(error).startswith(JUDGE_ERROR):
        return False
    trace = run.get("trace") or {}
    judged = {c.check for c in CRITERIA}
    return trace.get("stop_reason") == "completed" and all(
        c.get("passed") for c in run.get("checks") or [] if c.get("name") not in judged)


def labelled_runs(data: Mapping[str, Any], labels: list[Label],
                  by_id: Mapping[str, Case]) -> list[tuple[Case, RunRecord]]:
    """(case, run) for each run of the report with a label of its run id, in report order, whose case is
    still in the case file and which the judge would be asked about."""
    wanted = {(lab.case_id, lab.trial) for lab in labels if lab.run_id == data.get("run_id")}
    out = []
    for entry in data.get("cases") or []:
        case = by_id.get(str(entry.get("id")))
        if case is None:
            continue
        for run in sorted(entry.get("runs") or [], key=lambda r: r["trial"]):
            if (str(entry.get("id")), run["trial"]) in wanted and would_be_judged(run):
                out.append((case, run))
    return out
