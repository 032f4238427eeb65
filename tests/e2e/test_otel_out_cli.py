"""Our runs out as OpenTelemetry traces: a real `run` (openai agent on the loopback), its report written
as OTLP/JSON by report/otel.py, read back with opentelemetry-proto, then imported and scored by the CLI."""
from __future__ import annotations

import base64
import hashlib

import orjson
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.builders import imported_cases
from tests.builders import CLI, clean_env, write_suite
from tests.cli import run_cli
from tests.e2e.test_import_score_cli import only_report
from tests.hostile import gzip_bomb, run_measured
from tests.recorders.agent import SCRIPT, TURNS

TOOLS = '''
from agent_eval import tool


@tool
def lookup_order(order_id: int) -> str:
    """Look an order up."""
    return "paid" if order_id == 42 else "in transit"


@tool
def refund(order_id: int, amount: float) -> str:
    """Refund an order."""
    return "ok"
'''
EXPECTED = [{"name": "lookup_order", "args": {"order_id": 42}},
            {"name": "refund", "args": {"order_id": 42, "amount": 9.5}},
            {"name": "lookup_order", "args": {"order_id": 7}}]
TRAJECTORY = ("tool_recall", "tool_precision", "param_accuracy", "step_efficiency", "has_loop", "tool_errors")


def _run(loopback, tmp_path, *extra):
    server = loopback(list(SCRIPT) * 2)  # two trials, played one after the other
    cases = write_suite(tmp_path, [{"id": "refund", "messages": TURNS, "expected_tools": EXPECTED,
                                    "trajectory": "unordered", "expect": {"icontains": "transit"}}],
                        {"name": "shop", "tools": "tools.py"}, files={"tools.py": TOOLS})
    out = tmp_path / "out"
    done = run_cli("run", "--cases", cases, "--model", "gpt-test", "--base-url", server.base_url, "--repeat", 2,
                   "--concurrency", 1, "--output-dir", out, "--no-html", *extra, cwd=tmp_path,
                   env=clean_env(OPENAI_API_KEY="k"))
    assert done.returncode == 0, done.stdout + done.stderr
    return cases, only_report(out)


def _as_proto(request: dict) -> ExportTraceServiceRequest:
    """The OTLP/JSON request parsed by opentelemetry-proto (its JSON mapping wants ids in base64)."""
    doc = orjson.loads(orjson.dumps(request))
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return ParseDict(doc, ExportTraceServiceRequest())


