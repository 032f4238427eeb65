"""The pairwise comparison's figures and how they are shown (`compare BASE NEW --pairwise`).

Each judged (case, trial) pair scores 1 for a win of NEW, 0 for a loss, and 1/2 for a tie or an
inconsistent pair. The win rate is their mean over the n judged pairs; its 95% interval is the
case-clustered bootstrap of the suite intervals (score/intervals.py: the pairs of one case are resampled
together), and `--gate pairwise` regresses when the win rate's one-sided upper bound at the gate's
level is below 0.5. The sign test is exact: two-sided, on wins against losses.
"""
from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path
from fractions import Fraction
from typing import Any

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent_eval.report.fmt import format_cost
from agent_eval.score.intervals import percentile_interval, resampled_values
from agent_eval.score.pairwise import INCONSISTENT, LOSS, TIE, WIN, PairVerdict

SCORE = {WIN: 1.0, LOSS: 0.0, TIE: 0.5, INCONSISTENT: 0.5}


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact sign test of wins against losses (ties and inconsistent pairs left out):
    min(1, 2 P(X <= min(wins, losses))), X ~ Binomial(wins + losses, 1/2); 1 when there are none."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = Fraction(sum(math.comb(n, i) for i in range(min(wins, losses) + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


def summarize_pairs(verdicts: Sequence[PairVerdict], level: float | None) -> dict[str, Any]:
    """The `pairwise` figures: counts, win rate, its interval, the sign test, the disagreeing pairs, and
    (with `level`, the gate's one-sided level) the upper bound and the gate's verdict."""
    judged = [v for v in verdicts if v.outcome is not None]
    counts = {o: sum(1 for v in judged if v.outcome == o) for o in (WIN, LOSS, TIE, INCONSISTENT)}
    n = len(judged)
    cases = list(dict.fromkeys(v.case_id for v in judged))
    where = {case_id: i for i, case_id in enumerate(cases)}
    numer, denom = np.zeros((len(cases), 1)), np.zeros((len(cases), 1))
    for v in judged:
        numer[where[v.case_id], 0] += SCORE[v.outcome or TIE]
        denom[where[v.case_id], 0] += 1
    win_rate = (counts[WIN] + counts[TIE] / 2 + counts[INCONSISTENT] / 2) / n if n else None
    values = resampled_values(numer, denom)[:, 0] if n else np.empty(0)
    out: dict[str, Any] = {
        "n": n, "cases": len(cases), "wins": counts[WIN], "losses": counts[LOSS], "ties": counts[TIE],
        "inconsistent": counts[INCONSISTENT], "win_rate": win_rate,
        "ci": [win_rate, win_rate] if len(cases) == 1 else percentile_interval(values) if n else None,
        "sign_test_p": sign_test_p(counts[WIN], counts[LOSS]),
        "inconsistent_pairs": [_shown(v) for v in judged if v.outcome == INCONSISTENT],
        "errors": [{"id": v.case_id, "trial": v.trial, "error": v.error} for v in verdicts if v.outcome is None],
        "gate": None,
    }
    if level is not None:
        kept = values[~np.isnan(values)]
        upper = float(np.quantile(kept, 1.0 - level)) if kept.size else None
        regressed = upper is not None and upper < 0.5
        out["gate"] = {"level": level, "upper_bound": upper,
                       "verdict": "regressed" if regressed else "no regression" if upper is not None else "n/a",
                       "regression": regressed}
    return out


def _shown(v: PairVerdict) -> dict[str, Any]:
    assert v.base_first is not None and v.new_first is not None
    return {"id": v.case_id, "trial": v.trial,
            "base_shown_first": {"choice": v.base_first[0], "prefers": _prefers(v.base_first[0], "base"),
                                 "reason": v.base_first[1]},
            "new_shown_first": {"choice": v.new_first[0], "prefers": _prefers(v.new_first[0], "new"),
                                "reason": v.new_first[1]}}


def _prefers(choice: str, shown_as_a: str) -> str:
    other = "new" if shown_as_a == "base" else "base"
    return {"A": shown_as_a, "B": other}.get(choice, "tie")


def _rate(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) else "n/a"


