"""`orchrm view` from the command line: a one-line error for a path that is no run, and a live server."""

import json
import subprocess
import sys
import urllib.request

from view_runs import BENCH_BON


def test_not_a_run_is_one_red_line(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "orchrm", "view", str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.splitlines()[0].startswith("error:") and "not a run folder" in out.stderr


def test_serves_the_runs_it_was_given(bon_dir):
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchrm", "view", str(bon_dir), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert "1 run loaded" in line and "serving http://127.0.0.1:" in line, proc.stderr.read() if not line else line
        url = line.split("serving ")[1].split()[0]
        with urllib.request.urlopen(url + "api/runs", timeout=10) as res:
            assert json.loads(res.read())[0]["questions"] == 4
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_bench_folder_is_there_for_the_load_test():
    assert BENCH_BON.is_dir()
