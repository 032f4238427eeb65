"""Custom scorers: loading, parameter binding, running, checks, errors and summaries."""
from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from agent_eval.suite.cases import load_suite
from agent_eval.errors import CaseFileError
from agent_eval.report.gate import compare_reports
from agent_eval.score.metrics import summarize
from agent_eval.report.scorer_table import render_scorers
from agent_eval.score.custom_summary import summarize_rows, summarize_scorers
from agent_eval import Scorer
from agent_eval.score.custom import ScorerError, as_row, conversation, scorer_of
from agent_eval.suite.scorers import load_scorers
from agent_eval.score.pipeline import ScoringContext, score_run
from tests.builders import FIXTURES as TEST_FIXTURES
from tests.builders import write_suite

FIXTURES = TEST_FIXTURES / "scorer_suite"
HIDDEN = "hidden_scorers.py"


def trace_of(*replies: str, users: list[str] | None = None, stop_reason: str = "completed") -> dict:
    """A frozen trace with the given replies and no tool calls."""
    users = users or [f"u{i}" for i in range(len(replies))]
    return {"user_messages": users, "replies": list(replies),
            "final_answer": replies[-1] if replies else None,
            "cards": [], "final_agent": None, "stop_reason": stop_reason, "agent_error": None, "steps": [],
            "llm_calls": [], "latency_s": 0.1, "ttfa_s": 0.05, "final_env_diff": []}


def scorer_suite(tmp_path: Path, scorers: list[str], cases: list[dict], module: str = "") -> Path:
    """A case file in tmp_path with the given suite scorers; `module` becomes tmp_path/sc.py."""
    return write_suite(tmp_path, cases, {"scorers": scorers}, {"sc.py": module} if module else None)


def case(case_id: str = "a", **fields: object) -> dict:
    return {"id": case_id, "query": "hi", "expect": {"not_contains": "zzz"}, **fields}


def run_score(suite, case_dict: dict, trace: dict, env: dict | None = None) -> tuple[dict, dict, list]:
    return asyncio.run(suite.scorers.score(case_dict, trace, env or {}))


# --- loading and binding -------------------------------------------------------------------


def test_names_come_from_function_class_or_name_attribute(tmp_path: Path) -> None:
    module = ("from agent_eval import Scorer, scorer\n"
              "def plain(output): return 1\n"
              "@scorer(name='renamed')\ndef f(output): return 1\n"
              "class Cls(Scorer):\n    def score(self, output): return 1\n"
              "class Named(Scorer):\n    name = 'nice'\n    def score(self, output): return 1\n")
    path = scorer_suite(tmp_path, ["sc.py:plain", "sc.py:f", "sc.py:Cls", "sc.py:Named"], [case()], module)
    assert [s.name for s in load_suite(path).scorers.scorers] == ["plain", "renamed", "Cls", "nice"]


def test_parameters_fill_from_run_then_case_fields_then_metadata(tmp_path: Path) -> None:
    module = ("seen = []\n"
              "def probe(output, replies, messages, env, case, trace, query, expected_output, limit, tags,"
              " opt='d'):\n"
              "    seen.append(dict(output=output, replies=replies, messages=messages, env=env, case=case,"
              " trace=trace, query=query, expected_output=expected_output, limit=limit, tags=tags,"
              " opt=opt))\n"
              "    return 1\n")
    # `query` is a case field; `limit` a metadata key; `output` is also a case field here, but what the
    # run produced comes first.
    c = case(expected_output="gold", output="case field loses", tags=["t"],
             metadata={"limit": 3, "query": "meta loses"})
    suite = load_suite(scorer_suite(tmp_path, ["sc.py:probe"], [c], module))
    trace = trace_of("r1", "r2", users=["q1", "q2"])
    run_score(suite, suite.cases[0], trace, {"k": 1})
    got = suite.scorers.scorers[0].call.__globals__["seen"][-1]
    assert got["output"] == "r2" and got["replies"] == ["r1", "r2"] and got["env"] == {"k": 1}
    assert got["messages"] == [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "r1"},
                               {"role": "user", "content": "q2"}, {"role": "assistant", "content": "r2"}]
    assert got["case"] is suite.cases[0] and got["trace"] is trace
    filled = (got["query"], got["expected_output"], got["limit"], got["tags"], got["opt"])
    assert filled == ("hi", "gold", 3, ["t"], "d")


