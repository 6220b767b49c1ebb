"""The pairs -> train-rm -> score -> serve verbs, as a user runs them."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchrm.cli import main
from orchrm.cli.reward_model import read_score_requests
from orchrm.errors import ConfigError
from synthetic_pairs import plan_json, question
from synthetic_traces import write_run


def orchrm(*args, env=None):
    return subprocess.run([sys.executable, "-m", "orchrm", *args], capture_output=True, text=True, timeout=600, env=env)


def _error_line(result):
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr.strip().splitlines()[0]


def test_pairs_then_train_then_score(tmp_path):
    run = write_run(tmp_path / "run", questions=12)
    out = orchrm("pairs", str(run), "--out", str(tmp_path / "pairs"), "--val-fraction", "0.25")
    assert out.returncode == 0, out.stderr
    assert "correct-over-incorrect" in out.stdout and "artifact" in out.stdout
    stats = json.loads((tmp_path / "pairs" / "stats.json").read_text())
    assert stats["questions"] == 12 and stats["train_questions"] + stats["val_questions"] == 12
    train_rows = (tmp_path / "pairs" / "train.jsonl").read_text().splitlines()
    assert {"prompt", "chosen", "rejected", "source", "question_id"} <= set(json.loads(train_rows[0]))

    out = orchrm(
        "train-rm", str(tmp_path / "pairs"), "--out", str(tmp_path / "rm"), "--epochs", "1", "--max-length", "64"
    )
    assert out.returncode == 0, out.stderr
    assert "held-out pairwise accuracy" in out.stdout
    card = json.loads((tmp_path / "rm" / "orchrm.json").read_text())
    assert card["metrics"]["train_pairs"] == len(train_rows)
    assert "\r" not in out.stderr  # no tqdm bar in a log: progress comes as lines

    out = orchrm(
        "train-rm",
        str(tmp_path / "pairs"),
        "--out",
        str(tmp_path / "rm2"),
        "--epochs",
        "1",
        "--max-length",
        "64",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["out"] == str(tmp_path / "rm2") and [e["epoch"] for e in result["epochs"]] == [1]
    steps = [json.loads(x) for x in out.stderr.splitlines() if x.startswith("{") and "train-rm steps" in x]
    assert steps and steps[-1]["finished"] and steps[-1]["done"] == steps[-1]["total"] > 0

    requests = tmp_path / "plans.jsonl"
    requests.write_text(
        json.dumps({"question": "q1?", "plans": [json.loads(plan_json("good", 1)), "raw text plan"]}) + "\n"
    )
    out = orchrm("score", str(requests), "--rm", str(tmp_path / "rm"))
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout)
    assert isinstance(row["scores"][0], float) and row["errors"][0] is None
    assert row["scores"][1] is None and row["errors"][1].startswith("no valid plan (parse)")  # text with no plan


def test_bad_inputs_are_one_line(tmp_path):
    (tmp_path / "pairs").mkdir()
    (tmp_path / "pairs" / "train.jsonl").write_text('{"prompt": "p", "chosen": "c"}\n')
    line = _error_line(orchrm("train-rm", str(tmp_path / "pairs"), "--out", str(tmp_path / "rm")))
    assert "no manifest.json" in line and "orchrm pairs" in line  # a hand-made folder cannot be verified
    (tmp_path / "x.jsonl").write_text('{"question": "q", "plans": ["p"]}\n')
    line = _error_line(orchrm("score", str(tmp_path / "x.jsonl"), "--rm", str(tmp_path)))
    assert "not an orchrm reward model" in line
    line = _error_line(orchrm("train-rm", str(tmp_path / "pairs"), "--out", str(tmp_path / "rm"), "--margin", "oops"))
    assert "SOURCE=NUMBER" in line
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "traces.jsonl").write_text('{"version": 99}\n')
    line = _error_line(orchrm("pairs", str(tmp_path / "run"), "--out", str(tmp_path / "p2")))
    assert "traces.jsonl:1" in line and "version 99" in line


def test_serve_answers_real_requests(rm_dir):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "RM_TOKEN": "tok"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "orchrm",
            "serve",
            "--rm",
            str(rm_dir),
            "--port",
            str(port),
            "--token-env",
            "RM_TOKEN",
            "--torch-threads",
            "1",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/health").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        body = {
            "items": [
                {"question": question(3), "plan": plan_json("good", 3)},
                {"question": question(3), "plan": plan_json("bad", 3)},
            ]
        }
        r = httpx.post(f"{url}/score", json=body, headers={"Authorization": "Bearer tok"}, timeout=30)
        assert r.status_code == 200, r.text
        good, bad = r.json()["scores"]
        assert good > bad
        assert httpx.post(f"{url}/score", json=body).status_code == 401
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(20)


# ---- hostile request files: one line on stderr, exit 1, --out untouched, no model needed ---------------


def _in_process_error(capsys, *argv):
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("error:")
    return err


@pytest.mark.parametrize(
    "content, says",
    [
        (b"", "holds no requests"),
        (b"\n  \n", "holds no requests"),
        (b'{"question": "q", "plans": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "depth"),
        (b'{"question": "q", "plans": [' + b"9" * 5000 + b"]}", "digits"),
        (b'{"question": "q\\ud800", "plans": ["p"]}', "surrogate"),
        (b'{"question": "\xff\xfe", "plans": ["p"]}', "encoding"),
        (b'{"question": "q", "plans": [NaN]}', "non_finite"),
        (b'{"question": "q", "plans": [5]}', "plans.0"),
        (b'{"question": "q", "plans": [null]}', "plans.0"),
        (b'{"question": "q", "plans": ["p", true]}', "plans.1"),
        (b'{"question": "", "plans": ["p"]}', "question"),
    ],
    ids=[
        "empty",
        "blank",
        "deep",
        "digits",
        "surrogate",
        "not-utf8",
        "nan",
        "int-plan",
        "null-plan",
        "bool-plan",
        "no-question",
    ],
)
def test_score_refuses_hostile_files_in_one_line(tmp_path, capsys, content, says):
    # main: tracebacks for all but the empty file, which exited 0 and emptied --out.
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_bytes(content)
    out.write_text("earlier scores\n")
    err = _in_process_error(capsys, "score", str(src), "--rm", str(tmp_path / "no-model"), "--out", str(out))
    assert says in err and len(err.strip().splitlines()) == 1
    assert out.read_text() == "earlier scores\n"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                b'{"question": "q", "plans": [',
                b"]}",
                b"{",
                b"[",
                b"\n",
                b"\\ud800",
                b"\xff",
                b"9" * 120,
                b'"',
                b"NaN",
                b"null",
            ]
        )
        | st.binary(max_size=4),
        max_size=30,
    ).map(b"".join)
)
def test_any_request_file_reads_or_names_its_fault(tmp_path_factory, content):
    src = tmp_path_factory.mktemp("score") / "in.jsonl"
    src.write_bytes(content)
    try:
        rows = read_score_requests(src)
    except ConfigError as exc:
        assert "\n" not in str(exc)
    else:
        assert rows and all(isinstance(r["question"], str) for r in rows)
