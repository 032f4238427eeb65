"""`compare BASE NEW --pairwise`: both orders per pair, win/loss/tie/inconsistent, the win rate's interval,
the sign test, `--gate pairwise`, the cache, and the outputs; the judge is a loopback server."""
from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from agent_eval.report.pairwise import sign_test_p, summarize_pairs
from agent_eval.score.pairwise import INCONSISTENT, LOSS, TIE, WIN, PairVerdict, combine, parse_choice
from tests.builders import clean_env, write_suite
from tests.cli import run_cli
from tests.loopback import router, text

CASES = 20
BETTER = range(15)  # NEW answers better on c00..c14 and the same as BASE on c15..c19

BASE_AGENT = '''
def agent(task):
    return "the answer"
'''
NEW_AGENT = '''
def agent(task):
    number = int(task.case_id[1:])
    return "the answer, checked and complete" if number < 15 else "the answer"
'''


def biased_judge():
    """Picks the better answer when the two differ, and whichever it is shown first when they are the same
    (position bias): on the 5 equal pairs it says A in both orders. 1,000 prompt and 20 completion tokens."""

    def answer(messages: list[dict]) -> object:
        prompt = messages[-1]["content"]
        finals = re.findall(r"### Final answer of response [AB]\n<<<DATA \w+>>>\n(.*?)\n<<<END DATA", prompt, re.S)
        a, b = finals
        choice = "A" if a == b else "A" if "checked" in a else "B"
        return text(f"{choice}\nresponse {choice} is better", prompt_tokens=1000, completion_tokens=20)

    return router(answer)


@pytest.fixture
def reports(tmp_path: Path) -> tuple[Path, Path]:
    """BASE and NEW reports of one 20-case suite (one run each), written by `run` in-process."""
    rows = [{"id": f"c{n:02}", "query": f"question {n}", "expect": {"contains": "answer"},
             **({"rubric": "The answer says it was checked."} if n == 0 else {})} for n in range(CASES)]
    pricing = {"judge-m": {"input_per_mtok": 1.0, "output_per_mtok": 5.0}}
    cases = write_suite(tmp_path / "suite", rows, {"name": "pairs", "pricing": pricing},
                        {"base_agent.py": BASE_AGENT, "new_agent.py": NEW_AGENT})
    paths = []
    for name in ("base", "new"):
        out = tmp_path / name
        result = run_cli("run", "--cases", cases, "--agent", f"{cases.parent / (name + '_agent.py')}:agent",
                         "--output-dir", out, "--no-html", "--no-judge", env=clean_env())
        assert result.exit_code == 0, result.stdout + result.stderr
        (path,) = out.glob("*.json")
        paths.append(path)
    return paths[0], paths[1]


def judge_env(srv, tmp_path: Path) -> dict[str, str]:
    return clean_env(AGENT_EVAL_JUDGE_BASE_URL=srv.base_url, AGENT_EVAL_JUDGE_API_KEY="k",
                     AGENT_EVAL_JUDGE_MODEL="judge-m", XDG_CACHE_HOME=str(tmp_path / "cache"))


def test_a_position_biased_judge_gives_15_wins_and_5_inconsistent_pairs(reports, tmp_path, loopback):
    base, new = reports
    srv = loopback(biased_judge())
    md, page = tmp_path / "compare.md", tmp_path / "compare.html"
    result = run_cli("compare", base, new, "--pairwise", "--markdown", md, "--html", page,
                     env=judge_env(srv, tmp_path))
    assert result.exit_code == 0, result.stdout + result.stderr
    out = result.stdout
    # 20 pairs, each asked in both orders: 40 answers. On the 5 equal pairs the two orders are the same prompt
    # (the same answer and digest on both sides), asked once: 35 calls, 5 answered from the first.
    assert srv.count == 35
    # c00..c14: NEW is better and both orders say so: 15 wins. c15..c19: the same answer, and the judge
    # prefers whichever it is shown first, so the orders disagree: 5 inconsistent.
    assert "20 pairs over 20 cases: 15 wins, 0 losses, 0 ties, 5 inconsistent" in out
    # win rate = (15 + 0/2 + 5/2) / 20 = 17.5 / 20 = 0.875. The bootstrap resamples cases scoring 1 (15)
    # or 0.5 (5): its lower 2.5% bound is well above 0.5 (it would need 19 or 20 draws of the 0.5 cases).
    assert "win rate of NEW: 0.875 [" in out
    low, high = map(float, re.search(r"0\.875 \[([\d.]+), ([\d.]+)\]", out).groups())
    assert 0.5 < low < 0.875 < high <= 1.0
    # sign test: 15 wins, 0 losses: p = 2 * (1/2)**15 = 6.1035e-05
    assert "p = 6.1e-05" in out
    for n in range(15, 20):
        assert re.search(rf"c{n} +0 +prefers BASE: response A is better +prefers NEW: response A is better", out)
    # The judge's spend: 35 calls of 1,000 + 20 tokens at $1 and $5 per million:
    # 35 * (1000 * 1 + 20 * 5) / 1e6 = 35 * 0.0011 = $0.0385
    assert "judge judge-m: 35 calls, 5 de-duplicated, 0 cached, 35,000 + 700 tokens, $0.0385" in out
    assert "15 wins, 0 losses, 0 ties, 5 inconsistent" in md.read_text()
    assert 'id="inconsistent"' in page.read_text() and "c19" in page.read_text()
    # c00 has a rubric: the judge is asked about it instead of the default criterion.
    prompts = [r["messages"][-1]["content"] for r in srv.requests]
    assert sum("The answer says it was checked." in p for p in prompts) == 2
    assert sum("accomplishes the user's task correctly" in p for p in prompts) == 33

    # Asked again, every answer comes from the cache: no call.
    again = run_cli("compare", base, new, "--pairwise", env=judge_env(srv, tmp_path))
    assert again.exit_code == 0 and srv.count == 35
    assert "judge judge-m: 0 calls, 5 de-duplicated, 35 cached, 0 + 0 tokens, $0.0000" in again.stdout