def test_column_map_renames_and_resolves_in_the_same_order(tmp_path: Path) -> None:
    suite = load_suite(scorer_suite(tmp_path, [f"{FIXTURES / HIDDEN}:exact"],
                                   [case("a", expected_output="yes"),
                                    case("b", metadata={"expected_output": "no"})]))
    assert run_score(suite, suite.cases[0], trace_of("yes"))[0] == {"exact": {"exact": True}}
    assert run_score(suite, suite.cases[1], trace_of("yes"))[0] == {"exact": {"exact": False}}


def test_unfillable_parameter_is_a_case_file_error_naming_case_and_field(tmp_path: Path) -> None:
    cases = [case("ok", expected_output="x"), case("bad")]
    path = scorer_suite(tmp_path, [f"{FIXTURES / HIDDEN}:exact"], cases)
    with pytest.raises(CaseFileError) as err:
        load_suite(path)
    [problem] = err.value.problems
    assert (problem.case_id, problem.field) == ("bad", "expected_output")
    assert "column_map maps 'gold'" in problem.message and "give the parameter a default" in problem.message
    assert str(path) in str(problem)


def test_a_scorer_problem_shared_by_many_cases_is_reported_once_with_their_count(tmp_path: Path) -> None:
    cases = [case("ok", expected_output="x")] + [case(f"bad{i}") for i in range(7)]
    with pytest.raises(CaseFileError) as err:
        load_suite(scorer_suite(tmp_path, [f"{FIXTURES / HIDDEN}:exact"], cases))
    [problem] = err.value.problems  # one line for the scorer, not seven
    assert (problem.case_id, problem.field) == (None, "expected_output")
    assert problem.message.endswith("(affects 7 cases: bad0, bad1, bad2, bad3, bad4 and 2 more)")


@pytest.mark.parametrize("module, spec, message", [
    ("class NotScorer:\n    def score(self, output): return 1\n", "sc.py:NotScorer", "not a subclass"),
    ("from agent_eval import Scorer\nclass NoScore(Scorer):\n    pass\n", "sc.py:NoScore",
     "no score() method"),
    ("from agent_eval import scorer\n@scorer(column_map={'typo': 'x'})\ndef f(output): return 1\n", "sc.py:f",
     "column_map maps 'typo'"),
    ("from agent_eval import scorer\n@scorer(name='a.b')\ndef f(output): return 1\n", "sc.py:f",
     "without '.'"),
    ("X = 3\n", "sc.py:X", "not a function"),
    ("X = 3\n", "sc.py:nope", "no attribute 'nope'"),
    ("def f(output, /): return 1\n", "sc.py:f", "positional-only"),
])
def test_bad_scorer_specs_are_suite_errors(tmp_path: Path, module: str, spec: str, message: str) -> None:
    with pytest.raises(CaseFileError) as err:
        load_suite(scorer_suite(tmp_path, [spec], [case()], module))
    assert [p.field for p in err.value.problems] == ["suite.scorers[0]"]
    assert message in err.value.problems[0].message


def test_duplicate_names_and_non_list_are_errors(tmp_path: Path) -> None:
    _, problems = load_scorers([f"{FIXTURES / HIDDEN}:words", f"{FIXTURES / HIDDEN}:words"], tmp_path)
    assert problems == [("suite.scorers[1]", "two scorers are named 'words'; set `name` on one of them")]
    _, problems = load_scorers("sc.py:f", tmp_path)
    assert problems[0][0] == "suite.scorers"


# --- running -------------------------------------------------------------------------------


