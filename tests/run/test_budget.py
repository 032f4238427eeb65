"""`run --max-cost USD` in-process, against a loopback provider whose prices the suite's `pricing` gives."""
from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from rich.console import Console

from agent_eval.commands.run import run_command
from agent_eval.errors import ConfigError
from agent_eval.report.fmt import format_cost
from tests.builders import flags_of, write_suite
from tests.loopback import router, text

# $1,000 per million prompt tokens and $2,000 per million completion tokens: a completion of p prompt and
# 5 completion tokens costs p * 0.001 + 0.01 dollars.
PRICING = {"priced-m": {"input_per_mtok": 1000.0, "output_per_mtok": 2000.0}}
CASES = 60
REPEAT = 5  # 300 runs


def prompt_tokens(case_number: int) -> int:
    """10, 15 or 20 prompt tokens by case: runs cost $0.02, $0.025 or $0.03 (mean $0.025)."""
    return 10 + 5 * (case_number % 3)


def run_cost(case_number: int) -> float:
    return prompt_tokens(case_number) * 1000 / 1e6 + 5 * 2000 / 1e6


def agent_script():
    """One completion per run: "ok", with prompt tokens chosen by the case number in the user message."""

    def answer(messages: list[dict]) -> object:
        number = int(messages[-1]["content"].split()[-1])
        return text("ok", prompt_tokens=prompt_tokens(number), completion_tokens=5)

    return router(answer)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "AGENT_EVAL_MODEL", "AGENT_EVAL_JUDGE_MODEL",
                 "AGENT_EVAL_JUDGE_BASE_URL", "AGENT_EVAL_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def suite(tmp_path: Path, pricing: dict | None = None, cases: int = CASES) -> Path:
    rows = [{"id": f"c{n:02}", "query": f"answer case {n}", "expect": {"contains": "ok"}} for n in range(cases)]
    return write_suite(tmp_path / "suite", rows, {"name": "budgeted", "pricing": PRICING if pricing is None
                                                  else pricing})


def run(tmp_path: Path, **flags: object) -> tuple[int, dict, str]:
    out = io.StringIO()
    console = Console(file=out, width=250, no_color=True)
    out_dir = tmp_path / "reports"
    before = set(out_dir.glob("*.json")) if out_dir.exists() else set()
    code = run_command(flags_of(output_dir=out_dir, no_html=True, **flags), console, console)
    new = sorted(set(out_dir.glob("*.json")) - before)
    path = out_dir / f"{flags['resume']}.json" if flags.get("resume") else new[-1]
    return code, orjson.loads(path.read_bytes()), out.getvalue()


def runs_of(report: dict) -> list[dict]:
    return [r for c in report["cases"] for r in c["runs"]]


@pytest.mark.parametrize("concurrency", [1, 8, 50])
def test_max_cost_stops_within_one_run_of_the_budget(env, tmp_path, loopback, concurrency):
    srv = loopback(agent_script(), latency_s=0.005)
    limit = 5.3  # about 212 of the 300 runs at a mean of $0.025
    code, report, shown = run(tmp_path, cases=suite(tmp_path), repeat=REPEAT, model="priced-m",
                              base_url=srv.base_url, concurrency=concurrency, max_cost=limit)
    runs = runs_of(report)
    costs = [r["metrics"]["cost_usd"] for r in runs]
    biggest = run_cost(2)  # $0.03
    spent = report["summary"]["budget"]["spent_usd"]
    # The report's spend is the sum of its runs' costs (no judge, no simulator here).
    assert spent == pytest.approx(sum(costs))
    assert report["summary"]["budget"]["limit_usd"] == limit
    assert report["stopped_at_budget"] is True and report["stopped_early"] is False
    assert report["interrupted"] is False
    # Within one run's cost of the budget, and never above budget + concurrency x the largest run cost.
    assert limit - biggest <= spent <= limit + biggest
    assert spent <= limit + concurrency * biggest
    assert len(runs) < CASES * REPEAT and srv.count == len(runs)
    # Every case passed: a budget stop is exit 2, not a pass.
    assert code == 2 and report["exit_code"] == 2
    assert report["summary"]["cases_not_run"] == sum(c["status"] == "not_run" for c in report["cases"]) > 0
    assert f"stopped at the budget: {format_cost(spent)} of $5.3000, {len(runs)} of 300 runs" in shown


