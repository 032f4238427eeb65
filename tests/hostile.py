"""What every hostile-input CLI test checks besides its own point: no traceback, no secret, no process left.

A test runs the CLI with SECRET as its key (and anything else it wants hidden), then calls `assert_clean`
on the finished process and its output folder.
"""
from __future__ import annotations

import gzip
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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


def gzip_bomb(expanded: int, layers: int = 1) -> bytes:
    """A valid gzip body of `expanded` zero bytes (a multiple of 4 MiB) in about expanded / 1000 bytes;
    each further layer gzips the one before (send it with `Content-Encoding: gzip, gzip`)."""
    zeros = bytes(4 * 2**20)
    count = expanded // len(zeros)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    deflate.compress(zeros)
    deflate.flush(zlib.Z_FULL_FLUSH)
    segment = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)  # self-contained: repeatable
    crc = 0
    for _ in range(count):
        crc = zlib.crc32(zeros, crc)
    body = (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + segment * count + b"\x03\x00"
            + struct.pack("<II", crc, (count * len(zeros)) & 0xFFFFFFFF))
    for _ in range(layers - 1):
        body = gzip.compress(body, 9)
    return body


@dataclass
class Measured:
    """A finished subprocess and the largest resident set it (or a child it waited for) reached."""

    done: subprocess.CompletedProcess
    max_rss_bytes: int


def run_measured(args: list[str], env: dict[str, str], cwd: Path | None = None, guard_s: float = 180) -> Measured:
    """Run `args` to its end (killed after `guard_s`, a hang guard) and read its rusage with os.wait4."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(args, stdout=out, stderr=err, env=env, cwd=cwd)
        timer = threading.Timer(guard_s, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(args, proc.returncode, out.read().decode("utf-8", "replace"),
                                           err.read().decode("utf-8", "replace"))
    return Measured(done, usage.ru_maxrss * 1024)  # Linux counts ru_maxrss in KiB


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def http_mcp_server(script: Path, *args: str, guard_s: float = 60) -> Iterator[str]:
    """Start `python SCRIPT ARGS...` (each "{port}" in ARGS replaced by a free port) and wait
    until it accepts connections; yields its MCP URL, and stops it afterwards."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(script), *(a.replace("{port}", str(port)) for a in args)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + guard_s
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, f"{script.name} did not start"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class DrippingCollector:
    """Reads each POST, then drips its answer's status line one byte every `every_s` seconds, forever."""

    def __init__(self, every_s: float = 0.2) -> None:
        self.every_s = every_s
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1/traces"
        self.closed = threading.Event()
        self.accepted = threading.Event()  # a POST came
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.set()
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn) -> None:
        try:
            conn.recv(1 << 20)
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000:
                if self.closed.wait(self.every_s):
                    break
                conn.send(bytes([byte]))
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.closed.set()
        self.sock.close()