def test_return_values_are_wrapped_and_checked() -> None:
    assert as_row("words", 4) == {"words": 4}
    assert as_row("ok", True) == {"ok": True}
    assert as_row("d", {"a": {"b": 1.5, "c": "s"}, "n": None}) == {"a": {"b": 1.5, "c": "s"}, "n": None}
    for bad, message in [({"errors": "boom"}, "boom"), ("text", "returned str"), (None, "returned NoneType"),
                         ({"xs": [1]}, "'xs' is a list"), ({"passed": 1}, "'passed' must be true or false"),
                         ({1: 2}, "not a string")]:
        with pytest.raises(ScorerError, match=message):
            as_row("s", bad)


def test_async_raising_and_passed_scorers_on_one_run(tmp_path: Path) -> None:
    specs = [f"{FIXTURES / HIDDEN}:{n}" for n in ("words", "flaky", "polite")]
    suite = load_suite(scorer_suite(tmp_path, specs, [case()]))
    values, errors, checks = run_score(suite, suite.cases[0], trace_of("please crash"))
    assert values == {"words": {"words": 2}, "flaky": None,
                      "polite": {"passed": True, "reason": "says please"}}
    assert errors == {"flaky": "ValueError: cannot parse the reply (hidden_scorers.py:38 in flaky)"}
    assert checks == [{"name": "scorer:polite", "passed": True, "detail": "says please"}]


class CountingJudge:
    """A stub judge with the judge's interface; counts the runs it was asked about."""

    def __init__(self) -> None:
        self.calls = 0

    async def judge_run(self, case: dict, trace: dict) -> SimpleNamespace:
        self.calls += 1
        check = {"name": "judge", "passed": True, "detail": "PASS"}
        verdict = {"verdict": "PASS", "reason": "", "model": "m"}
        return SimpleNamespace(checks=[check], records={"judge": verdict}, error=None)

    async def verdict(self, case: dict, trace: dict, checks: list) -> tuple[dict, None]:
        self.calls += 1  # the core runner's judge hook, before the judge module landed
        return {"verdict": "PASS", "reason": "", "model": "m"}, None


def test_false_scorer_fails_the_run_and_spares_the_judge(tmp_path: Path) -> None:
    specs = [f"{FIXTURES / HIDDEN}:polite", f"{FIXTURES / HIDDEN}:flaky"]
    suite = load_suite(scorer_suite(tmp_path, specs, [case(rubric="be nice")]))
    judge = CountingJudge()
    ctx = ScoringContext(judge=judge, scorers=suite.scorers)
    c = suite.cases[0]
    rude = asyncio.run(score_run(c, 0, trace_of("no"), {}, None, None, ctx))
    assert (rude["status"], rude["success"], judge.calls) == ("failed", False, 0)
    assert rude["checks"][-1] == {"name": "scorer:polite", "passed": False, "detail": "no please"}
    nice = asyncio.run(score_run(c, 1, trace_of("please"), {}, None, None, ctx))
    assert (nice["status"], judge.calls) == ("passed", 1)
    assert [ch["name"] for ch in nice["checks"]][:2] == ["expect:not_contains", "scorer:polite"]
    # A scorer that raises adds no check and leaves the verdict alone.
    crashed = asyncio.run(score_run(c, 2, trace_of("please crash"), {}, None, None, ctx))
    assert crashed["status"] == "passed" and crashed["scorers"]["flaky"] is None
    assert crashed["scorer_errors"] == {"flaky": "ValueError: cannot parse the reply (hidden_scorers.py:38 in "
                                        "flaky)"}
    assert [ch["name"] for ch in crashed["checks"]][:2] == ["expect:not_contains", "scorer:polite"]
    assert judge.calls == 2


def test_conversation_stops_at_the_last_reply() -> None:
    assert conversation(trace_of("r1", users=["q1", "q2"])) == [
        {"role": "user", "content": "q1"}, {"role": "assistant", "content": "r1"},
        {"role": "user", "content": "q2"}]


# --- summaries -----------------------------------------------------------------------------


