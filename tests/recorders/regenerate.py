"""Make the committed recordings of tests/fixtures/recordings/ again, with the real libraries.

    python -m venv /tmp/rec && /tmp/rec/bin/pip install openai-agents==0.24.0 \\
        openinference-instrumentation-openai-agents==2.6.0 logfire==5.4.0 \\
        opentelemetry-instrumentation-openai==0.62.4 opentelemetry-sdk opentelemetry-proto orjson
    /tmp/rec/bin/python -m tests.recorders.regenerate agents-sdk-openinference ...
    python -m venv /tmp/rec2 && /tmp/rec2/bin/pip install inspect-ai==0.3.285 deepeval==4.3.1 orjson
    DEEPEVAL_TELEMETRY_OPT_OUT=YES /tmp/rec2/bin/python -m tests.recorders.regenerate inspect deepeval

These libraries are too heavy to be dev dependencies (logfire alone brings a dozen packages, deepeval
and inspect-ai many more), so the tests read what they wrote. Each recording is made in a fresh
interpreter against the loopback server (tests/loopback.py) playing the recorder's script; NAME picks
some (default: all).
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
    "agents-sdk-openinference-per-turn": ("tests.recorders.agents_sdk", ["openinference", "--trace-per-turn"],
                                          "tests.recorders.agents_sdk"),
    "agents-sdk-logfire-per-turn": ("tests.recorders.agents_sdk", ["logfire", "--trace-per-turn"],
                                    "tests.recorders.agents_sdk"),
    "agents-sdk-openinference-responses": ("tests.recorders.agents_sdk", ["openinference", "--responses"],
                                           "tests.recorders.agents_sdk"),
    "agents-sdk-logfire-responses": ("tests.recorders.agents_sdk", ["logfire", "--responses"],
                                     "tests.recorders.agents_sdk"),
    "openllmetry": ("tests.recorders.record", ["openllmetry"], "tests.recorders.agent"),
    "openllmetry-root-tool-spans": ("tests.recorders.record", ["openllmetry", "--root", "--tool-spans"],
                                    "tests.recorders.agent"),
    "logfire-v1": ("tests.recorders.record", ["logfire-v1"], "tests.recorders.agent"),
    "logfire-v2": ("tests.recorders.record", ["logfire-v2"], "tests.recorders.agent"),
    "logfire-v2-root": ("tests.recorders.record", ["logfire-v2", "--root"], "tests.recorders.agent"),
    # these two in a venv of their own: inspect-ai==0.3.285 deepeval==4.3.1 orjson
    "inspect": ("tests.recorders.inspect_log", [], "tests.recorders.inspect_log"),
    "deepeval": ("tests.recorders.deepeval_files", [], None),
}


def regenerate(name: str) -> None:
    module, args, script_module = RECORDINGS[name]
    if script_module is None:  # no model calls: the library writes its files by itself
        subprocess.run([sys.executable, "-m", module, str(OUT / name)], cwd=ROOT, check=True, timeout=300)
        print(f"wrote {OUT / name}")
        return
    module_vars = __import__(script_module, fromlist=["SCRIPT"])
    script = module_vars.SCRIPT
    with LoopbackServer(list(script) if isinstance(script, list) else script) as server:
        setup, *options = args or [""]
        command = [sys.executable, "-m", module, *([setup] if setup else []), server.base_url, str(OUT / name),
                   *options]
        subprocess.run(command, cwd=ROOT, check=True, timeout=300)
        made = getattr(module_vars, "CALLS_PER_LOG", None) or len(script)
        assert server.count == made, f"{name}: {server.count} of {made} scripted calls made"
    print(f"wrote {OUT / name}")


if __name__ == "__main__":
    for name in sys.argv[1:] or list(RECORDINGS):
        regenerate(name)