def test_a_budget_stop_with_a_failed_case_exits_1(env, tmp_path, loopback):
    srv = loopback(router(lambda messages: text("ok" if "case 0" not in messages[-1]["content"] else "no",
                                                prompt_tokens=10, completion_tokens=5)))
    # Every run costs 10 * 0.001 + 0.01 = $0.02; $0.10 leaves room for exactly 5 runs at --concurrency 1.
    summary = tmp_path / "summary.md"
    code, report, shown = run(tmp_path, cases=suite(tmp_path, cases=10), model="priced-m", base_url=srv.base_url,
                              concurrency=1, max_cost=0.10, markdown=summary)
    assert len(runs_of(report)) == 5 and srv.count == 5
    assert report["summary"]["budget"]["spent_usd"] == pytest.approx(0.10)
    assert [c["status"] for c in report["cases"]] == ["failed"] + ["passed"] * 4 + ["not_run"] * 5
    assert code == 1 and report["exit_code"] == 1
    assert "1 case failed; stopped at the budget: $0.1000 of $0.1000, 5 of 10 runs" in shown
    markdown = summary.read_text()
    assert "> This run stopped at the budget: $0.1000 of $0.1000, 5 of 10 runs; the figures cover" in markdown


def test_a_budget_that_is_not_reached_changes_nothing(env, tmp_path, loopback):
    srv = loopback(agent_script())
    code, report, shown = run(tmp_path, cases=suite(tmp_path, cases=6), model="priced-m", base_url=srv.base_url,
                              max_cost=100.0)
    assert code == 0 and report["stopped_at_budget"] is False
    # 2 cases each at $0.02, $0.025 and $0.03 = $0.15
    assert report["summary"]["budget"] == {"limit_usd": 100.0, "spent_usd": pytest.approx(0.15)}
    assert "spent $0.1500 of the --max-cost budget of $100.00 (agent, judge and simulator)" in shown
    assert report["settings"]["max_cost"] == 100.0


def test_a_model_with_no_price_is_exit_2_before_anything_runs(env, tmp_path, loopback):
    srv = loopback(agent_script())
    with pytest.raises(ConfigError) as found:
        run(tmp_path, cases=suite(tmp_path, pricing={}), model="house-model-7", base_url=srv.base_url, max_cost=5.0)
    message = str(found.value)
    assert "house-model-7" in message and "pricing" in message and "input_per_mtok" in message
    assert srv.count == 0


@pytest.mark.parametrize("value", [float("nan"), -1.0, 0.0, float("inf")])
def test_max_cost_must_be_a_positive_finite_amount(env, tmp_path, value):
    with pytest.raises(ConfigError, match="--max-cost must be a positive, finite number"):
        run(tmp_path, cases=suite(tmp_path), model="priced-m", base_url="http://127.0.0.1:9/v1", max_cost=value)


def test_resume_counts_the_earlier_spend_against_the_same_budget(env, tmp_path, loopback):
    srv = loopback(router(lambda messages: text("ok", prompt_tokens=10, completion_tokens=5)))  # $0.02 a run
    cases = suite(tmp_path, cases=10)
    code, first, _ = run(tmp_path, cases=cases, model="priced-m", base_url=srv.base_url, concurrency=1,
                         max_cost=0.08)
    assert code == 2 and len(runs_of(first)) == 4
    # Resumed with the same budget: $0.08 is spent already, so nothing more runs.
    code, again, shown = run(tmp_path, resume=first["run_id"], base_url=srv.base_url, concurrency=1)
    assert srv.count == 4 and len(runs_of(again)) == 4 and again["stopped_at_budget"] is True
    assert again["summary"]["budget"] == {"limit_usd": 0.08, "spent_usd": pytest.approx(0.08)}
    # A bigger budget given to the resumed run lets it finish: 6 more runs, $0.20 in all.
    code, done, _ = run(tmp_path, resume=first["run_id"], base_url=srv.base_url, concurrency=1, max_cost=1.0)
    assert code == 0 and srv.count == 10 and done["stopped_at_budget"] is False
    assert done["summary"]["budget"]["spent_usd"] == pytest.approx(0.20)