def test_automatic_summary_by_type_with_a_raised_run() -> None:
    rows = [{"spent": 1, "ok": True, "note": "a", "usage": {"tokens": 10}},
            {"spent": 2, "ok": True, "note": "b", "usage": {"tokens": 30}},
            None,  # the scorer raised on this run
            {"spent": 4, "ok": True, "note": "c"},
            {"spent": 10, "ok": False, "note": "d", "usage": {"tokens": 20}}]
    assert summarize_rows(rows) == {
        # numbers over the 4 runs that have one: mean 17/4; sorted [1,2,4,10]: p50 at rank 1.5 = 2 + .5*(4-2),
        # p95 at rank 3*.95 = 2.85 = 4 + .85*(10-4)
        "spent": {"mean": 4.25, "p50": 3.0, "p95": pytest.approx(9.1)},
        # bools over all 5 runs, the raised one counting false: 3/5
        "ok": {"true_count": 3, "true_fraction": 0.6},
        # dicts key by key: tokens [10,30,20]: mean 20; sorted [10,20,30]: p50 20, p95 at rank 1.9 = 20+.9*10
        "usage": {"tokens": {"mean": 20.0, "p50": 20.0, "p95": pytest.approx(29.0)}},
        # `note` (strings) is not summarised
    }
    assert summarize_rows([None, None]) == {}


def test_summary_counts_the_suite_figures_runs_only(tmp_path: Path) -> None:
    suite = load_suite(scorer_suite(tmp_path, [f"{FIXTURES / HIDDEN}:flaky", f"{FIXTURES / HIDDEN}:Budget"],
                                   [case(metadata={"limit": 5})]))

    def run(status: str, scorers: dict, errors: dict | None = None) -> dict:
        return {"status": status, "success": status == "passed", "metrics": {}, "scorers": scorers,
                "scorer_errors": errors or {}}

    ok = {"flaky": {"length": 4, "long": False}, "Budget": {"spent": 4, "within": True}}
    raised = {"flaky": None, "Budget": {"spent": 20, "within": False}}
    rows = [
        {"id": "a", "status": "failed", "runs": [run("passed", ok), run("failed", raised, {"flaky": "E: x"}),
                                                   run("error", ok, {"flaky": "E: y"})]},
        {"id": "s", "status": "skipped", "runs": []},
    ]
    s = summarize(rows, 3, suite.scorers)["scorers"]
    # The errored run is left out: 2 runs count. flaky: length [4] (mean 4), long [F, missing] -> 0/2;
    # one error (the errored run's error is not counted). Budget's own summarize: 4 + 20 = 24 over 2 rows.
    assert s == {"flaky": {"length": {"mean": 4.0, "p50": 4.0, "p95": 4.0},
                           "long": {"true_count": 0, "true_fraction": 0.0}, "errors": 1},
                 "Budget": {"total_spent": 24, "rows": 2, "errors": 0}}
    # Without the scorer set (a stored report), every summary is automatic.
    auto = summarize(rows, 3)["scorers"]
    assert auto["Budget"] == {"spent": {"mean": 12.0, "p50": 12.0, "p95": 19.2},  # 4 + .95*(20-4)
                              "within": {"true_count": 1, "true_fraction": 0.5}, "errors": 0}


def test_custom_summarize_that_fails_keeps_the_report() -> None:
    bad = SimpleNamespace(scorers=[SimpleNamespace(name="b", summarize=lambda rows: 1 / 0)])
    assert summarize_scorers([{"scorers": {"b": {"x": 1}}}], bad) == {
        "b": {"summarize_error": "ZeroDivisionError: division by zero", "errors": 0}}
    bare = SimpleNamespace(scorers=[SimpleNamespace(name="b", summarize=lambda rows: len(rows))])
    assert summarize_scorers([{"scorers": {}}] * 3, bare) == {"b": {"b": 3, "errors": 0}}


