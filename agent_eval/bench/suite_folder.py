"""What every benchmark import shares: the pinned upstream package or checkout, the suite folder it
writes, and `bench.lock.json`, which a run checks against what is installed."""
from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agent_eval.bench import Benchmark
from agent_eval.errors import ConfigError

LOCK_FILE = "bench.lock.json"


@dataclass(frozen=True)
class Upstream:
    """Where the benchmark's code and data come from: the installed package or a checkout."""

    package_dir: Path  # the upstream Python package's own folder (holding its data)
    version: str | None  # the installed distribution's version; None for a checkout
    checkout: Path | None = None
    commit: str | None = None

    def source(self, bench: Benchmark) -> dict[str, Any]:
        """The lock's record of where the suite came from."""
        if self.checkout is None:
            return {"package": bench.package, "version": self.version}
        return {"package": bench.package, "checkout": str(self.checkout), "commit": self.commit}


def installed(bench: Benchmark, import_name: str) -> Upstream:
    """The installed upstream package, which must be the pinned version; else exit 2 naming the commands."""
    from importlib.metadata import PackageNotFoundError, version
    from importlib.util import find_spec

    try:
        found = version(bench.package)
    except PackageNotFoundError:
        raise ConfigError(f"{bench.name} needs {bench.package}=={bench.version}, which is not installed. "
                          f"Install it: {bench.install_commands()}") from None
    if found != bench.version:
        raise ConfigError(f"{bench.name} needs {bench.package}=={bench.version}, but {found} is installed. "
                          f"Install the pinned version: {bench.install_commands()}")
    spec = find_spec(import_name)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"{bench.package} {found} is installed but its module {import_name!r} cannot be found. "
                          f"Reinstall it: {bench.install_commands()}")
    return Upstream(Path(next(iter(spec.submodule_search_locations))), found)


def checkout(path: Path, import_name: str, inner: str) -> Upstream:
    """A local checkout of the upstream repository (`path` holds `import_name/`, or `inner/import_name/`)."""
    for root in (path, path / inner):
        if (root / import_name / "__init__.py").is_file():
            return Upstream(root / import_name, None, root.resolve(), _git_commit(root))
    raise ConfigError(f"--from {path}: no {import_name}/ package found there or in {inner}/. Fix: give the "
                      f"folder of a checkout of the upstream repository.")


def find_upstream(bench: Benchmark, source: Path | None, import_name: str, inner: str) -> Upstream:
    """The pinned installed package (`source` None), or the checkout at `source`."""
    return installed(bench, import_name) if source is None else checkout(source, import_name, inner)


def _git_commit(folder: Path) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def check_out(out: Path) -> None:
    """Refuse, before any work, an --out that is a file or a folder that is not empty."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: a file of that name exists. Fix: give a new folder.")
    if out.is_dir() and any(out.iterdir()):
        raise ConfigError(f"--out {out}: the folder exists and is not empty; agent-eval never overwrites a suite. "
                          f"Fix: give a new folder, or empty this one.")


def publish(out: Path, contents: dict[str, bytes]) -> Path:
    """Write the suite folder at once: its files go into a new sibling folder, renamed to `out` (which may be
    an empty folder). An import that fails leaves nothing, and of two imports into one folder the second is
    refused."""
    import os
    import shutil
    import tempfile

    check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    staging.chmod(0o755)  # mkdtemp's folder is the owner's alone; a suite folder is an ordinary one
    try:
        for name, data in contents.items():
            (staging / name).write_bytes(data)
        try:
            os.rename(staging, out)  # replaces an empty folder; refused when `out` has files by now
        except OSError:
            raise ConfigError(f"--out {out}: the folder is not empty any more (another import wrote it?); "
                              f"agent-eval never overwrites a suite. Fix: give a new folder.") from None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return out


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def file_hashes(package_dir: Path, relative: Iterable[str]) -> dict[str, str]:
    """The sha256 of each file (paths relative to the upstream package's folder), sorted by path."""
    return {rel: sha256_of(package_dir / rel) for rel in sorted(set(relative))}


def json_bytes(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n"


def read_lock(folder: Path) -> dict[str, Any]:
    """The suite folder's lock; a ConfigError when it is missing or unreadable."""
    path = folder / LOCK_FILE
    try:
        lock = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the benchmark lock ({exc}). Fix: import the suite again "
                          f"(agent-eval bench import ... --out NEW_FOLDER).") from None
    if not isinstance(lock, dict):
        raise ConfigError(f"{path}: the benchmark lock is not a JSON object. Fix: import the suite again.")
    return lock


def lock_difference(lock: dict[str, Any], upstream: Upstream) -> str | None:
    """What differs between the lock and what is installed now (None when they match)."""
    source = lock.get("source") or {}
    if source.get("checkout") is None and upstream.version != source.get("version"):
        return (f"it was imported from {source.get('package')} {source.get('version')}, "
                f"but {upstream.version} is installed")
    for rel, digest in (lock.get("files") or {}).items():
        path = upstream.package_dir / rel
        if not path.is_file():
            return f"{path} (read at import) is missing"
        if sha256_of(path) != digest:
            return f"{path} changed since the import (sha256 {digest[:12]}... was recorded)"
    return None


def make_importable(upstream: Upstream, import_name: str) -> None:
    """Make `import IMPORT_NAME` import `upstream` (a checkout goes first on sys.path); a different copy
    already imported in this process is a ConfigError."""
    loaded = sys.modules.get(import_name)
    if loaded is not None:
        where = Path(next(iter(getattr(loaded, "__path__", [""])))).resolve()
        if where != upstream.package_dir.resolve():
            raise ConfigError(f"{import_name} is already imported from {where}, not from {upstream.package_dir}; "
                              f"run agent-eval again in a new process.")
        return
    if upstream.checkout is not None and str(upstream.package_dir.parent) not in sys.path:
        sys.path.insert(0, str(upstream.package_dir.parent))
