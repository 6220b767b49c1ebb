"""`--config FILE` (YAML, JSON or TOML) fills any verb's options; the command line wins; a bad file is one usage
error."""

import json
from pathlib import Path
from typing import Annotated

import pytest
import typer
from test_demo import opened  # noqa: F401  (the fixture: demo stops before any model loads)
from typer.testing import CliRunner

from orchrm.cli.app import main
from orchrm.cli.panels import PanelCommand, with_config


def toy(
    task: Annotated[str, typer.Option()],
    n_plans: Annotated[int, typer.Option()] = 4,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    base_url: Annotated[str | None, typer.Option("--base-url", "--orchestrator-base-url")] = None,
) -> None:
    print(json.dumps({"task": task, "n_plans": n_plans, "as_json": as_json, "base_url": base_url}))


def run(tmp_path: Path, name: str, text: str, *argv: str):
    (tmp_path / name).write_text(text)
    app = typer.Typer(add_completion=False)
    app.command("toy", cls=PanelCommand)(with_config(toy))
    return CliRunner().invoke(app, ["--config", str(tmp_path / name), *argv])


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("c.yaml", "task: chain_sum\nn-plans: 7\njson: true\norchestrator-base-url: http://a/v1\n"),
        ("c.json", '{"task": "chain_sum", "n_plans": 7, "as_json": true, "base_url": "http://a/v1"}'),
        ("c.toml", 'task = "chain_sum"\nn_plans = 7\njson = true\norchestrator_base_url = "http://a/v1"\n'),
    ],
)
def test_each_format_fills_the_options_by_any_of_their_names(tmp_path, name, text):
    result = run(tmp_path, name, text)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"task": "chain_sum", "n_plans": 7, "as_json": True, "base_url": "http://a/v1"}


def test_the_command_line_wins_and_values_are_checked_as_flags_are(tmp_path):
    result = run(tmp_path, "c.yaml", "task: chain_sum\nn_plans: 7\n", "--n-plans", "2")
    assert json.loads(result.output)["n_plans"] == 2
    bad = run(tmp_path, "c.yaml", "task: chain_sum\nn_plans: many\n")
    assert bad.exit_code == 2 and "Invalid value for '--n-plans'" in bad.output


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("c.yaml", "task: x\nn_plan: 3\n", "no option n_plan"),
        ("c.yaml", "- a\n- b\n", "must hold a mapping"),
        ("c.yaml", "task: [unclosed\n", "cannot read"),
        ("c.json", '{"task": ', "cannot read"),
        ("c.toml", "task = \n", "cannot read"),
        ("c.ini", "task = x\n", "use a .yaml"),
    ],
)
def test_a_bad_file_is_a_usage_error_naming_it(tmp_path, name, text, says):
    result = run(tmp_path, name, text)
    assert result.exit_code == 2 and says in result.output and "Traceback" not in result.output


def test_a_real_verb_reads_it(opened, tmp_path, capsys):  # noqa: F811
    (tmp_path / "demo.yaml").write_text("orchestrator-model: smollm2-135m\nagent_model: qwen2.5-coder-0.5b\n")
    with pytest.raises(SystemExit):
        main(["demo", "--config", str(tmp_path / "demo.yaml"), "--out", str(tmp_path / "d")])
    [(_, model, _, options)] = opened
    assert (model, options["agent_model"]) == ("smollm2-135m", "qwen2.5-coder-0.5b")


def test_every_verb_with_options_takes_a_config_file():
    from orchrm.cli.app import VERBS, load_verb

    verbs = [load_verb(v) for v in VERBS]
    without = [
        c.name for c in verbs if not hasattr(c, "commands") and "--config" not in {o for p in c.params for o in p.opts}
    ]
    assert without == []
