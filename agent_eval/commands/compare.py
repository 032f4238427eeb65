"""`agent-eval compare BASE NEW...`: each new report gated against the base, shown as one matrix."""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any
from pathlib import Path

from rich.console import Console

from agent_eval.errors import EXIT_ERROR, EXIT_FAILED, EXIT_PASSED
from agent_eval.report.compare import build_matrix, render_matrix, write_matrix_html, write_matrix_markdown
from agent_eval.report.gate import ReportError, compare_many, load_report, parse_gate_spec


def compare_command(base_path: str | Path, new_paths: list[str | Path], gate_specs: list[str], console: Console,
                    markdown: Path | None = None, html_out: Path | None = None) -> int:
    """Gate every new report against the base; 1 if any regressed, 2 on a bad report or gate, else 0."""
    try:
        gates = [parse_gate_spec(spec) for spec in gate_specs] or None
        base: dict[str, Any] = dict(load_report(base_path))
        news: list[dict[str, Any]] = [dict(load_report(path)) for path in new_paths]
        gated = compare_many(base, news, gates)
    except ReportError as exc:
        print(f"agent-eval compare: {exc}", file=sys.stderr)
        return EXIT_ERROR
    suites = {str(r.get("suite")) for r in [base, *news] if r.get("suite") is not None}
    if len(suites) > 1:
        print(f"warning: these reports are of different suites ({', '.join(sorted(suites))}); their cases are "
              "paired by id alone", file=sys.stderr)
    empty = [(path, g["nothing_to_gate"]) for path, g in zip(new_paths, gated, strict=True)
             if g.get("nothing_to_gate")]
    if empty:
        for path, why in empty:
            against = f" {path} against {base_path}" if len(news) > 1 else ""
            print(f"agent-eval compare: nothing to gate{against}: {why}. No verdict is possible; check that the "
                  "reports are of the same suite and that the new run's cases did not all error.", file=sys.stderr)
        return EXIT_ERROR
    matrix = build_matrix(base, news, gated, [str(base_path), *map(str, new_paths)])
    if len(news) == 1:
        from agent_eval.report.gate_table import render_gate

        render_gate(gated[0], console)
    else:
        render_matrix(matrix, console)
    from agent_eval.report.compare_intervals import render_compare_intervals

    render_compare_intervals([base, *news], [str(base_path), *map(str, new_paths)], console)
    outputs: list[tuple[str, Path | None, Callable[[dict[str, Any], Path], None]]] = [
        ("Markdown", markdown, write_matrix_markdown), ("HTML", html_out, write_matrix_html)]
    for kind, out_path, write in outputs:
        if out_path is None:
            continue
        try:
            write(matrix, out_path)
        except OSError as exc:  # an extra output never changes the verdict
            print(f"warning: could not write the {kind} comparison {out_path}: {exc.strerror or exc}", file=sys.stderr)
        else:
            console.print(f"{kind}: {out_path}", highlight=False, markup=False, soft_wrap=True)
    return EXIT_FAILED if matrix["regression"] else EXIT_PASSED


