"""An Inspect log cut short (a `.eval` zip, or a JSON log) keeps the whole samples before the break, names
the file and where it broke, and is exit 2 naming the file when nothing before the break is whole; any other
single JSON document cut short (one OTLP/JSON request, a deepeval test run) keeps its whole entries likewise."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from agent_eval.ingest.formats import detect_format
from tests.builders import run_cli
from tests.e2e.test_import_score_cli import only_report
from tests.inspect_gen import eval_log, eval_log_json, sample

IDS = ["s0", "s1", "s2"]


def _samples() -> list[dict]:
    return [sample(1, sample_id=sid) for sid in IDS]


def _imported(tmp_path: Path, path: Path) -> tuple[list[str], str]:
    out = tmp_path / "cases.json"
    done = run_cli("import", "inspect", path, "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    written = orjson.loads(out.read_bytes())
    return [c["id"] for c in (written["cases"] if isinstance(written, dict) else written)], done.stderr


def _zip_cuts(data: bytes) -> dict[str, tuple[int, list[str], str]]:
    """Cut offsets of a 3-sample .eval (header.json first), with the samples whole before each and the break."""
    heads = [i for i in range(len(data)) if data[i:i + 4] == b"PK\x03\x04"]  # header, s0, s1, s2, summaries
    central = data.index(b"PK\x01\x02")
    return {"inside a member": (heads[3] + 60, IDS[:2], f"byte {heads[3]:,}, inside member samples/s2_epoch_1.json"),
            "inside a local header": (heads[3] + 12, IDS[:2], f"byte {heads[3]:,}, in a member's local header"),
            "inside the central directory": (central + 30, IDS, f"byte {central:,}, in the zip's central directory"),
            "at the central directory": (central, IDS, f"byte {central:,}, in the zip's central directory")}


@pytest.mark.parametrize("zstd", [True, False], ids=["zstd", "deflate"])
@pytest.mark.parametrize("where", ["inside a member", "inside a local header", "inside the central directory",
                                   "at the central directory"])
def test_an_eval_zip_cut_short_keeps_the_whole_samples_before_the_break(tmp_path: Path, zstd: bool,
                                                                        where: str) -> None:
    data = eval_log(_samples(), zstd)
    cut, kept, broke = _zip_cuts(data)[where]
    path = tmp_path / "log.eval"
    path.write_bytes(data[:cut])
    ids, stderr = _imported(tmp_path, path)
    assert ids == kept
    assert str(path) in stderr and broke in stderr and "cut short" in stderr


def test_a_cut_short_eval_zip_is_scored_with_its_whole_samples(tmp_path: Path) -> None:
    data = eval_log(_samples())
    path = tmp_path / "log.eval"
    path.write_bytes(data[:_zip_cuts(data)["inside a member"][0]])
    cases = tmp_path / "suite.json"
    cases.write_bytes(orjson.dumps({"suite": {}, "cases": [{"id": sid, "query": "q", "expect": {"icontains": "transit"}}
                                                           for sid in IDS]}))
    done = run_cli("score", path, "--cases", cases, "--output-dir", tmp_path / "out", "--no-html", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert str(path) in done.stderr and "inside member samples/s2_epoch_1.json" in done.stderr
    report = only_report(tmp_path / "out")
    assert sorted(c["id"] for c in report["cases"]) == IDS[:2]  # s2 had no trace: left out of the report


def _json_cuts(data: bytes) -> dict[str, tuple[int, list[str]]]:
    starts = [data.index(f'"id": "{sid}"'.encode()) for sid in IDS]
    return {"in the first sample's last half": (starts[0] + 2000, []),  # no sample whole: see the exit-2 test
            "in the second sample": (starts[1] + 500, IDS[:1]),
            "in the third sample": (starts[2] - 3, IDS[:2]),  # just after its opening brace
            "before the list closes": (len(data) - 4, IDS),
            "before the log closes": (len(data) - 1, IDS)}


@pytest.mark.parametrize("where", ["in the second sample", "in the third sample", "before the list closes",
                                   "before the log closes"])
def test_a_json_log_cut_short_keeps_the_whole_samples_before_the_break(tmp_path: Path, where: str) -> None:
    data = eval_log_json(_samples())
    cut, kept = _json_cuts(data)[where]
    path = tmp_path / "log.json"
    path.write_bytes(data[:cut])
    assert detect_format(path) == "inspect"
    ids, stderr = _imported(tmp_path, path)
    assert ids == kept
    assert str(path) in stderr and "cut short" in stderr and "byte " in stderr


@pytest.mark.parametrize("suffix, cut", [(".eval", 10), (".eval", 100), (".json", 60), (".json", 2000)])
def test_a_log_cut_before_any_whole_sample_is_exit_2_naming_it(tmp_path: Path, suffix: str, cut: int) -> None:
    data = eval_log(_samples()) if suffix == ".eval" else eval_log_json(_samples())
    if suffix == ".json" and cut == 2000:
        cut = _json_cuts(data)["in the first sample's last half"][0]
    path = tmp_path / f"log{suffix}"
    path.write_bytes(data[:cut])
    assert detect_format(path) == "inspect"
    done = run_cli("import", "inspect", path, "--out", tmp_path / "cases.json", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert str(path) in done.stderr and "cut short" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "cases.json").exists()
    cases = tmp_path / "suite.json"
    cases.write_bytes(orjson.dumps({"suite": {}, "cases": [{"id": "s0", "query": "q", "expect": {"contains": "x"}}]}))
    done = run_cli("score", path, "--cases", cases, "--output-dir", tmp_path / "out", "--no-html", cwd=tmp_path)
    assert done.returncode == 2 and str(path) in done.stderr and "cut short" in done.stderr


def test_one_otlp_json_document_cut_short_keeps_its_whole_resources(tmp_path: Path) -> None:
    from agent_eval.ingest.otel import otel_cases
    from tests.otlp_gen import Trace, assistant, export_request, user

    tids = [f"{n:02x}" + "0" * 30 for n in range(0xB1, 0xB4)]
    resources = []
    for tid in tids:
        t = Trace(tid)
        t.chat(0, 10, [user(f"question {tid[:2]}")], [assistant("answer")])
        resources += export_request(t.spans, "hex")["resourceSpans"]
    data = orjson.dumps({"resourceSpans": resources}, option=orjson.OPT_INDENT_2)
    path = tmp_path / "spans.json"
    path.write_bytes(data[:-200])  # inside the third resource
    cases, bad, _ = otel_cases(path)
    assert sorted(c["metadata"]["trace_id"] for c in cases) == tids[:2]
    assert [b.where for b in bad] == ["the document"]
    assert "cut short" in bad[0].reason and "in `resourceSpans` after 2 complete entries" in bad[0].reason


def test_a_deepeval_test_run_cut_short_keeps_its_whole_test_cases(tmp_path: Path) -> None:
    rows = [{"name": f"g{n}", "input": f"q{n}", "expectedOutput": "a"} for n in range(3)]
    path = tmp_path / ".latest_test_run.json"
    data = orjson.dumps({"testFile": "t.py", "testRunData": {"testCases": rows}}, option=orjson.OPT_INDENT_2)
    path.write_bytes(data[:data.index(b'"g2"')])
    out = tmp_path / "cases.json"
    done = run_cli("import", "deepeval", path, "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    written = orjson.loads(out.read_bytes())
    assert [c["id"] for c in (written["cases"] if isinstance(written, dict) else written)] == ["g0", "g1"]
    assert str(path) in done.stderr and "`testRunData.testCases` after 2 complete entries" in done.stderr
