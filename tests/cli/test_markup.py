"""Issue #39 item 2: errors, warnings, progress and results print their text as it is, never as Rich markup.

A path, a JSON fragment or a model's output holding `[/x]` used to raise `MarkupError` (a traceback instead of
the message); `[x]`, `[bold]` or `[object | str, ...]` disappeared from it. Every case below asserts exit code 1,
no traceback, and the text verbatim, every bracket kept.
"""

import importlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from orchrm.cli import main
from orchrm.cli.progress import Mode, Reporter
from orchrm.cli.say import error, labelled, say, styled, text, warn
from orchrm.cli.show import render_trace, runs_table
from orchrm.errors import OrchrmError
from orchrm.mas.traces import PlanErrorRecord, TraceWriter
from synthetic_traces import plan_text, trace

app_module = importlib.import_module("orchrm.cli.app")  # `orchrm.cli.app` the attribute is the Typer app

#: Text Rich would read as markup (or emoji codes): closing tags, style tags, JSON brackets, model output.
HOSTILE = [
    "[/x]",
    "[bold]",
    "[red]x[/red]",
    '{"plans": [object | str, ...]}',
    "[/INST] ]]][[",
    "\\[bold]",
    "[link=http://x]y[/link]",
    ":thumbs_up: [/]",
]
IDS = [f"s{i}" for i in range(len(HOSTILE))]


def _fails_with(capsys, argv):
    """Run the CLI in process; the message line(s) on stderr of a clean exit 1 (a MarkupError would raise)."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith("error: "), err
    return err


@pytest.mark.parametrize("s", HOSTILE, ids=IDS)
def test_score_missing_file_named_with_markup(tmp_path, capsys, s):
    missing = tmp_path / "dir" / f"nope{s}.jsonl"
    err = _fails_with(capsys, ["score", str(missing), "--rm", "X"])
    assert f"cannot read {missing}: " in err


@pytest.mark.parametrize("s", HOSTILE, ids=IDS)
def test_show_missing_run_named_with_markup(tmp_path, capsys, monkeypatch, s):
    monkeypatch.chdir(tmp_path)
    err = _fails_with(capsys, ["show", f"runs/a{s}b"])
    assert f"no traces at {Path(f'runs/a{s}b')} " in err  # Path folds `//`: that is not markup


@pytest.mark.parametrize("s", HOSTILE, ids=IDS)
def test_score_bad_request_line_keeps_the_expected_shape(tmp_path, capsys, s):
    requests = tmp_path / f"req{s}.jsonl"  # `/` in s makes folders
    requests.parent.mkdir(parents=True, exist_ok=True)
    requests.write_text(json.dumps({"question": s, "plans": s}) + "\n")
    err = _fails_with(capsys, ["score", str(requests), "--rm", "X"])
    assert f'{requests}:1: expected {{"question": str, "plans": [object | str, ...]}}: ' in err


@pytest.mark.parametrize("s", HOSTILE, ids=IDS)
def test_error_printer_prints_message_hint_and_detail_verbatim(monkeypatch, capsys, s):
    def failing(**kw):
        raise OrchrmError(f"bad {s} here", hint=f"hint {s}", detail=f"detail {s}\nline 2 {s}")

    monkeypatch.setattr(app_module, "app", failing)
    err = _fails_with(capsys, ["anything"])
    assert err == f"error: bad {s} here (hint {s})\ndetail {s}\nline 2 {s}\n"


def test_the_reported_command_is_one_line_in_a_real_process(tmp_path):
    """The issue's repro, as a user runs it: no `rich.errors.MarkupError` traceback."""
    out = subprocess.run(
        [sys.executable, "-m", "orchrm", "score", "runs/nope[/x].jsonl", "--rm", "rm/"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr.splitlines() == ["error: cannot read runs/nope[/x].jsonl: No such file or directory"]


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=400, highlight=False), buf


@pytest.mark.parametrize("s", HOSTILE, ids=IDS)
def test_printers_keep_text_verbatim(s):
    console, buf = _console()
    warn(console, f"w {s}")
    error(console, f"e {s}", f"d {s}")
    say(console, f"said {s}", "dim")
    console.print(styled((s, "bold"), f": {s}"))
    console.print(labelled(s, s, "red"), text(s, "yellow"))
    assert buf.getvalue().splitlines() == [
        f"warning: w {s}",
        f"error: e {s}",
        f"d {s}",
        f"said {s}",
        f"{s}: {s}",
        f"{s} {s} {s}",
    ]


def test_printers_keep_their_styles():
    buf = io.StringIO()
    console = Console(file=buf, width=200, force_terminal=True, color_system="standard")
    warn(console, "[red]x[/red]")
    assert "\x1b[33mwarning:\x1b[0m [red]x[/red]" in buf.getvalue()


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("mode", [Mode.bars, Mode.lines, Mode.json])
@pytest.mark.parametrize("s", HOSTILE, ids=IDS)
def test_progress_descriptions_info_and_notes_verbatim(mode, s):
    stream = Tty() if mode == Mode.bars else io.StringIO()
    with Reporter(mode, interval_s=60, stream=stream) as progress:
        progress.update(f"st{s}", done=1, total=1, info=f"i{s}")
        progress.note(f"n {s}")
    out = stream.getvalue()
    if mode == Mode.json:
        records = [json.loads(line) for line in out.splitlines()]
        assert {"stage": f"st{s}", "info": f"i{s}"}.items() <= records[0].items() and records[1]["note"] == f"n {s}"
    else:
        assert f"st{s}" in out and f"i{s}" in out and f"n {s}" in out, out


@pytest.mark.parametrize("s", HOSTILE, ids=IDS)
def test_show_renders_model_text_and_plan_errors_verbatim(tmp_path, capsys, monkeypatch, s):
    invalid = trace(f"q{s}", 0, f"plan {s}", invalid=True).model_copy(
        update={"plan_error": PlanErrorRecord(rule=f"r{s}", message=f"model said {s}")}
    )
    valid = trace(f"q{s}", 1, plan_text("cot", question=s), correct=True, answer=f"a{s}")
    console, buf = _console()
    console.print(runs_table([invalid, valid]))
    console.print(render_trace(invalid), render_trace(valid))
    shown = buf.getvalue()
    for needle in (f"q{s}", f"r{s}", f"a{s}", f"invalid plan — r{s}: model said {s}", f"plan {s}", f"step 0 of {s}"):
        assert needle in shown, needle

    with TraceWriter(tmp_path / "run" / "traces.jsonl") as w:
        w.write(invalid)
    monkeypatch.setenv("COLUMNS", "400")
    with pytest.raises(SystemExit) as exited:
        main(["show", str(tmp_path / "run"), "--index", "0"])
    assert exited.value.code == 0
    assert f"invalid plan — r{s}: model said {s}" in capsys.readouterr().out
    err = _fails_with(capsys, ["show", str(tmp_path / "run"), "--question", s])
    assert f"no trace for question {s!r}" in err
