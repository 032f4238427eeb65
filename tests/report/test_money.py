"""Money: one format in every output (format_cost and its JavaScript twin in report.js), and the run header
naming where the prices came from."""
from __future__ import annotations

import re
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path

import orjson
import pytest

from agent_eval.report.fmt import format_cost, format_value
from agent_eval.report.price_source import pricing_line
from tests.builders import write_suite
from tests.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
REPORT_JS = ROOT / "agent_eval" / "report" / "assets" / "report.js"

# value -> how every output shows it: 4 decimals below $10, 2 from $10, <$0.0001 for a positive amount below.
TABLE = [
    (0.0, "$0.0000"),
    (8.6e-05, "<$0.0001"),  # the issue's `$8.6e-05`
    (1e-12, "<$0.0001"),
    (0.0001, "$0.0001"),
    (0.00012345, "$0.0001"),
    (0.0012, "$0.0012"),
    (1.5, "$1.5000"),
    (9.99994, "$9.9999"),
    (9.99995, "$10.00"),  # rounds to 10.0000: from $10, two decimals
    (10.0, "$10.00"),
    (10.125, "$10.13"),  # an exact binary tie rounds up, as toFixed does
    (1234.5, "$1,234.50"),
    (1234567.891, "$1,234,567.89"),
    (-0.5, "-$0.5000"),
    (-1e-05, "-<$0.0001"),
    (1e21, "$1,000,000,000,000,000,000,000.00"),  # toFixed's exponent starts here
    (1e25, "$10,000,000,000,000,000,905,969,664.00"),  # the float's exact value: Decimal(1e25)
    (float("inf"), "n/a"),  # a price times tokens past the float range: null in the JSON report
]


def test_format_cost_is_the_one_money_format():
    assert [format_cost(value) for value, _ in TABLE] == [shown for _, shown in TABLE]
    assert format_cost(None) == "n/a"
    assert format_value("cost_total_usd", 0.00004) == "<$0.0001"
    assert format_value("cost_per_success_usd", 12.3) == "$12.30"
    assert format_value("cost_per_success_usd", 0.0012, signed=True) == "+$0.0012"
    assert format_value("cost_per_success_usd", -0.0012, signed=True) == "-$0.0012"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (the twin runs in the browser tests)")
def test_report_js_formats_money_exactly_as_python_does():
    source = REPORT_JS.read_text()
    start = source.index("  function isNum(")
    usd = source[source.index("  function usd(v)"):source.index("  function num(v)")]
    program = (source[start:source.index("\n", start)] + "\n" + usd +
               f"\nconsole.log(JSON.stringify({orjson.dumps([v for v, _ in TABLE]).decode()}.map(usd)));")
    done = subprocess.run(["node", "-e", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout) == [shown for _, shown in TABLE]


AGENT = '''
def agent(task):
    task.record_usage(prompt_tokens=100, completion_tokens=10, model=task.metadata["model"])
    return "ok"
'''


def run_priced(tmp_path: Path, model: str, pricing: dict | None) -> tuple[str, dict, Path]:
    block = {"name": "priced", "agent": "agent.py:agent", **({"pricing": pricing} if pricing else {})}
    cases = [{"id": "c", "query": "hi", "metadata": {"model": model}, "expect": {"contains": "ok"}}]
    suite = write_suite(tmp_path / model, cases, block, files={"agent.py": AGENT})
    out = tmp_path / model / "reports"
    done = run_cli("run", "--cases", suite, "--output-dir", out, "--markdown", out / "summary.md")
    assert done.exit_code == 0, done.stdout + done.stderr
    (path,) = out.glob("*.json")
    return done.stdout, orjson.loads(path.read_bytes()), out


def test_a_tiny_cost_reads_the_same_everywhere_and_the_header_names_the_prices(tmp_path):
    # 100 prompt tokens at $0.15/M + 10 completion tokens at $0.60/M = $0.000015 + $0.000006 = $0.000021
    shown, report, out = run_priced(tmp_path, "gpt-4o-mini", {"gpt-4o-mini": {"input_per_mtok": 0.15,
                                                                              "output_per_mtok": 0.6}})
    assert report["summary"]["cost_total_usd"] == pytest.approx(0.000021)
    markdown = (out / "summary.md").read_text()
    for text in (shown, markdown):
        assert "<$0.0001" in text
        # never scientific notation (the run id's random hex, such as `3e0`, is no number)
        assert not re.search(r"\d[eE][-+]?\d", text.replace(report["run_id"], "RUN_ID"))
    assert "pricing: suite" in shown
    # The Markdown and the page name the prices' source as the terminal header does (price_source.py).
    assert "pricing: suite" in markdown
    from agent_eval.report.html import build_html

    assert '"pricing":"pricing: suite"' in build_html(report)

    shown, report, _ = run_priced(tmp_path, "gpt-4o", None)  # not in the suite: genai-prices knows it
    assert f"pricing: genai-prices {version('genai-prices')}" in shown
    assert report["settings"]["genai_prices_version"] == version("genai-prices")

    shown, _, _ = run_priced(tmp_path, "my-local-model", None)
    assert "pricing: none for my-local-model" in shown


def test_the_pricing_line_per_model_when_the_sources_differ():
    settings = {"prices": {"a": "suite", "b": "genai-prices", "c": None}, "genai_prices_version": "0.0.40"}
    assert pricing_line({"settings": settings}) == "pricing: suite (a); genai-prices 0.0.40 (b); none for c"
    assert pricing_line({"settings": {"prices": {"a": "suite", "b": "suite"}}}) == "pricing: suite"
    assert pricing_line({"settings": {"prices": {}}}) is None  # no model used tokens (the demo agent)


def test_every_money_figure_of_the_page_goes_through_usd():
    """report.js's usd() is the page's one money format: no asset writes a `$` before a number itself (the
    --max-cost banner did, with toFixed(2): `$0.00 of $0.01` for a budget of $0.0050)."""
    for asset in sorted(REPORT_JS.parent.glob("*.js")):
        source = asset.read_text()
        if asset == REPORT_JS:
            start = source.index("  function usd(v)")
            source = source[:start] + source[source.index("  function num(v)"):]
        assert not re.search(r"""\$["']\s*\+""", source), f"{asset.name} formats money itself; use usd()"
