"""A pairs folder is one unit: killed writes leave the old folder or the new one, and mixed folders are refused."""

import json
import os
import shutil

import pytest

from orchrm import atomic
from orchrm.cli.pairs import pairs as pairs_command
from orchrm.mas.traces import read_traces
from orchrm.pairs import PairConfig, PairFileError, build_pairs, read_pairs_dir, write_pairs_dir
from orchrm.pairs.rows import STATS_FILE, read_pair_stats
from synthetic_traces import plan_text, trace, write_run


class Killed(BaseException):
    """Stands in for SIGKILL: not an Exception, so nothing on the way up handles it."""


def _kill_before_step(monkeypatch, k):
    """Make the k-th filesystem step (rename, replace, exchange, removal) of this process die before it acts."""
    calls = [0]

    def dying(fn):
        def wrapper(*a, **kw):
            calls[0] += 1
            if calls[0] == k:
                raise Killed
            return fn(*a, **kw)

        return wrapper

    for owner, name in ((os, "rename"), (os, "replace"), (shutil, "rmtree"), (atomic, "_exchange")):
        monkeypatch.setattr(owner, name, dying(getattr(owner, name)))
    return calls


def _run_pairs(run, out):
    pairs_command(runs=[run], out=out, val_fraction=0.5, seed=0)


def test_pairs_killed_at_any_step_leaves_the_old_folder_or_the_new(tmp_path, monkeypatch, capsys):
    old_run, new_run = write_run(tmp_path / "old", questions=6), write_run(tmp_path / "new", questions=12)
    cfg = PairConfig(val_fraction=0.5, seed=0)
    old, new = (build_pairs(read_traces(r / "traces.jsonl"), cfg) for r in (old_run, new_run))
    assert old.val and new.val and (old.train, old.val) != (new.train, new.val)
    seen = set()
    for k in range(1, 20):
        out = tmp_path / f"k{k}" / "pairs"
        _run_pairs(old_run, out)
        with monkeypatch.context() as m:
            calls = _kill_before_step(m, k)
            try:
                _run_pairs(new_run, out)
                finished = True
            except Killed:
                finished = False
        got = read_pairs_dir(out)
        assert got in ((old.train, old.val), (new.train, new.val)), f"killed before step {k}: a mixed folder loads"
        seen.add("new" if got == (new.train, new.val) else "old")
        if finished:
            break
    else:
        pytest.fail(f"never finished ({calls[0]} steps)")
    assert seen == {"old", "new"}


def _folder(tmp_path):
    out = build_pairs(
        [
            trace(q, i, plan_text(kind), correct=i == 0)
            for q in ("q1", "q2", "q3")
            for i, kind in enumerate(("cot", "debate"))
        ],
        PairConfig(val_fraction=0.5),
    )
    write_pairs_dir(tmp_path / "pairs", out.train, out.val, out.stats)
    return tmp_path / "pairs", out


def test_a_folder_whose_files_disagree_with_its_manifest_is_refused(tmp_path):
    folder, out = _folder(tmp_path)
    assert read_pairs_dir(folder) == (out.train, out.val)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["files"]["train.jsonl"]["rows"] == len(out.train)

    val = (folder / "val.jsonl").read_text()
    (folder / "val.jsonl").write_text(val + (folder / "train.jsonl").read_text())  # val questions that train on
    with pytest.raises(PairFileError, match="val.jsonl does not match its manifest.json"):
        read_pairs_dir(folder)
    (folder / "val.jsonl").write_text(val)
    (folder / "stats.json").unlink()
    with pytest.raises(PairFileError, match="stats.json is missing"):
        read_pairs_dir(folder)
    (folder / "manifest.json").unlink()
    with pytest.raises(PairFileError, match="no manifest.json"):
        read_pairs_dir(folder)
    (folder / "manifest.json").write_text("{}")
    with pytest.raises(PairFileError, match="not a pairs manifest"):
        read_pairs_dir(folder)


def test_a_damaged_stats_file_is_one_line_naming_it_and_why(tmp_path):
    path = tmp_path / STATS_FILE
    with pytest.raises(PairFileError, match=r"stats.json: not a pairs stats file \(\[Errno 2\]"):
        read_pair_stats(tmp_path)
    path.write_text("[]")
    with pytest.raises(PairFileError) as caught:
        read_pair_stats(tmp_path)
    assert (
        str(caught.value)
        == f"{path}: not a pairs stats file ((stats): Input should be a valid dictionary or instance of PairStats)"
    )
    path.write_text('{"traces": "x"}')
    with pytest.raises(PairFileError, match=r"\(traces: Input should be a valid integer"):
        read_pair_stats(tmp_path)
    path.write_text('{"traces": 3}')
    assert read_pair_stats(tmp_path).traces == 3
