"""Every command's --help shows each option's help text as written: Rich markup never swallows a
bracketed word such as the `[ray]` of an install hint (section 20: every install hint names the
distribution with its extra). In-process."""
from __future__ import annotations

import re

import typer

from agent_eval.cli import app
from tests.builders import clean_env
from tests.cli import run_cli


def _shown(text: str) -> str:
    """Help text as Rich renders it: `\\[` is an escaped bracket; whitespace folded."""
    return " ".join(text.replace("\\[", "[").split())


def test_each_option_s_bracketed_words_survive_in_help() -> None:
    group = typer.main.get_command(app)
    checked = 0
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        out = run_cli(name, "--help", env={**clean_env(), "COLUMNS": "1000"})
        assert out.exit_code == 0, out.stderr
        # Strip the panel's borders, so a help text reads as one line.
        shown = " ".join(line.strip(" │╭╮╰╯─") for line in out.stdout.splitlines())
        shown = " ".join(shown.split())
        for param in command.params:
            help_text = getattr(param, "help", None) or ""
            for word in re.findall(r"\S*\[[^\]\s]*\]\S*", help_text):
                assert _shown(word) in shown, f"{name} --help lost {word!r} of {param.name}'s help"
                checked += 1
    assert checked >= 3  # `[ray]` of run's --ray, `[=MAX_DROP]` of --gate, `[:BURST]` of --rate-limit at least


def test_run_help_names_the_ray_extra() -> None:
    out = run_cli("run", "--help", env={**clean_env(), "COLUMNS": "1000"})
    assert "pip install 'agent-eval-trials[ray]'" in out.stdout
