"""MCP servers that misbehave (docs/mcp.md, "Bounds"), through `agent-eval` (in-process, but as a subprocess
where a process limit is under test: a file size limit, the memory it reaches): state and results past the
size and depth limits, schemas that loop, HTTP refusals, a flood of stderr, stray stdout lines, and
servers that hang at start or on a request. The servers are tests/fixtures/mcp/."""
from __future__ import annotations

import resource
import subprocess
import uuid
from pathlib import Path

from typing import Any

import orjson
import pytest

from tests import cli as cli_helper
from tests.builders import CLI, clean_env, write_suite
from tests.hostile import SECRET, assert_clean, http_mcp_server, run_measured

pytest.importorskip("mcp")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mcp"
SERVER = FIXTURES / "hostile_server.py"
LABEL = str(SERVER)  # how messages name a server without a `name`: its script as the command gives it
TINY = FIXTURES / "tiny_server.py"
HANG_GUARD_S = 180

AGENT = '''
async def agent(task):
    outs = []
    for name, args in task.metadata.get("calls", []):
        try:
            outs.append(await task.acall_tool(name, **args))
        except Exception as exc:
            outs.append(f"ERR {exc}")
    return "ok " + " | ".join(outs)
'''


def suite(folder: Path, cases: list[dict], *flags: str, entry: dict | None = None, **block: object) -> tuple:
    """A suite of `cases` on one per-run hostile server (with `flags`), its state resource the env."""
    tag = f"tag-{uuid.uuid4().hex}"
    server = entry or {"command": ["python", str(SERVER), *flags, tag], "state_resource": "state://env"}
    settings = {"name": "hostile-mcp", "tools": [{"mcp": server}], "agent": "agent.py:agent", **block}
    return write_suite(folder, cases, settings, {"agent.py": AGENT}), tag


def cli(*args: object, limit_files: int | None = None) -> subprocess.CompletedProcess | cli_helper.CliResult:
    """The command in-process; with `limit_files`, a subprocess that may write files of that size at most."""
    if limit_files is None:
        return cli_helper.run_cli(*args, cwd=Path.cwd(), timeout=HANG_GUARD_S, env=clean_env(OPENAI_API_KEY=SECRET))

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_files, limit_files))

    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=HANG_GUARD_S,
                          env=clean_env(OPENAI_API_KEY=SECRET), preexec_fn=limits)


def run(path: Path, *args: str, limit_files: int | None = None) -> tuple[Any, dict]:
    out = path.parent / "out"
    done = cli("run", "--cases", path, "--output-dir", out, "--no-html", *args, limit_files=limit_files)
    reports = list(out.glob("*.json"))
    return done, orjson.loads(reports[0].read_bytes()) if reports else {}


def runs_of(report: dict) -> dict[str, dict]:
    return {c["id"]: c["runs"][0] for c in report["cases"]}


def call(name: str, **args: object) -> list:
    return [name, args]