def test_user_code_that_exits_while_summarising_or_being_made_is_an_error_not_the_end() -> None:
    # Through the guard: SystemExit from the user's summarize or Scorer __init__ is the user's error.
    def exits(rows: object) -> None:
        raise SystemExit(3)

    bad = SimpleNamespace(scorers=[SimpleNamespace(name="b", summarize=exits)])
    assert summarize_scorers([{"scorers": {}}], bad) == {"b": {"summarize_error": "SystemExit: 3", "errors": 0}}

    class Quits(Scorer):
        def __init__(self) -> None:
            raise SystemExit("no")

        def score(self, trace: object) -> bool:
            return True

    with pytest.raises(ScorerError, match=r"cannot be created without arguments \(SystemExit: no\)"):
        scorer_of("s.py:Quits", Quits)


def test_gate_recomputes_the_same_figures_from_stored_values() -> None:
    values = [1.0, 2.0, None, 4.0, 10.0]

    def report(run_id: str) -> dict:
        runs = [{"trial": i, "status": "passed", "success": True, "metrics": {},
                 "scorers": {"b": None if v is None else {"spent": v, "ok": v < 5}},
                 "scorer_errors": {} if v is not None else {"b": "E: x"}} for i, v in enumerate(values)]
        cases = [{"id": "a", "status": "passed", "runs": runs[:3]},
                 {"id": "b", "status": "passed", "runs": runs[3:]}]
        return {"schema_version": 1, "run_id": run_id, "settings": {"repeat": 1}, "cases": cases}

    base = report("x")
    summary = summarize([{"id": c["id"], "status": c["status"], "runs": c["runs"]} for c in base["cases"]], 1)
    paths = ["b.spent.mean", "b.spent.p50", "b.spent.p95", "b.ok.true_count", "b.ok.true_fraction"]
    gate = compare_reports(base, report("y"), [(f"scorers.{p}", 0.0) for p in paths])
    for path, row in zip(paths, gate["metrics"], strict=True):
        name, key, stat = path.split(".")
        assert row["base"] == pytest.approx(summary["scorers"][name][key][stat]), path


def test_terminal_block_shows_summaries_errors_and_the_first_error() -> None:
    report = {"summary": {"scorers": {
        "flaky": {"length": {"mean": 7.3333, "p50": 9.0, "p95": 10.8}, "long": {"true_count": 1,
                  "true_fraction": 0.25}, "errors": 1},
        "Budget": {"total_spent": 38, "errors": 0}}},
        "cases": [{"id": "c1", "runs": [{"trial": 0, "scorer_errors": {}},
                                       {"trial": 1, "scorer_errors": {"flaky": "ValueError: bad"}}]}]}
    console = Console(record=True, width=120)
    render_scorers(report, console)
    text = console.export_text()
    assert "Scorers" in text and "mean 7.333 · p50 9 · p95 10.8" in text
    assert "true_count 1 · true_fraction 0.25" in text and "total_spent 38" in text
    assert "first error: c1 #1: ValueError: bad" in text
    empty = Console(record=True)
    render_scorers({"summary": {"scorers": {}}}, empty)
    assert empty.export_text() == ""


def test_an_instance_spec_and_super_summarize(tmp_path: Path) -> None:
    module = ("from agent_eval import Scorer\n"
              "class Limit(Scorer):\n"
              "    def __init__(self, limit=3):\n        self.limit = limit\n"
              "    def score(self, output):\n"
              "        return {'over': len(output) > self.limit, 'n': len(output)}\n"
              "    def summarize(self, rows):\n"
              "        return {**super().summarize(rows), 'limit': self.limit}\n"
              "strict = Limit(1)\n")
    suite = load_suite(scorer_suite(tmp_path, ["sc.py:strict"], [case()], module))
    [loaded] = suite.scorers.scorers
    assert loaded.name == "Limit"
    rows = [run_score(suite, suite.cases[0], trace_of(text))[0]["Limit"] for text in ("a", "abc")]
    # over: [F, T] -> 1/2; n: [1, 3] -> mean 2, p50 2, p95 1 + .95*2 = 2.9; plus the class's own key
    assert summarize_scorers([{"scorers": {"Limit": r}} for r in rows], suite.scorers) == {"Limit": {
        "over": {"true_count": 1, "true_fraction": 0.5},
        "n": {"mean": 2.0, "p50": 2.0, "p95": pytest.approx(2.9)},
        "limit": 1, "errors": 0}}
