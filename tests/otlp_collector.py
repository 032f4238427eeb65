"""A loopback OTLP/HTTP collector that tests and benches of `--otlp-endpoint` share.

It keeps each POST's JSON body and when it arrived, and answers 200. `held=True` answers nothing until the
test sets `release` (a collector that does not answer); `delay_s` answers each POST that much later (a
slow one).
"""
from __future__ import annotations

import http.server
import threading
import time
from typing import Any

import orjson


class OtlpCollector:
    """An OTLP/HTTP JSON receiver on 127.0.0.1; `url` is its /v1/traces."""

    def __init__(self, delay_s: float = 0.0, held: bool = False) -> None:
        self.bodies: list[Any] = []
        self.arrivals: list[float] = []  # time.perf_counter() when each answered POST was counted
        self.release = threading.Event()
        if not held:
            self.release.set()
        lock = threading.Lock()
        collector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = orjson.loads(self.rfile.read(int(self.headers["Content-Length"])))
                collector.release.wait()
                if delay_s:
                    time.sleep(delay_s)
                with lock:
                    collector.bodies.append(body)
                    collector.arrivals.append(time.perf_counter())
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def run_spans(self) -> list[dict[str, Any]]:
        """The root span of every run trace received (one per run), in the order they came."""
        return [span for body in list(self.bodies) for rs in body["resourceSpans"] for ss in rs["scopeSpans"]
                for span in ss["spans"] if "parentSpanId" not in span]

    def trials(self) -> list[int]:
        """The `agent_eval.trial` of every run received."""
        return [int({a["key"]: a["value"] for a in span["attributes"]}["agent_eval.trial"]["intValue"])
                for span in self.run_spans()]

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