def test_baseline_last_never_picks_a_run_stopped_at_its_budget(tmp_path):
    from agent_eval.report.baseline import pick_last
    from agent_eval.report.history import record_run

    db, cases_file = tmp_path / "history.sqlite", tmp_path / "cases.json"

    def row(run_id: str, created_at: str, **flags: bool) -> dict:
        return {"run_id": run_id, "created_at": created_at, "cases_file": str(cases_file), "agent": "a",
                "summary": {}, "cases": [{"id": "c1", "status": "passed"}], "exit_code": 2, "interrupted": False,
                **flags}

    record_run(db, row("20260101-000000-aaaaaa", "2026-01-01T00:00:00"), None)
    record_run(db, row("20260101-010000-bbbbbb", "2026-01-01T01:00:00", stopped_at_budget=True), None)
    assert pick_last(tmp_path, cases_file, "a", [], "2026-01-01T02:00:00").stem == "20260101-000000-aaaaaa"


def test_the_judges_spend_counts_against_the_budget(env, tmp_path, loopback, monkeypatch):
    def answer(messages: list[dict]) -> object:
        if "impartial evaluator" in messages[0]["content"]:  # the judge: 20 prompt tokens, 5 completion
            return text("PASS\nit answered", prompt_tokens=20, completion_tokens=5)
        return text("ok", prompt_tokens=10, completion_tokens=5)  # the agent

    srv = loopback(router(answer))
    monkeypatch.setenv("AGENT_EVAL_JUDGE_MODEL", "priced-m")
    rows = [{"id": f"c{n}", "query": f"answer case {n}", "expect": {"contains": "ok"}, "rubric": "It answers."}
            for n in range(10)]
    cases = write_suite(tmp_path / "suite", rows, {"name": "judged", "pricing": PRICING})
    # A run: the agent's 10 * 0.001 + 0.01 = $0.02, and the judge's 20 * 0.001 + 0.01 = $0.03: $0.05 in all.
    # $0.25 leaves room for exactly 5 runs at --concurrency 1.
    code, report, shown = run(tmp_path, cases=cases, model="priced-m", base_url=srv.base_url, concurrency=1,
                              max_cost=0.25)
    runs = runs_of(report)
    assert len(runs) == 5 and report["summary"]["judge"]["calls"] == 5
    assert report["summary"]["judge"]["cost_usd"] == pytest.approx(0.15)
    # The spend is every run's cost plus the judge's: 5 * 0.02 + 0.15 = $0.25
    assert report["summary"]["budget"]["spent_usd"] == pytest.approx(
        sum(r["metrics"]["cost_usd"] for r in runs) + report["summary"]["judge"]["cost_usd"])
    assert report["summary"]["budget"]["spent_usd"] == pytest.approx(0.25)
    assert code == 2 and "stopped at the budget: $0.2500 of $0.2500, 5 of 10 runs" in shown


def test_a_judge_with_no_price_is_exit_2_before_anything_runs(env, tmp_path, loopback, monkeypatch):
    srv = loopback(agent_script())
    monkeypatch.setenv("AGENT_EVAL_JUDGE_MODEL", "house-judge-3")
    rows = [{"id": "c0", "query": "answer case 0", "rubric": "It answers."}]
    cases = write_suite(tmp_path / "suite", rows, {"name": "judged", "pricing": PRICING})
    with pytest.raises(ConfigError, match="spend of the judge: no price for model 'house-judge-3'"):
        run(tmp_path, cases=cases, model="priced-m", base_url=srv.base_url, max_cost=1.0)
    assert srv.count == 0


