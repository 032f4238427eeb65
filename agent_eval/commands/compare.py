"""`agent-eval compare BASE NEW...`: each new report gated against the base, shown as one matrix;
with `--pairwise`, the judge also says which version answered each pair better (commands/pairwise.py)."""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any
from pathlib import Path

from rich.console import Console

from agent_eval.records import Report
from agent_eval.errors import EXIT_ERROR, EXIT_FAILED, EXIT_PASSED
from agent_eval.report.compare import build_matrix, render_matrix, write_matrix_html, write_matrix_markdown
from agent_eval.report.gate import ReportError, compare_many, load_report, parse_gate_spec

PAIRWISE = "pairwise"


def compare_command(base_path: str | Path, new_paths: list[str | Path], gate_specs: list[str], console: Console,
                    markdown: Path | None = None, html_out: Path | None = None, pairwise: bool = False,
                    judge_model: str | None = None, judge_repeat: int | None = None,
                    cases: Path | None = None) -> int:
    """Gate every new report against the base; 1 if any regressed, 2 on a bad report or gate, else 0."""
    pairwise_gated = any(spec.partition("=")[0].strip() == PAIRWISE for spec in gate_specs)
    metric_specs = [spec for spec in gate_specs if spec.partition("=")[0].strip() != PAIRWISE]
    pairwise = pairwise or pairwise_gated  # --gate pairwise needs the pairwise judging
    try:
        if any(spec.strip() != PAIRWISE for spec in gate_specs if spec.partition("=")[0].strip() == PAIRWISE):
            raise ReportError("--gate pairwise takes no MAX_DROP: it regresses when the win rate's upper bound is "
                              "below 0.5.")
        if not pairwise and (judge_model is not None or judge_repeat is not None or cases is not None):
            given = "--judge-model" if judge_model is not None else "--judge-repeat" if judge_repeat is not None \
                else "--cases"
            raise ReportError(f"{given} is for the judge of the pairwise comparison: add --pairwise (or --gate "
                              f"pairwise), or drop {given}.")
        gates = [parse_gate_spec(spec) for spec in metric_specs] or None
        base = load_report(base_path)
        news = [load_report(path) for path in new_paths]
        if pairwise and len(news) != 1:
            raise ReportError(f"--pairwise compares one NEW report with BASE (got {len(news)}); run one compare "
                              "per new report.")
        gated, level = _gate(base, news, gates, pairwise_gated and not metric_specs, pairwise_gated)
    except ReportError as exc:
        print(f"agent-eval compare: {exc}", file=sys.stderr)
        return EXIT_ERROR
    suites = {str(r.get("suite")) for r in [base, *news] if r.get("suite") is not None}
    if len(suites) > 1:
        print(f"warning: these reports are of different suites ({', '.join(sorted(suites))}); their cases are "
              "paired by id alone", file=sys.stderr)
    empty = [(path, g["nothing_to_gate"]) for path, g in zip(new_paths, gated, strict=False)
             if g.get("nothing_to_gate")]  # none when only the pairwise win rate is gated
    if empty:
        for path, why in empty:
            against = f" {path} against {base_path}" if len(news) > 1 else ""
            print(f"agent-eval compare: nothing to gate{against}: {why}. No verdict is possible; check that the "
                  "reports are of the same suite and that the new run's cases did not all error.", file=sys.stderr)
        return EXIT_ERROR
    matrix = build_matrix(base, news, gated, [str(base_path), *map(str, new_paths)]) if gated else None
    if matrix is not None and len(news) == 1:
        from agent_eval.report.gate_table import render_gate

        render_gate(gated[0], console)
    elif matrix is not None:
        render_matrix(matrix, console)
    from agent_eval.report.compare_intervals import render_compare_intervals

    render_compare_intervals([base, *news], [str(base_path), *map(str, new_paths)], console)
    figures = None
    if pairwise:
        from agent_eval.commands.pairwise import run_pairwise
        from agent_eval.report.pairwise import render_pairwise

        figures = run_pairwise(base, news[0], Path(new_paths[0]), console, judge_model=judge_model,
                               judge_repeat=judge_repeat, level=level, cases=cases)
        console.print()
        render_pairwise(figures, console)
        if not figures["n"]:
            print("agent-eval compare: --pairwise judged no pair: the reports share no case and trial that ran "
                  "without error in both, or every pair's judging failed (listed above).", file=sys.stderr)
    _write_outputs(matrix, figures, markdown, html_out, console)
    if figures is not None and not figures["n"]:
        return EXIT_ERROR
    regression = bool(matrix and matrix["regression"]) or bool(figures and (figures["gate"] or {}).get("regression"))
    return EXIT_FAILED if regression else EXIT_PASSED


def _gate(base: Report, news: list[Report], gates: list[tuple[str, float]] | None,
          pairwise_only: bool, pairwise_gated: bool) -> tuple[list[dict[str, Any]], float | None]:
    """The metric gates, and the pairwise win rate's one-sided level (None when it is not gated). Gated
    together, the pairwise test counts in m: each of the m tests is held to the level alpha/m."""
    from agent_eval.report.gate import ALPHA, decide_gate, paired_gate

    if pairwise_only:
        return [], ALPHA
    if not pairwise_gated:
        return compare_many(base, news, gates), None
    gate, pending = paired_gate(base, news[0], gates)
    m = len(pending) + 1
    decide_gate(gate, pending, m)
    return [gate], ALPHA / m


def _write_outputs(matrix: dict[str, Any] | None, figures: dict[str, Any] | None, markdown: Path | None,
                   html_out: Path | None, console: Console) -> None:
    """--markdown FILE and --html FILE: the matrix, then the pairwise section when there is one."""
    from agent_eval.report.pairwise import write_pairwise_html, write_pairwise_markdown

    outputs: list[tuple[str, Path | None, Callable[[Any, Path], None], Callable[..., None]]] = [
        ("Markdown", markdown, write_matrix_markdown, write_pairwise_markdown),
        ("HTML", html_out, write_matrix_html, write_pairwise_html)]
    for kind, out_path, write, write_with_pairs in outputs:
        if out_path is None:
            continue
        try:
            if figures is None:
                assert matrix is not None
                write(matrix, out_path)
            else:
                write_with_pairs(matrix, figures, out_path)
        except OSError as exc:  # an extra output never changes the verdict
            print(f"warning: could not write the {kind} comparison {out_path}: {exc.strerror or exc}", file=sys.stderr)
        else:
            console.print(f"{kind}: {out_path}", highlight=False, markup=False, soft_wrap=True)
