"""report/otlp_post.py: the --otlp-endpoint sender, against a loopback collector held up on purpose.

A collector that does not answer until the test lets it go stands for a slow one: the runs offered
meanwhile fill the sender's queue, and the batches that find it full are sent from the report at the
end. Nothing is lost and `journaled` never waits.
"""
from __future__ import annotations

import threading

import orjson

from agent_eval.report import otlp_post
from agent_eval.report.otlp_post import BATCH_RUNS, QUEUE_BATCHES, RunSender
from tests.hostile import DrippingCollector
from tests.otlp_collector import OtlpCollector


def _run(trial: int) -> bytes:
    return orjson.dumps({"trial": trial, "status": "passed", "checks": [], "metrics": {},
                         "trace": {"user_messages": ["go"], "replies": ["done"], "steps": [], "llm_calls": [],
                                   "latency_s": 0.01, "started_at_unix_ns": 1_700_000_000_000_000_000}})


def test_a_held_collector_fills_the_queue_and_the_rest_goes_at_the_end(monkeypatch) -> None:
    monkeypatch.setattr(otlp_post, "HAND_EVERY_S", 1e9)  # batches of BATCH_RUNS only: the count is exact
    collector = OtlpCollector(held=True)
    try:
        sender = RunSender(collector.url, {"run_id": "r1", "suite": "s", "created_at": "2026-01-01T00:00:00Z"})
        # one batch on the wire, QUEUE_BATCHES waiting, the rest deferred to the report
        total = BATCH_RUNS * (QUEUE_BATCHES + 4)
        for trial in range(total):
            sender.journaled("case", trial, _run(trial))  # returns at once although the collector answers nothing
        assert sender.sent == 0
        collector.release.set()
        runs = [_run(t) for t in range(total)]
        report = {"run_id": "r1", "suite": "s", "cases": [{"id": "case", "runs": [{"trial": t} for t in range(total)]}]}
        outcome = sender.finish(report, [runs])
        assert (outcome.sent, outcome.failed, outcome.not_sent, outcome.reason) == (total, 0, 0, None)
        assert sorted(collector.trials()) == list(range(total))  # every run exactly once
    finally:
        collector.close()


HEAD = {"run_id": "r1", "suite": "s", "created_at": "2026-01-01T00:00:00Z"}


def _report(total: int) -> tuple[dict, list[list[bytes]]]:
    report = {"run_id": "r1", "suite": "s", "cases": [{"id": "case", "runs": [{"trial": t} for t in range(total)]}]}
    return report, [[_run(t) for t in range(total)]]


def test_a_dripping_collector_is_cut_at_the_whole_post_bound_and_the_end_waits_its_bound(monkeypatch) -> None:
    import time

    # The real bounds are 10 s a POST and 15 s at the end; scaled down here, the same code holds them.
    monkeypatch.setattr(otlp_post, "TIMEOUT_S", 0.6)
    monkeypatch.setattr(otlp_post, "FINISH_S", 1.5)
    collector = DrippingCollector(every_s=0.1)  # each byte in time for any per-read timeout
    try:
        sender = RunSender(collector.url, HEAD)
        report, runs = _report(3 * BATCH_RUNS)
        started = time.monotonic()
        outcome = sender.finish(report, runs, every_run=True)
        took = time.monotonic() - started
        # 0.6 s a POST: the first two batches fail by 1.2 s, the third is cut by the end's bound.
        assert 1.4 <= took < 2.5
        assert outcome.sent == 0 and outcome.failed == 2 * BATCH_RUNS and outcome.not_sent == BATCH_RUNS
        assert outcome.reason == "no answer within 0.6 s"
        line = otlp_post.warning(collector.url, outcome)
        assert "128 of 192 run trace(s) could not be sent" in line and "64 of 192 run trace(s) were not sent" in line
    finally:
        collector.close()


def test_stop_ends_the_wait_at_once(monkeypatch) -> None:
    import time

    collector = DrippingCollector(every_s=0.5)
    try:
        sender = RunSender(collector.url, HEAD)
        report, runs = _report(2)
        threading.Timer(0.3, sender.stop.set).start()  # the first Ctrl-C or SIGTERM
        started = time.monotonic()
        outcome = sender.finish(report, runs, every_run=True)
        assert time.monotonic() - started < 1.0
        assert (outcome.sent, outcome.not_sent) == (0, 2)
    finally:
        collector.close()


def test_the_sender_works_without_httpx_and_shows_no_secret(monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "httpx", None)  # `import httpx` raises: it is no dependency of ours
    collector = OtlpCollector()
    try:
        url = collector.url.replace("http://", "http://alice:hunter2@") + "?api_key=s3cret&x=1"
        sender = RunSender(url, HEAD)
        for trial in range(3):
            sender.journaled("case", trial, _run(trial))
        report, runs = _report(3)
        outcome = sender.finish(report, runs)
        assert (outcome.sent, outcome.failed, outcome.not_sent) == (3, 0, 0)
        assert sorted(collector.trials()) == [0, 1, 2]
    finally:
        collector.close()
    line = otlp_post.warning(url, otlp_post.Sent(0, 3, 0, "HTTP 500"))
    assert "hunter2" not in line and "s3cret" not in line and "***@127.0.0.1" in line and "api_key=***" in line
