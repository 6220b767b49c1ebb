"""`orchrm pairs` on damaged or hostile run folders: one line on stderr, never a traceback."""

import json

import pytest

from orchrm.cli import main
from orchrm.mas.traces import TraceWriter
from synthetic_traces import trace, write_run


def _run(tmp_path, capsys, run):
    with pytest.raises(SystemExit) as exc:
        main(["pairs", str(run), "--out", str(tmp_path / "pairs")])
    err = capsys.readouterr().err
    return exc.value.code, err


def _good_line(tmp_path):
    return (write_run(tmp_path / "good", questions=1) / "traces.jsonl").read_bytes().splitlines()[0]


@pytest.mark.parametrize(
    "line, says",
    [
        (b'{"task": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "depth"),
        (b'{"task": ' + b"9" * 5000 + b"}", "digits"),
        (b"\xff\xfe not utf-8", "encoding"),
        (None, "surrogate"),  # a good trace whose question holds an escaped lone surrogate
    ],
    ids=["deep", "digits", "not-utf8", "surrogate"],
)
def test_hostile_trace_lines_are_one_line_errors(tmp_path, capsys, line, says):
    # main: RecursionError, ValueError and UnicodeEncodeError tracebacks.
    run = write_run(tmp_path / "run", questions=2)
    if line is None:
        record = json.loads(_good_line(tmp_path))
        line = json.dumps({**record, "question": "q \ud800"}).encode()
    with open(run / "traces.jsonl", "ab") as fh:
        fh.write(line + b"\n")
    code, err = _run(tmp_path, capsys, run)
    assert code == 1 and "Traceback" not in err
    assert err.startswith("error:") and "traces.jsonl:7" in err and says in err


def test_hostile_plan_texts_in_traces_are_rendered_not_raised(tmp_path, capsys):
    run = write_run(tmp_path / "run", questions=3)
    with TraceWriter(run / "traces.jsonl") as w:
        for i, text in enumerate(
            ['{"agents": ' + "[" * 50_000, '{"answer": ' + "9" * 5000 + "}", '{"agents": "\\ud800"}']
        ):
            w.write(trace("q0", 10 + i, text, invalid=True))
    with pytest.raises(SystemExit) as exc:
        main(["pairs", str(run), "--out", str(tmp_path / "pairs")])
    assert exc.value.code in (0, None), capsys.readouterr().err
    assert (tmp_path / "pairs" / "train.jsonl").exists()