def test_a_state_resource_too_deep_or_too_big_is_the_run_s_error(tmp_path: Path) -> None:
    cases = [{"id": "deep", "query": "q", "metadata": {"calls": [call("grow_state", kind="deep")]},
              "expect": {"contains": "ok"}},
             {"id": "big", "query": "q", "metadata": {"calls": [call("grow_state", kind="big")]},
              "expect": {"contains": "ok"}},
             {"id": "fine", "query": "q", "metadata": {"calls": [call("echo", text="hi")]},
              "expected_env_check": {"path": ["count"], "equals": 1}}]
    path, tag = suite(tmp_path, cases)
    done, report = run(path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert_clean(done, tmp_path, tag)
    runs = runs_of(report)
    assert runs["deep"]["status"] == "error" and runs["big"]["status"] == "error"
    assert runs["deep"]["error"] == (f"MCP server {LABEL}: the state resource state://env is nested "
                                     "past the depth limit of 100 levels")
    assert "hostile_server.py" in runs["big"]["error"] and "64 MiB limit" in runs["big"]["error"]
    assert runs["fine"]["status"] == "passed"
    assert report["summary"]["runs"] == 1 and report["summary"]["runs_errored"] == 2


@pytest.mark.parametrize("kind", ["deep", "big"])
def test_validate_refuses_a_state_resource_that_run_could_not_hold(tmp_path: Path, kind: str) -> None:
    path, tag = suite(tmp_path, [{"id": "c", "query": "q", "expect": {"contains": "x"}}],
                      initial_env={"state": kind})
    done = cli("validate", "--cases", path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert_clean(done, tmp_path, tag)
    assert f"MCP server {LABEL}" in done.stderr
    assert ("depth limit of 100" if kind == "deep" else "64 MiB limit") in done.stderr


def test_a_result_over_64_mib_is_the_run_s_error(tmp_path: Path) -> None:
    cases = [{"id": "huge", "query": "q", "metadata": {"calls": [call("huge")]}, "expect": {"contains": "ok"}},
             {"id": "fine", "query": "q", "metadata": {"calls": [call("echo", text="hi")]},
              "expect": {"contains": "ok hi"}}]
    path, tag = suite(tmp_path, cases)
    done, report = run(path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert_clean(done, tmp_path, tag)
    runs = runs_of(report)
    assert runs["huge"]["status"] == "error" and runs["huge"]["trace"]["agent_error"] is None
    assert runs["huge"]["error"] == (f"MCP server {LABEL} sent a message over the 64 MiB limit "
                                     "during tools/call huge")
    assert runs["fine"]["status"] == "passed"


@pytest.mark.parametrize("kind", ["self", "remote"])
def test_a_server_tool_schema_whose_ref_loops_or_leaves_is_exit_2_naming_the_tool(tmp_path: Path,
                                                                                   kind: str) -> None:
    path, tag = suite(tmp_path, [{"id": "c", "query": "q", "expect": {"contains": "x"}}], "--bad-schema", kind)
    done = cli("validate", "--cases", path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert_clean(done, tmp_path, tag)
    assert "tool 'echo'" in done.stderr
    assert ("leads back to itself" if kind == "self" else "not local") in done.stderr


def test_stderr_is_kept_in_memory_not_in_a_file(tmp_path: Path) -> None:
    # The command may write files of 4 MiB at most; the server writes 16 MiB on stderr. A temporary file
    # for it would break the limit (and kill the server); 64 KiB kept in memory does not.
    cases = [{"id": "loud", "query": "q", "metadata": {"calls": [call("shout", mib=16)]},
              "expect": {"contains": "ok shouted"}}]
    path, tag = suite(tmp_path, cases)
    done, report = run(path, limit_files=4 * 2**20)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_clean(done, tmp_path, tag)
    assert runs_of(report)["loud"]["status"] == "passed"


def test_stray_stdout_lines_are_one_warning_line_per_server(tmp_path: Path) -> None:
    cases = [{"id": f"c{n}", "query": "q", "metadata": {"calls": [call("echo", text="hi")]},
              "expect": {"contains": "ok hi"}} for n in range(3)]
    path, tag = suite(tmp_path, cases, "--noise")
    done, report = run(path, "--quiet", "--concurrency", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert_clean(done, tmp_path, tag)
    # Four servers start (validation's and one per run), each says "starting up"; three echo calls
    # add one line each: 4 + 3 = 7.
    assert done.stderr.splitlines() == [
        f"warning: MCP server {LABEL} wrote 7 lines on stdout that are not JSON-RPC (ignored); "
        "the first: debug: starting up"]
    assert all(c["status"] == "passed" for c in report["cases"])


def test_start_timeout_and_timeout_bound_a_server(tmp_path: Path) -> None:
    cases = [{"id": "hangs", "query": "q", "initial_env": {"hang_start": True}, "expect": {"contains": "ok"}},
             {"id": "slow", "query": "q", "metadata": {"calls": [call("slow", seconds=600)]},
              "expect": {"contains": "ok"}},
             {"id": "fine", "query": "q", "metadata": {"calls": [call("echo", text="hi")]},
              "expect": {"contains": "ok hi"}}]
    tag = f"tag-{uuid.uuid4().hex}"
    # The tiny server imports nothing, so the servers that do start are up well within 2 s under load.
    entry = {"command": ["python", str(TINY), tag], "start_timeout": 2, "timeout": 10}
    path, _ = suite(tmp_path, cases, entry=entry, initial_env={"count": 0})
    done, report = run(path, "--timeout", "120")
    assert done.returncode == 2, done.stdout + done.stderr
    assert_clean(done, tmp_path, tag)
    runs = runs_of(report)
    assert runs["hangs"]["status"] == "error" and runs["hangs"]["trace"]["agent_error"] is None
    assert runs["hangs"]["error"] == f"MCP server {TINY} did not start within start_timeout 2s"
    assert runs["slow"]["status"] == "error" and runs["slow"]["trace"]["agent_error"] is None
    assert runs["slow"]["error"] == f"MCP server {TINY} did not answer tools/call slow within timeout 10s"
    assert runs["fine"]["status"] == "passed"
    # A server's start is not the agent's time: the hung start left no latency on its run.
    assert runs["hangs"]["trace"]["latency_s"] == 0.0
    assert (report["summary"]["runs"], report["summary"]["runs_errored"]) == (1, 2)


def test_timeout_settings_are_checked(tmp_path: Path) -> None:
    for value in (0, -1, True, "30", 1e9):
        entry = {"command": ["python", str(SERVER)], "timeout": value, "start_timeout": value}
        path, _ = suite(tmp_path / str(value), [{"id": "c", "query": "q", "expect": {"contains": "x"}}],
                        entry=entry)
        done = cli("validate", "--cases", path)
        assert done.returncode == 2, (value, done.stdout, done.stderr)
        assert_clean(done)
        assert "suite.tools[0].mcp.timeout" in done.stderr and "suite.tools[0].mcp.start_timeout" in done.stderr


@pytest.fixture
def status_server():
    with http_mcp_server(FIXTURES / "status_server.py", "{port}") as url:
        yield url


REFUSALS = {"expired": 401, "forbidden": 403, "missing": 404, "broken": 500, "unavailable": 503}


def test_http_refusals_are_the_server_s_fault_and_json_rpc_errors_are_tool_errors(tmp_path: Path,
                                                                                   status_server: str) -> None:
    cases = [{"id": name, "query": "q", "metadata": {"calls": [call(f"status__{name}")]},
              "expect": {"contains": "ok"}}
             for name in ("fine", "refuses", "invalid", *REFUSALS)]
    path, _ = suite(tmp_path, cases, entry={"url": status_server, "name": "status"})
    done, report = run(path, "--concurrency", "1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert_clean(done, tmp_path, secrets=(SECRET, "sk-status-server-token-0123456789"))  # the server's, quoted
    runs = runs_of(report)
    assert runs["fine"]["status"] == "passed" and runs["fine"]["trace"]["final_answer"] == "ok fine"
    for name in ("refuses", "invalid"):  # a JSON-RPC error in a 200 or 400 body: the agent sees it
        assert runs[name]["status"] == "passed", name
        assert runs[name]["trace"]["steps"][0]["error"].startswith("MCPError: "), name
    for name, status in REFUSALS.items():
        assert runs[name]["status"] == "error", name
        assert runs[name]["error"] == f"MCP server status answered HTTP {status} to tools/call {name}"
        assert runs[name]["trace"]["agent_error"] is None



@pytest.fixture
def hostile_http():
    with http_mcp_server(SERVER, "--http", "{port}") as url:
        yield url


def test_an_http_result_over_64_mib_is_the_run_s_error_and_the_session_goes_on(tmp_path: Path,
                                                                               hostile_http: str) -> None:
    # A real `mcp` server over streamable HTTP (its results come as server-sent events): 65 MiB is over
    # the limit; 2 MiB is not (it is over the mcp client's own 1 MiB default for one event).
    cases = [{"id": "huge", "query": "q", "metadata": {"calls": [call("hostile__huge")]},
              "expect": {"contains": "ok"}},
             {"id": "big", "query": "q", "metadata": {"calls": [call("hostile__huge", mib=2)]},
              "expect": {"contains": "ok xxx"}},
             {"id": "after", "query": "q", "metadata": {"calls": [call("hostile__echo", text="hi")]},
              "expect": {"contains": "ok hi"}}]
    path, _ = suite(tmp_path, cases, entry={"url": hostile_http, "name": "hostile"})
    done, report = run(path, "--concurrency", "1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert_clean(done, tmp_path)
    runs = runs_of(report)
    assert runs["huge"]["status"] == "error" and runs["huge"]["trace"]["agent_error"] is None
    assert runs["huge"]["error"] == "MCP server hostile sent a message over the 64 MiB limit during tools/call huge"
    assert runs["big"]["status"] == "passed"
    assert len(runs["big"]["trace"]["final_answer"]) == len("ok ") + 2 * 2**20
    assert runs["after"]["status"] == "passed"  # the shared session outlives a cut answer
    assert (report["summary"]["runs"], report["summary"]["runs_errored"]) == (2, 1)


def test_an_http_gzip_bomb_is_cut_in_bounded_memory(tmp_path: Path, status_server: str) -> None:
    cases = [{"id": name, "query": "q", "metadata": {"calls": [call(f"status__{name}")]},
              "expect": {"contains": "ok"}} for name in ("bomb", "fine")]
    path, _ = suite(tmp_path, cases, entry={"url": status_server, "name": "status"})
    measured = run_measured([CLI, "run", "--cases", str(path), "--output-dir", str(tmp_path / "out"), "--no-html",
                             "--concurrency", "1"], env=clean_env(OPENAI_API_KEY=SECRET))
    assert measured.done.returncode == 2, measured.done.stdout + measured.done.stderr
    assert_clean(measured.done, tmp_path)
    assert measured.max_rss_bytes < 2**30, measured.max_rss_bytes  # loose: the bomb inflates to 1 GiB
    runs = runs_of(orjson.loads(next((tmp_path / "out").glob("*.json")).read_bytes()))
    assert runs["bomb"]["status"] == "error"
    assert runs["bomb"]["error"] == "MCP server status sent a message over the 64 MiB limit during tools/call bomb"
    assert runs["fine"]["status"] == "passed"
