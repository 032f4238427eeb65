"""The CLI in a test: `run_cli(*args, cwd=, env=, input=)` calls the app in this process, as typer's test
runner does, and returns a `CliResult(exit_code, stdout, stderr)`; `run_cli_process` starts the installed
`agent-eval` script as a subprocess and returns the same shape.

Use `run_cli` unless the process itself is under test (a signal and the exit code it leads to, the
process tree, what a fresh interpreter imports): it takes milliseconds where a subprocess takes a second.
What a command changes in the process is undone after each call, so one call cannot leak into the next:
the environment (replaced by `env`, default `clean_env()`), the current directory, the standard streams,
signal handlers, logging handlers, warning filters, sys.path, the user modules it imported, and the
module-level state of agent_eval (its registries, the secrets it redacts, its endpoints).
An exception that escapes the app is printed on stderr as a traceback with exit code 1, as the process
would, so `"Traceback" not in result.stderr` means the same in both.
"""
from __future__ import annotations

import io
import logging
import os
import signal
import subprocess
import sys
import threading
import traceback
import types
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The tables a plugin extends, and their owners: imported here so that each call's snapshot holds them (a
# module first imported during a call would keep what that call's plugins added), and the modules that attach
# their code to the settings table's rows (`attach`: the snapshot would otherwise put back the rows without it).
import agent_eval.ingest.formats
import agent_eval.plugins
import agent_eval.report.outputs
import agent_eval.run.agents
import agent_eval.run.config
import agent_eval.run.settings_block
import agent_eval.score.checks
import agent_eval.score.metric_registry
import agent_eval.suite.imports  # noqa: F401 (its plugin modules, by file)
from tests.builders import CLI, ROOT, clean_env

HANG_GUARD_S = 180.0
_SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGPIPE,
                             signal.SIGALRM, signal.SIGUSR1, signal.SIGUSR2))
# Third-party and standard modules stay imported across calls (importing them again is slow, and some,
# numpy among them, cannot be imported twice); a module from anywhere else (a user's tools module, agent
# or plugin in a test's folder) is forgotten after the call, as a fresh process would never have seen it.
_KEEP_PREFIXES = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix, str(ROOT / "agent_eval")})


@dataclass
class CliResult:
    """A finished command: its exit code and what it printed. `returncode` is the same as `exit_code`,
    so a test can take a subprocess.CompletedProcess or a CliResult alike."""

    exit_code: int
    stdout: str
    stderr: str
    args: tuple[str, ...] = ()

    @property
    def returncode(self) -> int:
        return self.exit_code


class CliTimeout(BaseException):
    """The command ran longer than its hang guard."""


def run_cli(*args: object, cwd: Path | str | None = None, env: dict[str, str] | None = None,
            input: str | None = None, timeout: float = HANG_GUARD_S) -> CliResult:
    """`agent-eval ARGS...` in this process, with `cwd` (default the repository) as the current directory,
    `env` (default `clean_env()`) as the whole environment and `input` on stdin."""
    argv = [str(a) for a in args]
    state = _State(Path(cwd) if cwd is not None else ROOT, clean_env() if env is None else env, input)
    with state:
        code = _call(argv, timeout)
    return CliResult(code, state.stdout, state.stderr, tuple(argv))


def run_cli_process(*args: object, cwd: Path | str | None = None, env: dict[str, str] | None = None,
                    input: str | None = None, timeout: float = HANG_GUARD_S) -> CliResult:
    """`agent-eval ARGS...` as a subprocess of the installed script, for a test of the process itself."""
    argv = [str(a) for a in args]
    done = subprocess.run([CLI, *argv], capture_output=True, text=True, cwd=cwd or ROOT, input=input,
                          env=clean_env() if env is None else env, timeout=timeout)
    return CliResult(done.returncode, done.stdout, done.stderr, tuple(argv))


def _call(argv: list[str], timeout: float) -> int:
    from agent_eval import cli

    consoles = cli.console, cli.err_console  # put back here too: a test that dropped agent_eval.cli from
    # sys.modules (pytester does) leaves it out of the module state that _State puts back
    cli.console = cli.make_console()  # the consoles read the width, colour and terminal at creation
    cli.err_console = cli.make_console(stderr=True)
    guard = threading.current_thread() is threading.main_thread()
    if guard:
        def expire(signum: int, frame: types.FrameType | None) -> None:
            raise CliTimeout(f"agent-eval {' '.join(argv)} still running after {timeout:g} s")

        signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        cli.main(argv)
    except SystemExit as exc:
        return _exit_code(exc.code)
    except CliTimeout:
        raise
    except BaseException:  # noqa: BLE001 - the process would print it and exit 1
        traceback.print_exc(file=sys.stderr)
        return 1
    finally:
        cli.console, cli.err_console = consoles
        if guard:
            signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdout.flush()
        sys.stderr.flush()
    return 0


