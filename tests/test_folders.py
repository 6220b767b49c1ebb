"""Output folders say what they are: the stamp round-trips, and a bad or newer stamp is one precise error."""

import asyncio
import json

import pytest

from mas_fakes import make_task, replies, run_config, scripted_llm
from orchrm.errors import RunFileError
from orchrm.folders import LAYOUT, STAMP_FILE, folder_kind, read_stamp, require_kind, stamp_folder
from orchrm.mas.rollout import arollout
from orchrm.pairs.rows import read_rows, write_pairs_dir
from orchrm.version import __version__


def test_a_stamp_round_trips(tmp_path):
    stamp_folder(tmp_path, "rollout")
    stamp = read_stamp(tmp_path)
    assert (stamp.kind, stamp.version, stamp.orchrm) == ("rollout", LAYOUT, __version__)
    assert folder_kind(tmp_path) == "rollout"


def test_an_unstamped_folder_or_a_file_has_no_kind(tmp_path):
    assert folder_kind(tmp_path) is None and read_stamp(tmp_path) is None
    (tmp_path / "traces.jsonl").write_text("")
    assert folder_kind(tmp_path / "traces.jsonl") is None


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        '{"kind": "rollout"}',
        '{"kind": "spreadsheet", "version": 1, "orchrm": "0.1.0"}',
        '{"kind": "rollout", "version": 1, "orchrm": "0.1.0", "extra": 1}',
        "[" * 100_000,
        '{"kind": "rollout", "version": ' + "9" * 5000 + "}",
    ],
)
def test_a_bad_stamp_is_one_error_naming_the_file(tmp_path, text):
    (tmp_path / STAMP_FILE).write_text(text)
    with pytest.raises(RunFileError, match=STAMP_FILE):
        folder_kind(tmp_path)


def test_a_newer_layout_is_refused_not_misread(tmp_path):
    (tmp_path / STAMP_FILE).write_text(json.dumps({"kind": "bon", "version": LAYOUT + 1, "orchrm": "9.0.0"}))
    with pytest.raises(RunFileError, match="layout") as exc:
        read_stamp(tmp_path)
    assert "upgrade" in exc.value.hint


def test_require_kind_refuses_another_kind_and_passes_an_unstamped_folder(tmp_path):
    require_kind(tmp_path, "rollout")
    stamp_folder(tmp_path, "train-orchestrator")
    require_kind(tmp_path, "train-orchestrator")
    with pytest.raises(RunFileError, match="train-orchestrator folder"):
        require_kind(tmp_path, "rollout", "import")


def test_a_pairs_folder_is_stamped_and_still_reads(tmp_path):
    write_pairs_dir(tmp_path / "pairs", [], [], read_stamp_model())
    assert folder_kind(tmp_path / "pairs") == "pairs"
    assert read_rows(tmp_path / "pairs" / "train.jsonl") == []


def read_stamp_model():
    from orchrm.pairs.builder import PairStats

    return PairStats()


def test_a_rollout_stamps_its_folder_and_refuses_another_kinds(tmp_path):
    task = make_task(tmp_path)
    asyncio.run(arollout(task, scripted_llm(replies()), tmp_path / "run", run_config()))
    assert folder_kind(tmp_path / "run") == "rollout"
    (tmp_path / "other").mkdir()
    stamp_folder(tmp_path / "other", "pairs")
    with pytest.raises(RunFileError, match="pairs folder"):
        asyncio.run(arollout(task, scripted_llm(replies()), tmp_path / "other", run_config()))
    assert not (tmp_path / "other" / "run.json").exists()


def test_the_viewer_reads_a_folder_by_its_stamp(tmp_path):
    import shutil

    from orchrm.view.runs import load_runs

    asyncio.run(arollout(make_task(tmp_path), scripted_llm(replies()), tmp_path / "run", run_config()))
    for kind in ("counterfactual", "pairs"):
        (tmp_path / kind).mkdir()
        shutil.copy(tmp_path / "run" / "traces.jsonl", tmp_path / kind / "traces.jsonl")
        stamp_folder(tmp_path / kind, kind)
    assert [r.kind for r in load_runs([tmp_path / "run", tmp_path / "counterfactual"])] == ["rollout", "rollout"]
    with pytest.raises(RunFileError, match="a pairs folder holds no runs"):
        load_runs([tmp_path / "pairs"])
