"""report/otlp_post.py: the --otlp-endpoint sender, against a loopback collector held up on purpose.

A collector that does not answer until the test lets it go stands for a slow one: the runs offered
meanwhile fill the sender's queue, and the batches that find it full are sent from the report at the
end. Nothing is lost and `offer` never waits.
"""
from __future__ import annotations

import http.server
import threading

import orjson

from agent_eval.report import otlp_post
from agent_eval.report.otlp_post import BATCH_RUNS, QUEUE_BATCHES, RunSender


class HeldCollector:
    """Answers no POST before `release` is set; keeps the trial of each run trace (root span) received."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.trials: list[int] = []
        collector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = orjson.loads(self.rfile.read(int(self.headers["Content-Length"])))
                collector.release.wait()
                for rs in body["resourceSpans"]:
                    for span in (s for ss in rs["scopeSpans"] for s in ss["spans"] if "parentSpanId" not in s):
                        attrs = {a["key"]: a["value"] for a in span["attributes"]}
                        collector.trials.append(int(attrs["agent_eval.trial"]["intValue"]))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def _run(trial: int) -> bytes:
    return orjson.dumps({"trial": trial, "status": "passed", "checks": [], "metrics": {},
                         "trace": {"user_messages": ["go"], "replies": ["done"], "steps": [], "llm_calls": [],
                                   "latency_s": 0.01, "started_at_unix_ns": 1_700_000_000_000_000_000}})


def test_a_held_collector_fills_the_queue_and_the_rest_goes_at_the_end(monkeypatch) -> None:
    monkeypatch.setattr(otlp_post, "HAND_EVERY_S", 1e9)  # batches of BATCH_RUNS only: the count is exact
    collector = HeldCollector()
    try:
        sender = RunSender(collector.url, {"run_id": "r1", "suite": "s", "created_at": "2026-01-01T00:00:00Z"})
        # one batch on the wire, QUEUE_BATCHES waiting, the rest deferred to the report
        total = BATCH_RUNS * (QUEUE_BATCHES + 4)
        for trial in range(total):
            sender.offer("case", trial, _run(trial))  # returns at once although the collector answers nothing
        assert sender.sent == 0
        collector.release.set()
        runs = [_run(t) for t in range(total)]
        report = {"run_id": "r1", "suite": "s", "cases": [{"id": "case", "runs": [{"trial": t} for t in range(total)]}]}
        sent, failed, reason = sender.finish(report, [runs])
        assert (sent, failed, reason) == (total, 0, None)
        assert sorted(collector.trials) == list(range(total))  # every run exactly once
    finally:
        collector.release.set()
        collector.server.shutdown()
        collector.server.server_close()
