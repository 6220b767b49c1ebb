"""A model folder is vouched for file by file, and a save killed at any step leaves the old model or the new."""

import json
import os
import shutil

import pytest

from orchrm import atomic
from orchrm.errors import ChecksumMismatch, ModelError, OutdatedModel
from orchrm.folders import folder_kind
from orchrm.pairs import render_plan
from orchrm.rm import RewardModel


@pytest.fixture
def folder(rm_dir, tmp_path):
    return shutil.copytree(rm_dir, tmp_path / "rm")


def test_the_card_hashes_every_file_loading_reads(folder):
    card = json.loads((folder / "orchrm.json").read_text())
    assert card["card_version"] == 2
    on_disk = {p.name for p in folder.iterdir()} - {"orchrm.json"}
    assert set(card["files"]) == on_disk
    assert {"model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json"} <= on_disk


def test_two_swapped_vocabulary_ids_are_refused(folder):
    path = folder / "tokenizer.json"
    tok = json.loads(path.read_text())
    vocab = tok["model"]["vocab"]
    vocab["good"], vocab["bad"] = vocab["bad"], vocab["good"]
    path.write_text(json.dumps(tok))
    with pytest.raises(ChecksumMismatch, match="tokenizer.json has sha256 .* refusing to load it"):
        RewardModel.load(folder)


@pytest.mark.parametrize(
    "tamper, message",
    [
        (lambda f: (f / "tokenizer.json").unlink(), "tokenizer.json is listed in its card but missing"),
        (lambda f: (f / "tokenizer.json").write_text("garbage{"), "tokenizer.json has sha256"),
        (lambda f: (f / "added_tokens.json").write_text('{"good": 0}'), "added_tokens.json is not covered by its card"),
        (lambda f: (f / "adapter_config.json").write_text("{}"), "adapter_config.json is not covered by its card"),
    ],
    ids=["deleted", "garbage", "extra-file", "adapter"],
)
def test_a_tokenizer_or_extra_file_changed_after_training_is_refused(folder, tamper, message):
    tamper(folder)
    with pytest.raises(ChecksumMismatch, match=message) as err:
        RewardModel.load(folder)
    assert "\n" not in str(err.value) and "train-rm" in str(err.value)


@pytest.mark.parametrize("value", ["[" * 100_000 + "]" * 100_000, "9" * 5000, "NaN", '"\\ud800"'])
def test_a_hostile_card_is_one_line(folder, value):
    text = (folder / "orchrm.json").read_text()
    (folder / "orchrm.json").write_text(text.replace('"card_version"', '"x": %s, "card_version"' % value, 1))
    with pytest.raises(ModelError, match="is not a valid model card") as err:
        RewardModel.load(folder)
    assert "\n" not in str(err.value)


def test_a_v1_card_is_refused_with_a_retrain_hint(folder):
    card = json.loads((folder / "orchrm.json").read_text())
    files = card.pop("files")
    (folder / "orchrm.json").write_text(
        json.dumps({**card, "card_version": 1, "weights_sha256": files["model.safetensors"]})
    )
    with pytest.raises(OutdatedModel, match="v1 model card") as err:
        RewardModel.load(folder)
    assert "retrain it with `orchrm train-rm`" in str(err.value)


PLAN = json.dumps(
    {
        "agents": [
            {"id": "a1", "type": "lookup", "input": "population of Menmere"},
            {"id": "a2", "type": "calc", "input": "${a1} * 2"},
        ],
        "edges": [{"from": "a1", "to": "a2"}],
    }
)


def _with_render_version(folder, version):
    card = json.loads((folder / "orchrm.json").read_text())
    (folder / "orchrm.json").write_text(json.dumps({**card, "render_version": version}))


def test_a_model_reads_plans_in_the_rendering_it_was_trained_on(folder):
    assert RewardModel.load(folder).render(PLAN).endswith("${a1} * 2")  # the default, v1
    _with_render_version(folder, 2)  # as `PairConfig(render_version=2)` pairs train it
    v2 = RewardModel.load(folder)
    assert v2.render(PLAN) == render_plan(PLAN, version=2) and v2.render(PLAN).endswith(
        "${a1=population of Menmere} * 2"
    )
    assert v2.score("q", [PLAN]) == v2.score_rendered([("question: q", render_plan(PLAN, version=2))])
    assert v2.score_items([("q", PLAN)]) == v2.score("q", [PLAN])


def test_a_rendering_this_orchrm_cannot_write_is_refused_with_a_retrain_hint(folder):
    _with_render_version(folder, 9)
    with pytest.raises(OutdatedModel, match="trained on plan rendering v9; this orchrm renders v1, v2") as err:
        RewardModel.load(folder)
    assert "retrain the reward model" in str(err.value)


class Killed(BaseException):
    """Stands in for SIGKILL: not an Exception, so nothing on the way up handles it."""


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "fallback"])
def test_save_killed_at_any_step_leaves_the_old_model_or_the_new(trained_rm, tmp_path, monkeypatch, exchange):
    model = trained_rm.model
    old_card = model.card.model_copy(update={"metrics": {**model.card.metrics, "which": "old"}})
    new_card = model.card.model_copy(update={"metrics": {**model.card.metrics, "which": "new"}})
    seen = set()
    for k in range(1, 12):
        out = tmp_path / f"k{k}" / "rm"
        RewardModel(model.model, model.tokenizer, old_card).save(out)
        calls = [0]

        def dying(fn):
            def wrapper(*a, **kw):
                calls[0] += 1
                if calls[0] == k:
                    raise Killed
                return fn(*a, **kw)

            return wrapper

        with monkeypatch.context() as m:
            for owner, name in ((os, "rename"), (os, "replace"), (shutil, "rmtree")):
                m.setattr(owner, name, dying(getattr(owner, name)))
            m.setattr(atomic, "_exchange", dying(atomic._exchange if exchange else lambda a, b: False))
            try:
                RewardModel(model.model, model.tokenizer, new_card).save(out)
                finished = True
            except Killed:
                finished = False
        with monkeypatch.context() as m:
            m.setattr(atomic, "_alive", lambda pid: False)  # the killed process is gone
            seen.add(RewardModel.load(out).card.metrics["which"])
        if finished:
            break
    else:
        pytest.fail("the save never finished")
    assert folder_kind(out) == "reward-model"
    assert seen == {"old", "new"}