def test_otel_output_follows_the_genai_conventions_and_scores_back_to_the_same_metrics(loopback, tmp_path):
    path = tmp_path / "runs.otel.jsonl"
    cases, report = _run(loopback, tmp_path, "--otel", path)
    assert report["settings"]["otel"] == str(path)
    lines = path.read_bytes().splitlines()
    assert len(lines) == 2  # one export request per run
    for trial, line in enumerate(lines):
        request = _as_proto(orjson.loads(line))
        spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
        tid = hashlib.sha256(f"{report['run_id']}/refund/{trial}".encode()).hexdigest()[:32]
        assert {s.trace_id.hex() for s in spans} == {tid}
        root, *children = spans
        attrs = {kv.key: kv.value for kv in root.attributes}
        assert root.name == "invoke_agent shop" and attrs["gen_ai.operation.name"].string_value == "invoke_agent"
        assert attrs["gen_ai.agent.name"].string_value == "shop"
        assert attrs["agent_eval.case_id"].string_value == "refund" and attrs["agent_eval.trial"].int_value == trial
        assert attrs["agent_eval.status"].string_value == "passed"
        assert [p["parts"][0]["content"] for p in orjson.loads(attrs["gen_ai.input.messages"].string_value)] == TURNS
        assert all(c.parent_span_id == root.span_id and len(c.span_id) == 8 for c in children)
        ops = [{kv.key: kv.value for kv in c.attributes}["gen_ai.operation.name"].string_value for c in children]
        assert ops == ["chat"] * 6 + ["execute_tool"] * 4  # one per llm_calls entry, one per step
        tools = [{kv.key: kv.value for kv in c.attributes} for c in children[6:]]
        assert [t["gen_ai.tool.name"].string_value for t in tools] == ["lookup_order"] * 2 + ["refund", "lookup_order"]
        assert orjson.loads(tools[2]["gen_ai.tool.call.arguments"].string_value) == {"order_id": 42, "amount": 9.5}
        usage = [{kv.key: kv.value for kv in c.attributes}["gen_ai.usage.input_tokens"].int_value
                 for c in children[:6]]
        assert usage == [100, 110, 120, 130, 140, 150]
        # the chat spans sit inside the run and in order: times from started_at_unix_ns and t_start_s
        starts = [c.start_time_unix_nano for c in children[:6]]
        assert starts == sorted(starts) and root.start_time_unix_nano <= starts[0]
        assert children[5].end_time_unix_nano <= root.end_time_unix_nano
        events = {(kv.key, kv.value.string_value or kv.value.double_value) for e in root.events
                  if e.name == "gen_ai.evaluation.result" for kv in e.attributes}
        assert {("gen_ai.evaluation.name", "trajectory"), ("gen_ai.evaluation.score.label", "passed")} <= events
        assert {("gen_ai.evaluation.name", "tool_precision"), ("gen_ai.evaluation.score.value", 0.75)} <= events

    imported = run_cli("import", "otel", path, "--out", tmp_path / "imported.json", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    first = imported_cases(tmp_path / "imported.json")[0]
    assert first["id"] == "refund" and first["messages"] == TURNS and first["expected_tools"] == EXPECTED
    # the second trial of the same case is listed as such, not as a record that could not be mapped
    assert "another trial of refund (trial 1)" in imported.stderr and "could not be mapped" not in imported.stderr

    out = tmp_path / "scored"
    scored = run_cli("score", path, "--cases", cases, "--output-dir", out, "--no-html", "--otel",
                     tmp_path / "scored.otel.jsonl", cwd=tmp_path)
    assert scored.returncode == 0, scored.stdout + scored.stderr
    again = only_report(out)
    before = {r["trial"]: r["metrics"] for r in report["cases"][0]["runs"]}
    after = {r["trial"]: r["metrics"] for r in again["cases"][0]["runs"]}
    assert set(after) == {0, 1}
    for trial in (0, 1):
        assert {k: after[trial][k] for k in TRAJECTORY} == {k: before[trial][k] for k in TRAJECTORY}
        # E = 3 expected calls, A = 4 calls (lookup_order(42) twice): 3/3, 3/4, 4/4 fields, min(1, 3/4)
        assert (after[trial]["tool_recall"], after[trial]["tool_precision"]) == (1.0, 0.75)
        assert (after[trial]["param_accuracy"], after[trial]["step_efficiency"]) == (1.0, 0.75)
        # latency_s leaves out time spent waiting on agent-eval's own rate limiter, while the root span
        # covers all its children: the span-measured latency is never shorter
        assert after[trial]["latency_s"] >= before[trial]["latency_s"] - 1e-6
        assert (after[trial]["prompt_tokens"], after[trial]["completion_tokens"]) == (750, 75)

    # score and rescore write the same kind of file for their own runs
    assert len((tmp_path / "scored.otel.jsonl").read_bytes().splitlines()) == 2
    (report_path,) = out.glob("*.json")
    rescored = run_cli("rescore", report_path, "--otel", tmp_path / "rescored.otel.jsonl", cwd=tmp_path)
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    assert len((tmp_path / "rescored.otel.jsonl").read_bytes().splitlines()) == 2


class _Collector:
    """A loopback OTLP/HTTP receiver: it keeps each POST's headers and JSON body, and answers `code`.

    GET answers the number of distinct trace ids received so far (what an agent mid-run asks)."""

    def __init__(self, code: int = 200, answer: bytes = b"", answer_headers: dict[str, str] | None = None) -> None:
        import http.server
        import threading

        received = self.received = []
        collector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append((dict(self.headers), orjson.loads(body)))
                self.send_response(code)
                for name, value in {**(answer_headers or {}), "Content-Length": str(len(answer))}.items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(answer)
                except OSError:  # the client read the status and left, as it should
                    pass

            def do_GET(self) -> None:
                body = str(len(collector.trace_ids())).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def spans(self) -> list:
        """Every span received, decoded by opentelemetry-proto."""
        return [s for _, body in list(self.received) for rs in _as_proto(body).resource_spans
                for ss in rs.scope_spans for s in ss.spans]

    def trace_ids(self) -> set[str]:
        return {s.trace_id.hex() for s in self.spans()}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_otlp_endpoint_gets_each_run_with_the_headers_and_failures_never_change_the_verdict(loopback, tmp_path):
    collector = _Collector()
    try:
        server = loopback(list(SCRIPT) * 2)
        cases = write_suite(tmp_path, [{"id": "refund", "messages": TURNS, "expected_tools": EXPECTED,
                                        "trajectory": "unordered"}],
                            {"name": "shop", "tools": "tools.py"}, files={"tools.py": TOOLS})
        env = clean_env(OPENAI_API_KEY="k", OTEL_EXPORTER_OTLP_HEADERS="x-team=evals,authorization=Bearer%20t")
        done = run_cli("run", "--cases", cases, "--model", "gpt-test", "--base-url", server.base_url, "--repeat", 2,
                       "--concurrency", 1, "--output-dir", tmp_path / "out", "--no-html", "--otlp-endpoint",
                       collector.url, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        # each run's trace, whether it went alone or in a batch with the other
        assert {hashlib.sha256(f"{only_report(tmp_path / 'out')['run_id']}/refund/{t}".encode()).hexdigest()[:32]
                for t in (0, 1)} == collector.trace_ids()
        assert len([s for s in collector.spans() if s.name == "invoke_agent shop"]) == 2
        headers, body = collector.received[0]
        assert headers["x-team"] == "evals" and headers["authorization"] == "Bearer t"
        assert headers["Content-Type"] == "application/json"
        assert body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"] == "invoke_agent shop"
    finally:
        collector.close()
    refusing = _Collector(code=503)
    try:
        server = loopback(list(SCRIPT) * 2)
        done = run_cli("run", "--cases", cases, "--model", "gpt-test", "--base-url", server.base_url, "--repeat", 2,
                       "--concurrency", 1, "--output-dir", tmp_path / "out2", "--no-html", "--otlp-endpoint",
                       refusing.url, cwd=tmp_path, env=clean_env(OPENAI_API_KEY="k"))
        assert done.returncode == 0, done.stdout + done.stderr  # the verdict is the run's, not the collector's
        warnings = [line for line in done.stderr.splitlines() if "--otlp-endpoint" in line]
        assert len(warnings) == 1 and "2 of 2 run trace(s)" in warnings[0] and "HTTP 503" in warnings[0]
    finally:
        refusing.close()


# The second case's agent asks the collector how many run traces it holds before it answers: the first
# case's run has finished by then (--concurrency 1), so its trace must already be there.
WAITING_AGENT = '''
import os
import time
import urllib.request


def agent(task):
    if task.case_id == "first":
        return "first done"
    seen = "0"
    for _ in range(600):  # a bound on waiting, not a measurement: the answer says what was seen
        seen = urllib.request.urlopen(os.environ["COLLECTOR_URL"]).read().decode()
        if seen != "0":
            break
        time.sleep(0.05)
    return f"the collector held {seen} trace(s)"
'''


def test_otlp_endpoint_gets_each_run_as_it_finishes_and_score_and_rescore_send_theirs(tmp_path):
    collector = _Collector()
    try:
        cases = write_suite(tmp_path, [{"id": "first", "query": "go", "expect": {"icontains": "done"}},
                                       {"id": "second", "query": "go", "expect": {"icontains": "held 1 trace"}}],
                            {"name": "live", "agent": "agent.py:agent"}, files={"agent.py": WAITING_AGENT})
        env = clean_env(COLLECTOR_URL=collector.url)
        out = tmp_path / "out"
        done = run_cli("run", "--cases", cases, "--concurrency", 1, "--output-dir", out, "--no-html",
                       "--otlp-endpoint", collector.url, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stdout + done.stderr  # "second" saw first's trace mid-run
        report = only_report(out)
        assert [c["status"] for c in report["cases"]] == ["passed", "passed"]
        roots = [s for s in collector.spans() if s.name == "invoke_agent live"]
        assert sorted({kv.key: kv.value for kv in r.attributes}["agent_eval.case_id"].string_value
                      for r in roots) == ["first", "second"]
        assert "--otlp-endpoint" not in done.stderr

        (report_path,) = out.glob("*.json")
        before = len(collector.trace_ids())
        rescored = run_cli("rescore", report_path, "--otlp-endpoint", collector.url, cwd=tmp_path, env=env)
        assert rescored.returncode == 0, rescored.stdout + rescored.stderr
        assert len(collector.trace_ids()) == before + 2  # the rescored report is a new run id: two new traces

        otel = tmp_path / "runs.otel.jsonl"
        again = run_cli("rescore", report_path, "--otel", otel, cwd=tmp_path, env=env)
        assert again.returncode == 0, again.stderr
        scored = run_cli("score", otel, "--cases", cases, "--output-dir", tmp_path / "scored", "--no-html",
                         "--otlp-endpoint", collector.url, cwd=tmp_path, env=env)
        assert scored.returncode == 0, scored.stdout + scored.stderr
        assert len(collector.trace_ids()) == before + 4
    finally:
        collector.close()


def test_an_unreachable_collector_is_one_warning_and_the_report_is_whole(tmp_path):
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1/traces"
    cases = write_suite(tmp_path, [{"id": f"c{i}", "query": "go", "expect": {"icontains": "done"}} for i in range(5)],
                        {"name": "live", "agent": "agent.py:agent"},
                        files={"agent.py": "def agent(task):\n    return 'done'\n"})
    out = tmp_path / "out"
    done = run_cli("run", "--cases", cases, "--output-dir", out, "--no-html", "--otlp-endpoint", url,
                   cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = only_report(out)
    assert [c["status"] for c in report["cases"]] == ["passed"] * 5 and report["exit_code"] == 0
    warnings = [line for line in done.stderr.splitlines() if "--otlp-endpoint" in line]
    assert len(warnings) == 1 and "5 of 5 run trace(s)" in warnings[0] and "Connect" in warnings[0]


def test_a_collector_answering_with_a_gzip_bomb_costs_no_memory(loopback, tmp_path):
    # agent-eval reads only the status of an OTLP POST: the 1 GiB body is never inflated.
    collector = _Collector(answer=gzip_bomb(2**30), answer_headers={"Content-Encoding": "gzip"})
    try:
        server = loopback(list(SCRIPT))
        cases = write_suite(tmp_path, [{"id": "refund", "messages": TURNS, "expected_tools": EXPECTED,
                                        "trajectory": "unordered"}],
                            {"name": "shop", "tools": "tools.py"}, files={"tools.py": TOOLS})
        measured = run_measured([CLI, "run", "--cases", str(cases), "--model", "gpt-test", "--base-url",
                                 server.base_url, "--output-dir", str(tmp_path / "out"), "--no-html",
                                 "--otlp-endpoint", collector.url], cwd=tmp_path, env=clean_env(OPENAI_API_KEY="k"))
        assert measured.done.returncode == 0, measured.done.stdout + measured.done.stderr
        assert "--otlp-endpoint" not in measured.done.stderr  # sent, and nothing failed
        assert len(collector.trace_ids()) == 1
        assert measured.max_rss_bytes < 2**30, measured.max_rss_bytes
    finally:
        collector.close()


def test_the_first_sigterm_ends_a_command_held_by_a_dripping_collector_within_5_s(tmp_path):
    import signal
    import subprocess
    import time

    from tests.builders import CLI, clean_env
    from tests.hostile import DrippingCollector

    collector = DrippingCollector(every_s=3.0)  # a byte of its answer every 3 s: no read ever times out
    try:
        cases = write_suite(tmp_path, [{"id": "c0", "query": "go", "expect": {"icontains": "done"}}],
                            {"name": "live", "agent": "agent.py:agent"},
                            files={"agent.py": "def agent(task):\n    return 'done'\n"})
        out = tmp_path / "out"
        url = collector.url.replace("http://", "http://alice:hunter2@")
        process = subprocess.Popen([CLI, "run", "--cases", str(cases), "--output-dir", str(out), "--no-html",
                                    "--otlp-endpoint", url], cwd=tmp_path, env=clean_env(),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert collector.accepted.wait(60)  # the run is over ...
        time.sleep(0.5)  # ... and the command waits for the collector, before it writes the report
        assert process.poll() is None
        process.send_signal(signal.SIGTERM)
        sent_at = time.monotonic()
        stdout, stderr = process.communicate(timeout=30)
        assert time.monotonic() - sent_at < 5.0
        assert process.returncode == 143, stdout + stderr
        report = only_report(out)
        assert [c["status"] for c in report["cases"]] == ["passed"]  # the report is whole ...
        assert report["exit_code"] == 143  # ... and says how the command ended (it said 0)
        warnings = [line for line in stderr.splitlines() if "--otlp-endpoint" in line]
        assert len(warnings) == 1 and "1 of 1 run trace(s) were not sent" in warnings[0]
        assert "hunter2" not in stdout + stderr and "***@127.0.0.1" in warnings[0]
    finally:
        collector.close()


def test_a_sigterm_during_the_run_ends_the_command_within_5_s_whatever_the_collector_does(tmp_path):
    import signal
    import subprocess
    import time

    from tests.builders import CLI, clean_env
    from tests.hostile import DrippingCollector

    agent = ("import asyncio\n\nasync def agent(task):\n    if task.case_id == 'slow':\n"
             "        await asyncio.sleep(60)\n    return 'done'\n")
    collector = DrippingCollector(every_s=3.0)
    try:
        cases = write_suite(tmp_path, [{"id": i, "query": "go", "expect": {"icontains": "done"}}
                                       for i in ("fast", "slow")],
                            {"name": "live", "agent": "agent.py:agent"}, files={"agent.py": agent})
        out = tmp_path / "out"
        process = subprocess.Popen([CLI, "run", "--cases", str(cases), "--output-dir", str(out), "--no-html",
                                    "--concurrency", "1", "--otlp-endpoint", collector.url], cwd=tmp_path,
                                   env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
                b'"case_id":"fast"' in p.read_bytes() for p in out.glob("*.jsonl")):
            time.sleep(0.1)
        time.sleep(1.0)  # the fast run was handed to the sender, whose POST now hangs on the collector
        process.send_signal(signal.SIGTERM)
        sent_at = time.monotonic()
        stdout, stderr = process.communicate(timeout=30)
        assert time.monotonic() - sent_at < 5.0, stderr
        assert process.returncode == 143, stdout + stderr
        assert only_report(out)["interrupted"] is True
    finally:
        collector.close()