def headline(p: dict[str, Any]) -> list[str]:
    """The figures in lines of plain text, shared by the terminal, Markdown and HTML."""
    ci = p.get("ci")
    interval = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
    judge = p.get("judge") or {}
    cost = judge.get("cost_usd")
    dedup = judge.get("deduplicated") or 0  # prompts asked twice in this comparison; the rest came from the cache
    lines = [f"{p['n']} pairs over {p['cases']} cases: {p['wins']} wins, {p['losses']} losses, {p['ties']} ties, "
             f"{p['inconsistent']} inconsistent (the two orders disagreed)",
             f"win rate of NEW: {_rate(p['win_rate'])}{interval} (95% case-clustered bootstrap; wins + ties/2 + "
             "inconsistent/2, over n)",
             f"sign test (wins vs losses, two-sided, exact): p = {p['sign_test_p']:.3g}",
             f"judge {p.get('judge_model') or 'n/a'}: {judge.get('calls', 0)} calls, {dedup} de-duplicated, "
             f"{(judge.get('cache_hits') or 0) - dedup} cached, {judge.get('prompt_tokens') or 0:,} + "
             f"{judge.get('completion_tokens') or 0:,} tokens, "
             + (format_cost(cost) if isinstance(cost, (int, float)) else "cost n/a (the judge's model has no price)")]
    gate = p.get("gate")
    if gate:
        bound = gate.get("upper_bound")
        lines.append(f"gate pairwise: {gate['verdict']} (upper bound {_rate(bound)} at the one-sided "
                     f"{1 - gate['level']:.2%} level; regressed when below 0.500)")
    if p.get("errors"):
        lines.append(f"{len(p['errors'])} pair(s) could not be judged and are left out: "
                     + "; ".join(f"{e['id']} #{e['trial']}: {e['error']}" for e in p["errors"][:5]))
    return lines


def render_pairwise(p: dict[str, Any], console: Console) -> None:
    """The pairwise section of `compare` in the terminal."""
    console.print(Text("Pairwise judging (each pair asked twice, the sides swapped)", style="bold"))
    for line in headline(p):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    if p["inconsistent_pairs"]:
        table = Table(title=f"{len(p['inconsistent_pairs'])} pair(s) whose orders disagreed", title_justify="left",
                      box=box.SIMPLE_HEAD)
        for name in ("case", "trial", "BASE shown first", "NEW shown first"):
            table.add_column(name, overflow="fold")
        for pair in p["inconsistent_pairs"]:
            table.add_row(Text(str(pair["id"])), str(pair["trial"]), Text(_order(pair["base_shown_first"])),
                          Text(_order(pair["new_shown_first"])))
        console.print(table)
    gate = p.get("gate")
    if gate:
        console.print(Text(f"Gate pairwise: {'REGRESSION (exit 1)' if gate['regression'] else 'no regression'}",
                           style="bold red" if gate["regression"] else "green"))


def _order(order: dict[str, Any]) -> str:
    return f"prefers {order['prefers'].upper()}: {order['reason'] or '(no reason)'}"


def pairwise_markdown(p: dict[str, Any]) -> str:
    """The pairwise section as Markdown; text from the judge is inert in table cells."""
    from agent_eval.report.markdown import cell, table_lines

    lines = ["### Pairwise judging", "", *(f"- {cell(line)}" for line in headline(p)), ""]
    if p["inconsistent_pairs"]:
        rows = [[str(q["id"]), str(q["trial"]), _order(q["base_shown_first"]), _order(q["new_shown_first"])]
                for q in p["inconsistent_pairs"]]
        lines += [*table_lines(["case", "trial", "BASE shown first", "NEW shown first"], rows, right={1}), ""]
    return "\n".join(lines)


def pairwise_html(p: dict[str, Any]) -> str:
    """The pairwise section of the compare page."""
    esc = html.escape
    parts = ["<h2>Pairwise judging</h2>", "<ul id=\"pairwise\">", *(f"<li>{esc(line)}</li>" for line in headline(p)),
             "</ul>"]
    if p["inconsistent_pairs"]:
        rows = "".join(f"<tr><td>{esc(str(q['id']))}</td><td>{q['trial']}</td><td>{esc(_order(q['base_shown_first']))}"
                       f"</td><td>{esc(_order(q['new_shown_first']))}</td></tr>" for q in p["inconsistent_pairs"])
        parts.append("<table id=\"inconsistent\"><thead><tr><th>case</th><th>trial</th><th>BASE shown first</th>"
                     f"<th>NEW shown first</th></tr></thead><tbody>{rows}</tbody></table>")
    return "".join(parts)


def write_pairwise_markdown(matrix: dict[str, Any] | None, p: dict[str, Any], path: Path) -> None:
    """Append the comparison (the metric matrix when metrics were gated) and the pairwise section, in one write."""
    from agent_eval.report.compare import matrix_markdown

    head = matrix_markdown(matrix) if matrix is not None else "## agent-eval compare\n"
    gate = p.get("gate")
    verdict = (f"\n**Gate pairwise: {'REGRESSION (exit 1)' if gate['regression'] else 'no regression'}**\n"
               if gate else "")
    with open(path, "a", encoding="utf-8") as f:
        f.write(head + "\n" + pairwise_markdown(p) + verdict + "\n")


def write_pairwise_html(matrix: dict[str, Any] | None, p: dict[str, Any], path: Path) -> None:
    """The compare page with the pairwise section at its end, written beside its target and renamed into place."""
    import os

    from agent_eval.report.compare import matrix_html

    page = (matrix_html(matrix) if matrix is not None else
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>agent-eval compare</title>"
            "<link rel=\"icon\" href=\"data:,\"></head><body><h1>agent-eval compare</h1></body></html>")
    end = page.rindex("</body>")
    page = page[:end] + pairwise_html(p) + page[end:]
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, path)
