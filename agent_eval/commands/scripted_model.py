"""`agent-eval scripted-model SCRIPT [--port N]`: serve the scripted model in the foreground until Ctrl-C."""
from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from rich.console import Console

from agent_eval.errors import EXIT_PASSED


def scripted_model_command(script: Path, port: int, console: Console) -> int:
    """Check the script, listen, print the base URL; Ctrl-C stops it (exit 0). A bad script or a taken port
    is a ConfigError (exit 2)."""
    from agent_eval.scripted.script import load_script
    from agent_eval.scripted.server import ScriptedModel, serve_until_stopped

    model = ScriptedModel(load_script(script), str(script))  # checked before anything listens

    def started(base_url: str) -> None:
        console.print(base_url, markup=False, highlight=False, soft_wrap=True)
        console.file.flush()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_until_stopped(model, port, started))
    return EXIT_PASSED
