"""Every verb's `--help` is readable at 80 columns: each option's names whole, no line past the edge."""

import os
import re
import subprocess
import sys

import click
import pytest
from typer.testing import CliRunner

from orchrm.cli.app import VERBS, app, load_verb

WIDTH = 80


def commands():
    """(argv path, click command) for every verb and every subcommand of a verb group."""
    for verb in VERBS:
        command = load_verb(verb)
        yield [verb.name], command
        subcommands = getattr(command, "commands", {})  # a typer group (typer's own click, not click.Group)
        yield from (([verb.name, name], sub) for name, sub in subcommands.items())


def names(command: click.Command) -> list[str]:
    """The option names `--help` shows (a renamed option's old flag is hidden on purpose)."""
    shown = [p for p in command.params if not getattr(p, "hidden", False)]
    return [n for p in shown for n in (*p.opts, *p.secondary_opts) if n.startswith("-")]


def help_text(path: list[str]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(WIDTH)}, terminal_width=WIDTH)
    assert result.exit_code == 0, result.output
    return result.output


def unreadable(text: str, command: click.Command) -> list[str]:
    """What a reader at 80 columns cannot read: names not shown whole, lines past the edge, cut words."""
    cut = [n for n in names(command) if not re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text)]
    wide = [line for line in text.splitlines() if len(line) > WIDTH]
    return cut + wide + re.findall(r"\S*…", text)


@pytest.mark.parametrize("path,command", list(commands()), ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_verb_help_is_whole_at_80_columns(path, command):
    text = help_text(path)
    assert unreadable(text, command) == []
    assert "--install-completion" not in text  # the top level offers no completion; a verb does not either


def test_top_level_help_at_80_columns():
    text = help_text([])
    assert [v.name for v in VERBS if v.name not in text] == []
    assert [line for line in text.splitlines() if len(line) > WIDTH] == [] and "…" not in text


def test_the_check_sees_a_cut_name():
    command = click.Command("x", params=[click.Option(["--orchestrator-base-url"])])
    cut = unreadable("  --orchestrator-b…  The server.", command)
    assert cut == ["--orchestrator-base-url", "--orchestrator-b…"]


def test_panels_group_options_common_first():
    text = help_text(["rollout"])
    sections = [line.rstrip(":") for line in text.splitlines() if re.fullmatch(r"[A-Z][\w ()-]*:", line)]
    assert sections[0] == "Options" and len(sections) >= 3, sections
    assert text.index("--task") < text.index("--orchestrator-base-url")


def test_console_script_help_at_80_columns():
    env = {**os.environ, "COLUMNS": str(WIDTH)}
    out = subprocess.run(
        [sys.executable, "-m", "orchrm", "rollout", "--help"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert unreadable(out.stdout, load_verb(next(v for v in VERBS if v.name == "rollout"))) == []
