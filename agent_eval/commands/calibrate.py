"""`agent-eval calibrate REPORT --labels FILE`: the judge's verdicts against human labels.

The report's own verdicts are compared, or with `--judge-repeat N` fresh majority verdicts asked as
`rescore --judge-repeat` asks them. The figures go to the terminal and to `<report stem>.calibration.json`
beside the report; the exit code is 1 below `--min-kappa`, 2 on bad input or a null kappa, else 0.
"""
from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console

from agent_eval.records import Case, RunRecord
from agent_eval.errors import ConfigError
from agent_eval.flags import DEFAULTS
from agent_eval.report.calibration_table import render_calibration
from agent_eval.report.files import calibration_path_of, page_path_of, write_atomic
from agent_eval.report.model import load_report
from agent_eval.report.shapes import JUDGED_SHAPE, RESCORE_SHAPE
from agent_eval.score.calibration import Verdict, calibrate, exit_code, report_verdicts, usable_verdict
from agent_eval.score.labels import Label, read_labels

DEFAULT_MIN_KAPPA = 0.6

def calibrate_command(report: Path, labels: Path, console: Console, *, cases: Path | None = None,
                      judge_model: str | None = None, judge_timeout: float | None = None,
                      judge_repeat: int | None = None, min_kappa: float = DEFAULT_MIN_KAPPA,
                      environ: Mapping[str, str] | None = None) -> int:
    """Compare, print, write the calibration file, and return the exit code."""
    if not math.isfinite(min_kappa) or not -1 <= min_kappa <= 1:
        raise ConfigError(f"--min-kappa must be a number from -1 to 1 (got {min_kappa}).")
    if judge_repeat is not None and not 1 <= judge_repeat <= 2**31 - 1:
        raise ConfigError(f"--judge-repeat must be at least 1 and at most {2**31 - 1} (got {judge_repeat}).")
    data = load_report(report, JUDGED_SHAPE, *((RESCORE_SHAPE,) if judge_repeat else ()))  # traces judged again
    label_list = read_labels(labels)
    order, verdicts = report_verdicts(data)
    if judge_repeat:
        verdicts = fresh_verdicts(data, report, label_list, cases, judge_model, judge_timeout, judge_repeat,
                                  console, os.environ if environ is None else environ)
    doc = calibrate(str(data["run_id"]), order, verdicts, label_list)
    render_calibration(doc, console)
    out = calibration_path_of(report)
    try:
        write_atomic(out, orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    except OSError as exc:
        raise ConfigError(f"cannot write {out} ({exc.strerror or exc}).") from None
    console.print(f"Calibration: {out}", highlight=False, markup=False, soft_wrap=True)
    page = page_path_of(report)
    if page.exists():  # the report's page shows the last calibration beside the judge's summary
        from agent_eval.report.html import write_html

        try:
            write_html(data, page, calibration=doc)
        except OSError as exc:  # an extra output never changes the verdict
            console.print(f"warning: could not rewrite {page}: {exc.strerror or exc}", highlight=False, markup=False)
        else:
            console.print(f"HTML: {page}", highlight=False, markup=False, soft_wrap=True)
    code = exit_code(doc, min_kappa)
    kappa = doc["overall"]["kappa"]
    if kappa is None:
        why = ("no label matched a judged run of this report" if not doc["overall"]["n"] else
               "the labels or the verdicts hold only one class, so kappa is undefined; label runs of both kinds")
        console.print(f"ERROR (exit 2): {why}.", highlight=False, markup=False)
    elif code == 1:
        console.print(f"FAIL (exit 1): kappa {kappa:.3f} is below --min-kappa {min_kappa:g}.", highlight=False)
    else:
        console.print(f"PASS (exit 0): kappa {kappa:.3f} is at least --min-kappa {min_kappa:g}.", highlight=False)
    return code


def fresh_verdicts(data: Mapping[str, Any], report: Path, labels: list[Label], cases: Path | None,
                   judge_model: str | None, judge_timeout: float | None, repeat: int, console: Console,
                   environ: Mapping[str, str]) -> dict[tuple[str, int, str], Verdict | None]:
    """N uncached answers per labelled run of this report, the majority verdict each (None on a tie, an
    unusable answer, or a run the judge would not be asked about), with the judge resolved as `run` does."""
    from agent_eval.commands.judging import labelled_runs, resolve_judge
    from agent_eval.score.judge import CRITERIA, Judge

    suite, (model, base_url, api_key) = resolve_judge(data, report, cases, judge_model, judge_timeout,
                                                      console, environ)
    timeout = DEFAULTS.judge_timeout if judge_timeout is None else judge_timeout
    judge = Judge(model, base_url, api_key, None, repeat, timeout)
    by_id = {str(c["id"]): c for c in suite.cases}
    work = labelled_runs(data, labels, by_id)

    async def ask_all() -> list[Any]:
        limit = asyncio.Semaphore(8)

        async def one(case: Case, run: RunRecord) -> Any:
            async with limit:
                return await judge.judge_run(case, run["trace"])
        return list(await asyncio.gather(*(one(case, run) for case, run in work)))

    outcomes = asyncio.run(ask_all())
    verdicts: dict[tuple[str, int, str], Verdict | None] = {}
    for (case, run), outcome in zip(work, outcomes, strict=True):
        for criterion in CRITERIA:
            verdicts[(str(case["id"]), run["trial"], criterion.field)] = usable_verdict(
                outcome.records.get(criterion.record))
    return verdicts
