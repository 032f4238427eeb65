"""Make the committed recordings of tests/fixtures/recordings/ again, with the real libraries.

    python -m venv /tmp/rec && /tmp/rec/bin/pip install openai-agents==0.24.0 \\
        openinference-instrumentation-openai-agents==2.6.0 logfire==5.4.0 \\
        opentelemetry-instrumentation-openai==0.62.4 opentelemetry-sdk opentelemetry-proto orjson
    /tmp/rec/bin/python -m tests.recorders.regenerate [NAME ...]

These libraries are too heavy to be dev dependencies (logfire alone brings a dozen packages), so the
tests read what they wrote. Each recording is made in a fresh interpreter against the loopback server
(tests/loopback.py) playing the recorder's script; NAME picks some (default: all).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.loopback import LoopbackServer

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "recordings"
# name: (recorder module, its arguments before BASE_URL, the script module)
RECORDINGS = {
    "agents-sdk-openinference": ("tests.recorders.agents_sdk", ["openinference"], "tests.recorders.agents_sdk"),
    "agents-sdk-logfire": ("tests.recorders.agents_sdk", ["logfire"], "tests.recorders.agents_sdk"),
    "openllmetry": ("tests.recorders.record", ["openllmetry"], "tests.recorders.agent"),
    "openllmetry-root-tool-spans": ("tests.recorders.record", ["openllmetry", "--root", "--tool-spans"],
                                    "tests.recorders.agent"),
    "logfire-v1": ("tests.recorders.record", ["logfire-v1"], "tests.recorders.agent"),
    "logfire-v2": ("tests.recorders.record", ["logfire-v2"], "tests.recorders.agent"),
    "logfire-v2-root": ("tests.recorders.record", ["logfire-v2", "--root"], "tests.recorders.agent"),
}


def regenerate(name: str) -> None:
    module, before, script_module = RECORDINGS[name]
    script = __import__(script_module, fromlist=["SCRIPT"]).SCRIPT
    with LoopbackServer(list(script)) as server:
        setup, *options = before
        subprocess.run([sys.executable, "-m", module, setup, server.base_url, str(OUT / name), *options],
                       cwd=ROOT, check=True, timeout=300)
        assert server.count == len(script), f"{name}: {server.count} of {len(script)} scripted calls made"
    print(f"wrote {OUT / name}")


if __name__ == "__main__":
    for name in sys.argv[1:] or list(RECORDINGS):
        regenerate(name)
