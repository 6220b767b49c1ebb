"""The in-process scorer of every adapter takes a device (TRL `device=`, verl `reward_kwargs.device`, OpenRLHF
`ORCHRM_DEVICE`): `cuda` without a GPU is one line, `auto` (the default) on a CPU machine scores as before."""

import pytest
import torch

from adapter_fakes import ITEMS
from orchrm.adapters import openrlhf, verl
from orchrm.adapters._core import LocalScorer, cached_scorer
from orchrm.adapters.trl import TRLReward
from orchrm.errors import ConfigError


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_a_folder_loads_on_auto_by_default_and_scores_as_before(rm_folder, rm, expected, no_gpu):
    for device in (None, "auto", "cpu"):
        scorer = LocalScorer(rm_folder, device)
        assert scorer.rm.device == "cpu"
        assert scorer.score([(q, p) for q, p in ITEMS[:2]]) == rm.score_items(ITEMS[:2])
    reward = TRLReward(rm=rm_folder, device="auto")
    assert reward(None, [p for _, p in ITEMS], question=[q for q, _ in ITEMS]) == pytest.approx(expected)


def test_a_model_given_stays_where_it_is_unless_a_device_is_named(rm, no_gpu):
    assert LocalScorer(rm).rm is rm and LocalScorer(rm, "cpu").rm.device == "cpu"


def test_cuda_without_a_gpu_is_one_line_in_every_adapter(rm_folder, no_gpu, monkeypatch):
    def one_line(call):
        with pytest.raises(ConfigError) as err:
            call()
        assert "\n" not in str(err.value) and "--device cuda" in str(err.value)

    one_line(lambda: TRLReward(rm=rm_folder, device="cuda"))
    one_line(
        lambda: verl.compute_score("d", ITEMS[0][1], None, {"question": ITEMS[0][0]}, rm=str(rm_folder), device="cuda")
    )
    monkeypatch.setenv("ORCHRM_RM", str(rm_folder))
    monkeypatch.setenv("ORCHRM_DEVICE", "cuda")
    one_line(lambda: openrlhf.reward_func([ITEMS[0][1]], [""], [ITEMS[0][0]]))


def test_one_scorer_per_device(rm_folder, no_gpu):
    folder = str(rm_folder)
    assert cached_scorer(folder, None, None, None, "cpu") is cached_scorer(folder, None, None, None, "cpu")
    assert cached_scorer(folder, None, None, None, "cpu") is not cached_scorer(folder, None, None, None, "auto")


def test_verl_and_openrlhf_pass_the_device_through(rm_folder, expected, no_gpu, monkeypatch):
    got = verl.compute_score("d", ITEMS[0][1], None, {"question": ITEMS[0][0]}, rm=str(rm_folder), device="cpu")
    assert got["score"] == pytest.approx(expected[0])
    monkeypatch.setenv("ORCHRM_RM", str(rm_folder))
    monkeypatch.setenv("ORCHRM_DEVICE", "auto")
    monkeypatch.delenv("ORCHRM_URL", raising=False)
    prompt = "PROMPT "
    out = openrlhf.reward_func([prompt + ITEMS[0][1]], [prompt], [ITEMS[0][0]])
    assert out["rewards"] == pytest.approx(expected[:1])
