"""`--device` (auto | cpu | cuda): the one choice (`resolve_device`), bf16 only on a GPU that has it, and a
model loaded with a device scoring on it. The GPU paths are checked with torch's CUDA probes patched: nothing
here moves a tensor to a GPU (bench/gpu_check.py's `rm-scoring` does, on a lent one)."""

import pytest
import torch

from orchrm.errors import ConfigError
from orchrm.rm import RewardModel
from orchrm.rm.device import resolve_device, scoring_dtype
from synthetic_pairs import plan_json


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture
def a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)


def test_auto_is_the_cpu_without_a_gpu(no_gpu):
    assert resolve_device("auto") == resolve_device() == resolve_device("cpu") == "cpu"
    assert scoring_dtype("cpu") is torch.float32


def test_cuda_without_a_gpu_is_one_line(no_gpu):
    with pytest.raises(ConfigError) as err:
        resolve_device("cuda")
    message = str(err.value)
    assert "\n" not in message and "--device cuda" in message and "no CUDA GPU" in message


def test_an_unknown_device_is_one_line():
    with pytest.raises(ConfigError, match="--device 'tpu': expected one of auto, cpu, cuda"):
        resolve_device("tpu")


def test_auto_and_cuda_choose_an_available_gpu_and_score_in_bf16_where_it_can(a_gpu, monkeypatch):
    assert resolve_device("auto") == resolve_device("cuda") == "cuda"
    assert resolve_device("cpu") == "cpu"  # asked for the CPU: the GPU is not taken
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert scoring_dtype("cuda") is torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert scoring_dtype("cuda") is torch.float32  # e.g. a V100


class _Net:
    """Stands for the network: records where `RewardModel.to` sends it instead of moving anything."""

    def __init__(self):
        self.moves = []

    def eval(self):
        return self

    def to(self, **where):
        self.moves.append(where)
        return self


def test_a_model_goes_to_the_chosen_gpu_in_bf16_without_moving_here(trained_rm, a_gpu, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    net = _Net()
    RewardModel(net, None, trained_rm.model.card).to("auto")
    assert net.moves == [{"device": "cuda", "dtype": torch.bfloat16}]


def test_cuda_without_a_gpu_is_refused_before_the_folder_is_read(tmp_path, no_gpu):
    with pytest.raises(ConfigError, match="--device cuda"):
        RewardModel.load(tmp_path / "no-such-model", device="cuda")


def test_scores_on_the_cpu_are_unchanged(trained_rm, rm_dir, no_gpu):
    question = "What is 5 + 15?"
    plans = [plan_json("good", 5), plan_json("bad", 5), plan_json("good", 7)]
    before = RewardModel.load(rm_dir).score(question, plans)  # the default: the CPU, as before --device
    for device in ("cpu", "auto"):
        rm = RewardModel.load(rm_dir, device=device)
        assert rm.device == "cpu" and next(rm.model.parameters()).dtype is torch.float32
        assert rm.score(question, plans) == before
        assert rm.score(question, plans, batch_size=1) == pytest.approx(before, abs=1e-6)
    assert trained_rm.model.to("cpu").score(question, plans) == pytest.approx(before, abs=1e-5)
