"""What every hostile-input CLI test checks besides its own point: no traceback, no secret, no process left.

A test runs the CLI with SECRET as its key (and anything else it wants hidden), then calls `assert_clean`
on the finished process and its output folder.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

SECRET = "sk-hardening-secret-0123456789abcdef"


def live_pids(tag: str) -> list[int]:
    """Pids of live (not zombie) processes whose command line holds `tag`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if tag.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def assert_clean(done: subprocess.CompletedProcess, folder: Path | None = None, tag: str | None = None,
                 secrets: tuple[str, ...] = (SECRET,)) -> None:
    """No traceback on either stream, no secret in the streams or any file under `folder`, and no live
    process whose command line holds `tag`."""
    streams = (done.stdout or "") + (done.stderr or "")
    assert "Traceback" not in streams, streams[-3000:]
    for secret in secrets:
        assert secret not in streams
        for path in folder.rglob("*") if folder is not None else ():
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path
    if tag is not None:
        assert live_pids(tag) == []