UNPRICED_AGENT = """
def agent(task):
    task.record_usage(100, 50, model="mystery-model")
    return "ok"
"""


def test_a_run_whose_cost_is_unknown_stops_the_budgeted_run(env, tmp_path):
    # A Python agent names its model only in its usage records: nothing can check it before the run, so the
    # first run whose cost is null stops the run (the spend can no longer be bounded).
    rows = [{"id": f"c{n}", "query": "go", "expect": {"contains": "ok"}} for n in range(5)]
    cases = write_suite(tmp_path / "suite", rows, {"name": "unpriced", "agent": "agent.py:agent", "pricing": PRICING},
                        {"agent.py": UNPRICED_AGENT})
    code, report, shown = run(tmp_path, cases=cases, concurrency=1, max_cost=1.0)
    assert len(runs_of(report)) == 1 and report["stopped_at_budget"] is True
    assert report["summary"]["budget"] == {"limit_usd": 1.0, "spent_usd": None}
    assert code == 2
    assert "--max-cost stopped taking runs because a run's cost is unknown" in shown
    assert "stopped at the budget: an unknown amount of $1.0000, 1 of 5 runs" in shown


FREE_AGENT = """
def agent(task):
    task.record_usage(10, 5, model="priced-m")
    return "ok"
"""


def test_a_journal_that_fails_under_the_probe_run_ends_the_run(env, tmp_path, monkeypatch):
    # The first run is the budget's probe; the others wait for it. When its journal line cannot be
    # written, they must stop too (not wait for a run that will never be counted): exit 2, no report.
    from agent_eval.run.journal import Journal

    def full_disk(self: Journal, case_id: str, trial: int, run_json: bytes) -> None:
        self.failed = "No space left on device"

    monkeypatch.setattr(Journal, "append_json", full_disk)
    rows = [{"id": f"c{n}", "query": "go", "expect": {"contains": "ok"}} for n in range(6)]
    cases = write_suite(tmp_path / "suite", rows, {"name": "full disk", "agent": "agent.py:agent",
                                                   "pricing": PRICING}, {"agent.py": FREE_AGENT})
    out = io.StringIO()
    console = Console(file=out, width=250, no_color=True)
    code = run_command(flags_of(cases=cases, output_dir=tmp_path / "reports", no_html=True, concurrency=4,
                                max_cost=1.0), console, console)
    assert code == 2 and "cannot write the journal" in out.getvalue()


def test_a_provider_with_invalid_token_counts_is_named_as_the_cause(env, tmp_path, loopback):
    # Every model is priced: the cost is unknown only because the provider's counts are not token counts.
    for bad in (-5, 1.5, 2**60):
        srv = loopback([text("ok", prompt_tokens=bad, completion_tokens=5)] * 5)
        code, report, shown = run(tmp_path, cases=suite(tmp_path, cases=3), model="priced-m", base_url=srv.base_url,
                                  concurrency=1, max_cost=1.0)
        assert code == 2 and report["stopped_at_budget"] is True, shown
        assert "the provider reported 1 token count(s) that are not whole numbers" in shown, shown
        assert "usage_invalid" in shown and "pricing" not in shown.split("--max-cost stopped")[1].split("\n")[0]


def test_a_model_with_no_price_is_named_as_the_cause(env, tmp_path):
    rows = [{"id": f"c{n}", "query": "go", "expect": {"contains": "ok"}} for n in range(3)]
    cases = write_suite(tmp_path / "suite", rows, {"name": "unpriced", "agent": "agent.py:agent", "pricing": PRICING},
                        {"agent.py": UNPRICED_AGENT})
    code, _, shown = run(tmp_path, cases=cases, concurrency=1, max_cost=1.0)
    assert code == 2
    assert "a model it called has no price ('mystery-model'); add it to the suite block's pricing in" in shown
