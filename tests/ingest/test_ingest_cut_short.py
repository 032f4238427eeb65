"""A cut-short file loses only what is cut: the readable records before a broken or truncated one import,
and the broken one is named and left out (OTLP protobuf, framed or one request; OTLP/JSON lines; the
JSON Lines and CSV formats)."""
from __future__ import annotations

import struct
from pathlib import Path

import orjson
import pytest

from agent_eval.ingest.otel import otel_cases
from tests.otlp_gen import Trace, export_request, jsonl
from tests.otlp_gen import assistant, user

pytest.importorskip("opentelemetry.proto")

TIDS = [f"{n:02x}" + "0" * 30 for n in range(0xA1, 0xA4)]


def _request(trace_id: str, id_style: str = "base64") -> dict:
    t = Trace(trace_id)
    t.chat(0, 10, [user(f"question {trace_id[:2]}")], [assistant("answer")])
    return export_request(t.spans, id_style)


def _message(body: dict) -> bytes:
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    return ParseDict(body, ExportTraceServiceRequest()).SerializeToString()


def _ids(cases: list[dict]) -> list[str]:
    return sorted(c["metadata"]["trace_id"] for c in cases)


def test_a_framed_protobuf_file_cut_in_its_last_request_keeps_the_others(tmp_path: Path) -> None:
    bodies = [_message(_request(tid)) for tid in TIDS]
    data = b"".join(struct.pack(">I", len(b)) + b for b in bodies)
    path = tmp_path / "spans.pb"
    path.write_bytes(data[:-7])  # the third request is cut short
    cases, bad, _ = otel_cases(path)
    assert _ids(cases) == TIDS[:2]
    assert len(bad) == 1 and str(bad[0]).startswith("request 3:")


def test_one_protobuf_request_cut_in_its_last_resource_keeps_the_resources_before(tmp_path: Path) -> None:
    whole = {"resourceSpans": [rs for tid in TIDS for rs in _request(tid)["resourceSpans"]]}
    data = _message(whole)
    path = tmp_path / "one.pb"
    path.write_bytes(data[:-7])
    cases, bad, _ = otel_cases(path)
    assert _ids(cases) == TIDS[:2]
    assert len(bad) == 1 and "request 1" in str(bad[0]) and "resource 3" in str(bad[0])


def test_otlp_json_lines_cut_in_the_last_line_keep_the_lines_before(tmp_path: Path) -> None:
    data = jsonl([_request(tid, "hex") for tid in TIDS])
    path = tmp_path / "spans.jsonl"
    path.write_bytes(data[:-30])
    cases, bad, _ = otel_cases(path)
    assert _ids(cases) == TIDS[:2]
    assert len(bad) == 1 and "3" in bad[0].where


@pytest.mark.parametrize("fmt", ["deepeval", "inspect", "openai-evals"])
def test_json_lines_formats_cut_in_the_last_record_keep_the_records_before(tmp_path: Path, fmt: str) -> None:
    from tests.builders import run_cli

    rows = {"deepeval": [{"name": f"g{n}", "input": f"q{n}", "expected_output": "a"} for n in range(3)],
            "inspect": [{"id": f"s{n}", "input": f"q{n}", "target": "a"} for n in range(3)],
            "openai-evals": [{"input": [{"role": "user", "content": f"q{n}"}], "ideal": "a"} for n in range(3)]}[fmt]
    data = b"".join(orjson.dumps(row) + b"\n" for row in rows)
    path = tmp_path / "rows.jsonl"
    path.write_bytes(data[:-10])
    out = tmp_path / "cases.json"
    done = run_cli("import", fmt, path, "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    written = orjson.loads(out.read_bytes())
    assert len(written["cases"] if isinstance(written, dict) else written) == 2
    assert "3" in done.stderr


def test_a_json_list_cut_in_its_last_entry_keeps_the_entries_before(tmp_path: Path) -> None:
    from tests.builders import run_cli

    rows = [{"name": f"g{n}", "input": f"q{n}", "expected_output": "a"} for n in range(3)]
    path = tmp_path / "goldens.json"
    path.write_bytes(orjson.dumps(rows, option=orjson.OPT_INDENT_2)[:-12])
    out = tmp_path / "cases.json"
    done = run_cli("import", "deepeval", path, "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    written = orjson.loads(out.read_bytes())
    assert [c["id"] for c in (written["cases"] if isinstance(written, dict) else written)] == ["g0", "g1"]
    assert "index 2" in done.stderr and "cut short" in done.stderr


def test_a_deepeval_csv_cut_in_its_last_row_keeps_the_rows_before(tmp_path: Path) -> None:
    from tests.builders import run_cli

    text = "input,expected_output,name\n" + "".join(f'"q{n}","answer {n}",g{n}\n' for n in range(3))
    path = tmp_path / "goldens.csv"
    path.write_text(text[:-8])  # the last row stops inside its quoted answer
    out = tmp_path / "cases.json"
    done = run_cli("import", "deepeval", path, "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    written = orjson.loads(out.read_bytes())
    assert [c["id"] for c in (written["cases"] if isinstance(written, dict) else written)] == ["g0", "g1"]