def test_gate_pairwise_regresses_when_new_loses(reports, tmp_path, loopback):
    base, new = reports
    srv = loopback(biased_judge())
    # Swapped, BASE is the better version on 15 pairs: 15 losses, win rate (0 + 5/2) / 20 = 0.125.
    result = run_cli("compare", new, base, "--gate", "pairwise", env=judge_env(srv, tmp_path))
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "0 wins, 15 losses, 0 ties, 5 inconsistent" in result.stdout
    assert "gate pairwise: regressed (upper bound 0.2" in result.stdout
    assert "Gate pairwise: REGRESSION (exit 1)" in result.stdout
    # The other way round it is no regression, and with the default metrics gated too (m = 6: the
    # pairwise bound is at 1 - 0.05/6 = 99.17%).
    result = run_cli("compare", base, new, "--gate", "pairwise", "--gate", "pass_at_1", env=judge_env(srv, tmp_path))
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "at the one-sided 97.50% level" in result.stdout  # m = 2: pass_at_1 and pairwise


def test_pairwise_needs_one_new_report_and_a_judge(reports, tmp_path):
    base, new = reports
    result = run_cli("compare", base, new, new, "--pairwise", env=clean_env())
    assert result.exit_code == 2 and "--pairwise compares one NEW report" in result.stderr
    result = run_cli("compare", base, new, "--pairwise", env=clean_env())
    assert result.exit_code == 2 and "the judge has no model" in result.stderr
    result = run_cli("compare", base, new, "--gate", "pairwise=0.1", env=clean_env())
    assert result.exit_code == 2 and "takes no MAX_DROP" in result.stderr


def test_the_two_orders_combine_into_one_outcome():
    # (BASE shown as A, NEW shown as A): A/B/TIE in each order.
    assert combine("B", "A") == WIN  # both prefer NEW
    assert combine("TIE", "A") == WIN and combine("B", "TIE") == WIN  # NEW once, TIE once
    assert combine("A", "B") == LOSS and combine("A", "TIE") == LOSS
    assert combine("TIE", "TIE") == TIE
    assert combine("A", "A") == INCONSISTENT and combine("B", "B") == INCONSISTENT  # position bias


def test_the_answer_protocol():
    assert parse_choice("A\nbetter") == ("A", "better")
    assert parse_choice("**Response B**\n- more complete") == ("B", "more complete")
    assert parse_choice("tie.\nboth fine") == ("TIE", "both fine")
    assert parse_choice("A response is better") is None  # line 1 must be the choice alone
    assert parse_choice("") is None and parse_choice("C") is None


def test_sign_test_and_win_rate_by_hand():
    # 7 wins, 2 losses: P(X <= 2) for Binomial(9, 1/2) = (1 + 9 + 36) / 512 = 46/512; two-sided 92/512
    assert sign_test_p(7, 2) == pytest.approx(92 / 512)
    assert sign_test_p(3, 3) == 1.0 and sign_test_p(0, 0) == 1.0
    verdicts = [PairVerdict("a", 0, ("B", ""), ("A", "")), PairVerdict("a", 1, ("A", ""), ("B", "")),
                PairVerdict("b", 0, ("TIE", ""), ("TIE", "")), PairVerdict("c", 0, ("A", ""), ("A", "")),
                PairVerdict("d", 0, error="judge error: boom")]
    p = summarize_pairs(verdicts, level=0.05)
    # win, loss, tie, inconsistent: (1 + 1/2 + 1/2) / 4 = 0.5; the errored pair is left out.
    assert (p["wins"], p["losses"], p["ties"], p["inconsistent"], p["n"]) == (1, 1, 1, 1, 4)
    assert p["win_rate"] == 0.5 and p["cases"] == 3
    assert p["errors"] == [{"id": "d", "trial": 0, "error": "judge error: boom"}]
    assert p["gate"]["regression"] is False and p["gate"]["upper_bound"] >= 0.5
    assert orjson.loads(orjson.dumps(p))  # plain data


def test_judge_repeat_asks_each_order_n_uncached_times(reports, tmp_path, loopback):
    base, new = reports
    srv = loopback(biased_judge())
    result = run_cli("compare", base, new, "--pairwise", "--judge-repeat", "3", env=judge_env(srv, tmp_path))
    assert result.exit_code == 0, result.stdout + result.stderr
    # 20 pairs x 2 orders x 3 answers, none from the cache or the memo: 120 calls; the same verdicts.
    assert srv.count == 120
    assert "15 wins, 0 losses, 0 ties, 5 inconsistent" in result.stdout
    assert "judge judge-m: 120 calls, 0 de-duplicated, 0 cached" in result.stdout


def test_run_baseline_gate_pairwise_points_to_compare(tmp_path):
    cases = write_suite(tmp_path / "suite", [{"id": "a", "query": "q", "expect": {"contains": "x"}}],
                        {"name": "s"}, {"agent.py": BASE_AGENT})
    result = run_cli("run", "--cases", cases, "--agent", f"{cases.parent / 'agent.py'}:agent", "--baseline", "last",
                     "--gate", "pairwise", "--output-dir", tmp_path / "out", env=clean_env())
    assert result.exit_code == 2 and "agent-eval compare BASE NEW --gate pairwise" in result.stderr
