"""Committed traces are stored gzipped by bench/traces.py and read back as the same traces (issue #26, item 4)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from orchrm.mas.traces import locate_traces

ROOT = Path(__file__).parent.parent


def load_traces_bench():
    spec = importlib.util.spec_from_file_location("bench_traces", ROOT / "bench" / "traces.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "bench"))  # it imports its sibling `files`, as a bench script run from bench/ does
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return module


def test_pack_is_deterministic_and_unpack_restores_the_bytes(tmp_path, capsys):
    bench = load_traces_bench()
    run = tmp_path / "run"
    run.mkdir()
    data = b'{"version": 1}\n' * 50
    (run / "traces.jsonl").write_bytes(data)
    bench.main(["pack", str(tmp_path)])
    packed = (run / "traces.jsonl.gz").read_bytes()
    assert not (run / "traces.jsonl").exists() and locate_traces(run).name == "traces.jsonl.gz"
    assert "packed 1 file(s)" in capsys.readouterr().err
    bench.main(["pack", str(tmp_path)])  # nothing left to pack: unchanged
    assert (run / "traces.jsonl.gz").read_bytes() == packed
    bench.main(["unpack", str(run / "traces.jsonl.gz")])
    assert (run / "traces.jsonl").read_bytes() == data and not (run / "traces.jsonl.gz").exists()
    bench.main(["pack", str(run)])
    assert (run / "traces.jsonl.gz").read_bytes() == packed  # the same file packs to the same bytes


def test_unpack_refuses_to_overwrite_an_unpacked_file(tmp_path):
    bench = load_traces_bench()
    (tmp_path / "traces.jsonl").write_bytes(b"x\n")
    (tmp_path / "traces.jsonl.gz").write_bytes(bench.pack_bytes(b"y\n"))
    with pytest.raises(SystemExit, match="both exist"):
        bench.main(["unpack", str(tmp_path)])
    assert (tmp_path / "traces.jsonl").read_bytes() == b"x\n"


def test_committed_results_hold_traces_packed():
    files = subprocess.run(
        ["git", "ls-files", "bench/results"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert [f for f in files if f.endswith("/traces.jsonl")] == []
    assert len([f for f in files if f.endswith("/traces.jsonl.gz")]) >= 20
