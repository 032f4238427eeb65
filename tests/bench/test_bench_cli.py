"""`agent-eval bench list` and `bench import`'s refusals: the registry's rows, the pinned package's checks,
a suite folder that already holds something."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import orjson
import pytest

from agent_eval.bench import BFCL
from agent_eval.bench.suite_folder import installed
from agent_eval.errors import ConfigError
from tests.cli import run_cli


def test_bench_list_names_each_benchmark_with_its_pin_licence_parts_and_cases() -> None:
    result = run_cli("bench", "list")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "bfcl" in out and "bfcl-eval==2026.3.23" in out and "Apache-2.0" in out
    for category in ("multi_turn_base (200)", "multi_turn_miss_func (200)", "multi_turn_miss_param (200)",
                     "multi_turn_long_context (200)"):
        assert category in out
    assert "800" in out


def test_an_existing_non_empty_out_folder_is_refused_and_left_alone(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    result = run_cli("bench", "import", "bfcl", "--out", tmp_path)
    assert result.exit_code == 2
    assert "not empty" in result.stderr and "Traceback" not in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["mine.txt"]


def test_an_unknown_category_or_benchmark_is_exit_2_with_the_closest_name(tmp_path: Path) -> None:
    result = run_cli("bench", "import", "bfcl", "--category", "multi_turn_bse", "--out", tmp_path / "s")
    assert result.exit_code == 2
    assert "Did you mean 'multi_turn_base'?" in result.stderr
    assert not (tmp_path / "s").exists()
    result = run_cli("bench", "import", "bfc", "--out", tmp_path / "s")
    assert result.exit_code == 2 and "Did you mean 'bfcl'?" in result.stderr


def test_a_missing_or_wrongly_pinned_package_names_the_exact_install_commands() -> None:
    commands = ("pip install --no-deps bfcl-eval==2026.3.23 && pip install 'agent-eval-trials[bench-bfcl]'")
    assert BFCL.install_commands() == commands
    with pytest.raises(ConfigError) as missing:
        installed(dataclasses.replace(BFCL, package="bfcl-eval-never-published"), "bfcl_eval")
    assert "is not installed" in str(missing.value)
    with pytest.raises(ConfigError) as pinned:
        installed(dataclasses.replace(BFCL, version="1999.1.1"), "bfcl_eval")
    assert "needs bfcl-eval==1999.1.1, but 2026.3.23 is installed" in str(pinned.value)
    assert "pip install --no-deps bfcl-eval==1999.1.1" in str(pinned.value)


def test_an_empty_out_folder_is_used_and_a_checkout_is_recorded_with_its_commit(tmp_path: Path) -> None:
    import shutil
    import subprocess

    from agent_eval.bench.bfcl import upstream as up
    from tests.cli import run_cli_process

    # A checkout of gorilla's berkeley-function-call-leaderboard/, made from the installed package's files.
    leaderboard = tmp_path / "gorilla" / "berkeley-function-call-leaderboard"
    shutil.copytree(up.locate(None).package_dir, leaderboard / "bfcl_eval",
                    ignore=shutil.ignore_patterns("__pycache__", "result", "score", ".file_locks"))
    for data in ("data/BFCL_v4_multi_turn_base.json", "data/possible_answer/BFCL_v4_multi_turn_base.json"):
        path = leaderboard / "bfcl_eval" / data  # the checkout's own data: its first 3 entries
        path.write_text("".join(path.read_text().splitlines(keepends=True)[:3]))
    git = ["git", "-C", str(tmp_path / "gorilla"), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = tmp_path / "suite"
    out.mkdir()  # an empty folder is fine
    # A fresh process: this one has imported bfcl_eval from site-packages already.
    result = run_cli_process("bench", "import", "bfcl", "--from", tmp_path / "gorilla", "--out", out,
                             "--category", "multi_turn_base")
    assert result.returncode == 0, result.stderr
    lock = orjson.loads((out / "bench.lock.json").read_bytes())
    assert lock["source"] == {"package": "bfcl-eval", "checkout": str(leaderboard.resolve()), "commit": commit}
    assert lock["counts"]["cases"] == 3  # what the checkout holds, not the installed package
    # Once a process has imported the installed bfcl_eval, a checkout is refused, naming both.
    __import__("bfcl_eval")
    with pytest.raises(ConfigError) as mixed:
        up.locate(tmp_path / "gorilla")
    assert "already imported from" in str(mixed.value) and "new process" in str(mixed.value)
    missing = run_cli("bench", "import", "bfcl", "--from", tmp_path, "--out", tmp_path / "other")
    assert missing.exit_code == 2 and "no bfcl_eval/ package found" in missing.stderr