def _exit_code(code: Any) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message"), as the interpreter shows it
    return 1


class _State:
    """Everything a command may change in the process, saved on entry and put back on exit."""

    def __init__(self, cwd: Path, env: dict[str, str], stdin: str | None) -> None:
        self.cwd, self.env, self.stdin = cwd, env, stdin
        self.stdout = self.stderr = ""

    def __enter__(self) -> _State:
        self._environ = dict(os.environ)
        self._cwd = os.getcwd()
        self._streams = (sys.stdin, sys.stdout, sys.stderr)
        self._argv = list(sys.argv)
        self._path = list(sys.path)
        self._modules = set(sys.modules)
        self._handlers = {signum: signal.getsignal(signum) for signum in _SIGNALS}
        root = logging.getLogger()
        self._logging = (list(root.handlers), root.level)
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        # No bytecode for the user modules a test writes: one rewritten in the same second at the same size
        # would otherwise be read back from a stale .pyc by the next call.
        self._bytecode = sys.dont_write_bytecode
        sys.dont_write_bytecode = True
        self._globals = _snapshot_agent_eval()
        os.environ.clear()
        os.environ.update(self.env)
        os.chdir(self.cwd)
        self._out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
        self._err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace", write_through=True)
        sys.stdin = io.StringIO(self.stdin or "")
        sys.stdout, sys.stderr = self._out, self._err
        sys.argv = [CLI]
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.stdout = _text(self._out)
            self.stderr = _text(self._err)
        finally:
            sys.stdin, sys.stdout, sys.stderr = self._streams
            sys.argv = self._argv
            os.chdir(self._cwd)
            os.environ.clear()
            os.environ.update(self._environ)
            sys.path[:] = self._path
            for signum, handler in self._handlers.items():
                if handler is not None:
                    signal.signal(signum, handler)
            root = logging.getLogger()
            root.handlers[:], level = self._logging
            root.setLevel(level)
            self._warnings.__exit__(None, None, None)
            sys.dont_write_bytecode = self._bytecode
            _restore_agent_eval(self._globals)
            _forget_user_modules(set(sys.modules) - self._modules)
            _rebuild_options()


def _rebuild_options() -> None:
    """The commands' options as the restored settings table has them: main() gave each command function a
    signature with the options of the plugins' rows, which a later call (or `typer.main.get_command(app)` in a
    test) would otherwise still read after those rows are gone."""
    cli = sys.modules.get("agent_eval.cli")
    if cli is not None:
        from agent_eval.commands.options import build_options

        build_options(cli.app)


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode("utf-8", "replace").replace("\r\n", "\n")


_Snapshot = list[tuple[dict[str, Any], dict[str, Any], list[tuple[Any, Any]]]]


def _snapshot_agent_eval() -> _Snapshot:
    """For each agent_eval module imported so far: its globals, and a copy of each list, dict and set
    among them (a registry, a cache, the secrets to redact)."""
    taken: _Snapshot = []
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "agent_eval" or name.startswith("agent_eval.")):
            continue
        space = vars(module)
        names = dict(space)
        contents = [(value, _copy(value)) for value in names.values()
                    if type(value) in (list, dict, set) and not _is_dunder_value(value, space)]
        taken.append((space, names, contents))
    return taken


def _is_dunder_value(value: Any, space: dict[str, Any]) -> bool:
    return value is space.get("__all__") or value is space.get("__builtins__")


def _copy(value: Any) -> Any:
    return value.copy()


def _restore_agent_eval(taken: _Snapshot) -> None:
    for space, names, contents in taken:
        for key, value in names.items():  # a name the call added (a submodule, a lazy global) stays

            if space.get(key) is not value:
                space[key] = value
        for live, saved in contents:
            if isinstance(live, list):
                live[:] = saved
            else:
                live.clear()
                live.update(saved)


def is_installed(name: str) -> bool:
    """True for the module `name` of the venv, the standard library or agent_eval, which stays imported for the
    process's life as in a real one; False for a user's module (a test's folder, a suite's tools or agent)."""
    module = sys.modules.get(name)
    if module is None or name.startswith("_agent_eval_user_"):
        return False
    places = [getattr(module, "__file__", None), *(getattr(module, "__path__", None) or [])]
    return any(str(place).startswith(_KEEP_PREFIXES) for place in places if place)


def _forget_user_modules(added: set[str]) -> None:
    for name in added:
        module = sys.modules.get(name)
        where = getattr(module, "__file__", None)
        if name.startswith("_agent_eval_user_") or (where and not str(where).startswith(_KEEP_PREFIXES)):
            sys.modules.pop(name, None)
