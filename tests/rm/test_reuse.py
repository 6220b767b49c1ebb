"""A saved RM is reused only when trained on these pairs with these settings; a tampered one is refused, kept."""

import json
import shutil

import pytest

from orchrm.errors import ChecksumMismatch, ModelError
from orchrm.rm import RewardModel
from orchrm.rm.reuse import current_rm


@pytest.fixture
def folder(rm_dir, tmp_path):
    return shutil.copytree(rm_dir, tmp_path / "rm")


def test_the_same_pairs_and_settings_reuse_it_and_anything_else_does_not(folder):
    card = RewardModel.load(folder).card
    assert current_rm(folder, card.training_data_sha256, card.config) is not None
    assert current_rm(folder, "another hash", card.config) is None
    other = card.config.model_copy(update={"seed": card.config.seed + 1})
    assert current_rm(folder, card.training_data_sha256, other) is None
    moved = card.config.model_copy(update={"device": "cuda"})  # where it trained is not what it learned
    assert current_rm(folder, card.training_data_sha256, moved) is not None
    assert current_rm(folder.parent / "absent", "x", card.config) is None


def test_an_rm_from_an_older_orchrm_is_retrained_over(folder):
    card = RewardModel.load(folder).card
    raw = json.loads((folder / "orchrm.json").read_text())
    files = raw.pop("files")
    (folder / "orchrm.json").write_text(
        json.dumps({**raw, "card_version": 1, "weights_sha256": files["model.safetensors"]})
    )
    assert current_rm(folder, card.training_data_sha256, card.config) is None


def test_a_tampered_rm_is_refused_and_kept(folder):
    card = RewardModel.load(folder).card
    (folder / "vocab.txt").write_text("[PAD]\n")
    with pytest.raises(ChecksumMismatch):
        current_rm(folder, card.training_data_sha256, card.config)
    assert (folder / "vocab.txt").read_text() == "[PAD]\n"  # the evidence is still there
    (folder / "orchrm.json").unlink()
    with pytest.raises(ModelError, match="not an orchrm reward model"):
        current_rm(folder, card.training_data_sha256, card.config)
