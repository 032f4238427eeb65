"""`agent-eval label` and `agent-eval calibrate` in-process, on a real report judged by a loopback judge."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.cli import run_cli
from tests.e2e.test_judge_cli import cli, run_suite
from tests.judged_suite import case, judge_script, judged_suite

# The judge says PASS where the criterion holds RUBRIC_PASS and FAIL where it holds RUBRIC_FAIL.
CASES = [
    case("g1", "RUBRIC_PASS"), case("g2", "RUBRIC_PASS"), case("g3", "RUBRIC_PASS"),
    case("b1", "RUBRIC_FAIL"), case("b2", "RUBRIC_FAIL"),
    case("o1", "RUBRIC_PASS", expected_outcome="RUBRIC_FAIL the customer is told the amount"),
    case("plain", None, expect={"contains": "Order A"}),  # no criterion: no verdict
]


@pytest.fixture
def judged(loopback, tmp_path: Path):
    """(report path, report, judge server) of one run of CASES."""
    judge = loopback(judge_script())
    cases_file = judged_suite(tmp_path, CASES)
    code, report, _, err = run_suite(tmp_path, cases_file, "--no-html", judge=judge)
    assert code == 1, err  # b1, b2 and o1 fail on the judge's FAIL
    path = tmp_path / "reports" / f"{report['run_id']}.json"
    return path, report, judge


def write_labels(path: Path, run_id: str, rows: list[dict]) -> Path:
    path.write_bytes(b"\n".join(orjson.dumps({"run_id": run_id, "trial": 0, **row}) for row in rows) + b"\n")
    return path


def human_labels(run_id: str) -> list[dict]:
    return [
        {"case_id": "g1", "label": "pass"},  # judge PASS: tp
        {"case_id": "g2", "label": "pass"},  # tp
        {"case_id": "g3", "label": "fail", "note": "wrong order refunded"},  # judge PASS: fp
        {"case_id": "b1", "label": "fail"},  # judge FAIL: tn
        {"case_id": "b2", "label": "pass", "note": "it was fine"},  # judge FAIL: fn
        {"case_id": "o1", "label": "pass"},  # rubric: tp
        {"case_id": "o1", "label": "fail", "criterion": "expected_outcome"},  # judge FAIL: tn
        {"case_id": "plain", "label": "pass"},  # no verdict
        {"case_id": "gone", "label": "pass"},  # no such case
        {"case_id": "g1", "label": "fail", "run_id": "20200101-000000-aaaaaa"},  # another run
    ]


def test_calibrate_by_hand_and_its_exit_codes(judged, tmp_path: Path) -> None:
    path, report, judge = judged
    labels = write_labels(tmp_path / "labels.jsonl", report["run_id"], human_labels(report["run_id"]))
    calls = judge.count
    code, out, err = cli(tmp_path, "calibrate", str(path), "--labels", str(labels))
    assert code == 1, out + err  # kappa 5/12 < 0.6
    assert judge.count == calls  # the report's verdicts: no judge call
    doc = orjson.loads(path.with_name(f"{path.stem}.calibration.json").read_bytes())
    overall = doc["overall"]
    # overall: tp g1 g2 o1, fn b2, fp g3, tn b1 o1(outcome): n = 7, agreement 5/7;
    # human passes h = 4, judge passes j = 4: pe = (4*4 + 3*3)/49 = 25/49, po = 35/49,
    # kappa = (35/49 - 25/49) / (1 - 25/49) = 10/24 = 5/12; tpr = 3/4; tnr = 2/3
    assert overall["confusion"] == {"tp": 3, "fn": 1, "fp": 1, "tn": 2}
    assert overall["n"] == 7 and overall["agreement"] == pytest.approx(5 / 7)
    assert overall["kappa"] == pytest.approx(5 / 12)
    assert overall["tpr"] == pytest.approx(3 / 4) and overall["tnr"] == pytest.approx(2 / 3)
    low, high = overall["kappa_ci"]
    assert low <= 5 / 12 <= high
    # rubric: tp 3 (g1 g2 o1), fn 1 (b2), fp 1 (g3), tn 1 (b1): n 6; h = 4, j = 4;
    # pe = (16 + 4)/36 = 20/36, po = 24/36, kappa = (24 - 20)/(36 - 20) = 1/4
    rubric = doc["criteria"]["rubric"]
    assert rubric["confusion"] == {"tp": 3, "fn": 1, "fp": 1, "tn": 1}
    assert rubric["kappa"] == pytest.approx(0.25) and rubric["agreement"] == pytest.approx(4 / 6)
    assert rubric["tpr"] == pytest.approx(3 / 4) and rubric["tnr"] == pytest.approx(1 / 2)
    outcome = doc["criteria"]["expected_outcome"]
    assert outcome["n"] == 1 and outcome["confusion"] == {"tp": 0, "fn": 0, "fp": 0, "tn": 1}
    assert outcome["kappa"] is None  # one class on each side
    assert [(d["case_id"], d["label"], d["verdict"]) for d in doc["disagreements"]] == [
        ("g3", "fail", "PASS"), ("b2", "pass", "FAIL")]
    assert doc["disagreements"][0]["note"] == "wrong order refunded"
    assert doc["disagreements"][1]["reason"] == "the amount is missing"
    assert [x["case_id"] for x in doc["no_verdict"]] == ["plain"]
    assert [x["case_id"] for x in doc["unknown_runs"]] == ["gone"]
    assert [x["run_id"] for x in doc["other_run"]] == ["20200101-000000-aaaaaa"]
    # The terminal: the figures, every disagreement, the labels left out.
    assert "0.417" in out and "g3 #0 rubric: human fail (wrong order refunded), judge PASS" in out
    assert "b2 #0 rubric: human pass (it was fine), judge FAIL: the amount is missing" in out
    assert "1 label(s) name another run id" in out and "Traceback" not in err

    # The same again: seeded, so the interval is identical.
    code, _, _ = cli(tmp_path, "calibrate", str(path), "--labels", str(labels), "--min-kappa", "0.4")
    assert code == 0  # 5/12 >= 0.4
    again = orjson.loads(path.with_name(f"{path.stem}.calibration.json").read_bytes())
    assert again["overall"]["kappa_ci"] == [low, high]


def test_exit_2_on_a_malformed_line_or_a_null_kappa(judged, tmp_path: Path) -> None:
    path, report, _ = judged
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"run_id": "x", "case_id": "g1", "trial": 0, "label": "pass"}\n{"label": "maybe"\n')
    code, out, err = cli(tmp_path, "calibrate", str(path), "--labels", str(bad))
    assert code == 2 and "line 2 is not JSON" in err and str(bad) in err and "Traceback" not in err
    one_class = write_labels(tmp_path / "one.jsonl", report["run_id"],
                             [{"case_id": "g1", "label": "pass"}, {"case_id": "b1", "label": "pass"}])
    code, out, err = cli(tmp_path, "calibrate", str(path), "--labels", str(one_class))
    assert code == 2 and "only one class" in out
    assert orjson.loads(path.with_name(f"{path.stem}.calibration.json").read_bytes())["overall"]["kappa"] is None
    code, _, err = cli(tmp_path, "calibrate", str(path), "--labels", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "cannot read the labels file" in err


def test_judge_repeat_asks_fresh_majority_verdicts(judged, tmp_path: Path) -> None:
    path, report, judge = judged
    labels = write_labels(tmp_path / "labels.jsonl", report["run_id"], human_labels(report["run_id"]))
    calls = judge.count
    code, out, err = cli(tmp_path, "calibrate", str(path), "--labels", str(labels), "--judge-repeat", "3",
                         "--cases", str(tmp_path / "cases.json"), judge=judge)
    assert code == 1, out + err
    # Labelled judged runs: g1 g2 g3 b1 b2 (one criterion each) and o1 (two): 7 prompts x 3 answers.
    assert judge.count - calls == 21
    doc = orjson.loads(path.with_name(f"{path.stem}.calibration.json").read_bytes())
    assert doc["overall"]["confusion"] == {"tp": 3, "fn": 1, "fp": 1, "tn": 2}


def test_label_in_the_terminal_then_calibrate(judged, tmp_path: Path) -> None:
    path, report, _ = judged
    # Items in report order: g1, g2, g3, b1, b2 (rubric), o1 rubric, o1 expected_outcome.
    answers = "p\nf looks wrong\ns\nwhat\nf\np\nq\n"
    done = run_cli("label", path, input=answers, cwd=tmp_path, timeout=120, env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert f"cases: {tmp_path / 'cases.json'}" in done.stdout.splitlines()[0]
    assert "case g1 · trial 0 · rubric" in done.stdout and "rubric: RUBRIC_PASS" in done.stdout
    assert "user: please refund order A (g1)" in done.stdout and "final answer: Order A refunded." in done.stdout
    assert "judge: PASS the refund is stated" in done.stdout
    assert "type p or f" in done.stdout  # "what" asked again
    written = [orjson.loads(line) for line in path.with_name(f"{path.stem}.labels.jsonl").read_bytes().splitlines()]
    assert written == [
        {"run_id": report["run_id"], "case_id": "g1", "trial": 0, "label": "pass", "criterion": "rubric"},
        {"run_id": report["run_id"], "case_id": "g2", "trial": 0, "label": "fail", "criterion": "rubric",
         "note": "looks wrong"},
        {"run_id": report["run_id"], "case_id": "b1", "trial": 0, "label": "fail", "criterion": "rubric"},
        {"run_id": report["run_id"], "case_id": "b2", "trial": 0, "label": "pass", "criterion": "rubric"},
    ]
    assert "4 label(s) written" in done.stdout
    # End of input quits too, and appends: one more label.
    done = run_cli("label", path, "--out", tmp_path / "more.jsonl", input="f", cwd=tmp_path, timeout=120,
                   env=_env(tmp_path))
    assert done.returncode == 0 and (tmp_path / "more.jsonl").read_text().count("\n") == 1
    # g1 tp, g2 fp, b1 tn, b2 fn: po 2/4; h = 2, j = 2: pe = (4 + 4)/16 = 1/2 -> kappa 0
    code, out, _ = cli(tmp_path, "calibrate", str(path), "--labels", str(path.with_name(f"{path.stem}.labels.jsonl")))
    assert code == 1 and "0.000" in out


def test_label_shows_hostile_text_inert(loopback, tmp_path: Path) -> None:
    judge = loopback(judge_script())
    cases_file = judged_suite(tmp_path, [case("h", "RUBRIC_PASS [red]x[/red] \x1b[2J")])
    _, report, _, _ = run_suite(tmp_path, cases_file, "--no-html", judge=judge)
    path = tmp_path / "reports" / f"{report['run_id']}.json"
    done = run_cli("label", path, input="s\n", cwd=tmp_path, timeout=120, env=_env(tmp_path))
    assert done.returncode == 0
    assert "RUBRIC_PASS [red]x[/red] \\x1b[2J" in done.stdout and "\x1b" not in done.stdout


def _env(tmp_path: Path) -> dict[str, str]:
    from tests.builders import clean_env

    return clean_env(XDG_CACHE_HOME=str(tmp_path / "cache"))


def test_judge_repeat_never_takes_the_judge_from_the_report(judged, tmp_path: Path) -> None:
    path, report, judge = judged
    labels = write_labels(tmp_path / "labels.jsonl", report["run_id"], human_labels(report["run_id"]))
    calls = judge.count
    # No judge in the environment: the resolved endpoint is the provider's default, the report's was the
    # loopback server; exit 2 rather than send the transcripts anywhere.
    code, out, err = cli(tmp_path, "calibrate", str(path), "--labels", str(labels), "--judge-repeat", "1",
                         AGENT_EVAL_JUDGE_MODEL="judge-m", OPENAI_API_KEY="sk-test")
    assert code == 2 and "judged at" in err and "AGENT_EVAL_JUDGE_BASE_URL" in err and "Traceback" not in err
    assert judge.count == calls
    assert f"cases: {tmp_path / 'cases.json'}" in out  # named before it was loaded
