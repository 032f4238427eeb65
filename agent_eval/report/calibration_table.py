"""The terminal's calibration: the judge against human labels, per criterion and overall, and every
disagreement. Drawn only from the calibration document that `<report stem>.calibration.json` holds."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent_eval.report.files import calibration_path_of
from agent_eval.report.fmt import NA, format_rate
from agent_eval.score.judge import CRITERIA

def read_calibration(report: Path) -> dict[str, Any] | None:
    """The last calibration written beside the report, or None when there is none or it is not an object
    (the page checks every figure it shows)."""
    try:
        doc = orjson.loads(calibration_path_of(report).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return doc if isinstance(doc, dict) else None


ROWS = (("overall", None), *((c.field, c.field) for c in CRITERIA))


def format_kappa(figures: dict[str, Any]) -> str:
    """`0.400 [0.05, 0.75]`; `n/a (one class on a side)` when kappa is null."""
    kappa = figures.get("kappa")
    if kappa is None:
        return f"{NA} (one class on a side)" if figures.get("n") else NA
    ci = figures.get("kappa_ci")
    return f"{kappa:.3f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def render_calibration(doc: dict[str, Any], console: Console) -> None:
    """The figures table, then each disagreement, then the labels that were not used and why."""
    table = Table(title="Judge vs human labels", title_justify="left", title_style="bold")
    for header in ("criterion", "n", "agreement", "kappa [95%]", "tpr", "tnr", "tp", "fn", "fp", "tn"):
        table.add_column(header, justify="left" if header == "criterion" else "right", no_wrap=True)
    for name, key in ROWS:
        figures = doc["overall"] if key is None else doc["criteria"][key]
        if key is not None and not figures["n"]:
            continue
        m = figures["confusion"]
        table.add_row(name, str(figures["n"]), format_rate(figures["agreement"]), format_kappa(figures),
                      format_rate(figures["tpr"]), format_rate(figures["tnr"]),
                      *(str(m[k]) for k in ("tp", "fn", "fp", "tn")))
    console.print(table)
    if doc["disagreements"]:
        console.print()
        console.print(Text(f"{len(doc['disagreements'])} disagreement(s):", style="bold"))
        for d in doc["disagreements"]:
            line = Text(f"{d['case_id']} #{d['trial']} {d['criterion']}: human {d['label']}")
            if d.get("note"):
                line.append(f" ({d['note']})")
            line.append(f", judge {d['verdict']}")
            if d.get("reason"):
                line.append(f": {' '.join(str(d['reason']).split())}")
            console.print(line)
    for key, why in (("other_run", "name another run id (not used)"),
                     ("unknown_runs", "name no run of the report (not used)"),
                     ("no_verdict", "name a run without a usable verdict (not used)")):
        entries = doc[key]
        if entries:
            shown = ", ".join(f"line {e['line']} ({e['case_id']} #{e['trial']} {e['criterion']})" for e in entries)
            console.print(Text(f"{len(entries)} label(s) {why}: {shown}", style="yellow"))
