"""The TRL side of reward-model training, without training: metrics layout, LoRA config, arguments."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from orchrm.errors import ConfigError
from orchrm.rm import RMConfig
from orchrm.rm.trl_setup import ACCURACY, EpochHistory, PairwiseAccuracy, lora_config, paired_rewards, reward_config


def test_eval_batches_are_paired_in_row_order_and_scored_per_source():
    # TRL's eval step returns one batch's rewards as [chosen..., rejected...]; two batches of 2 and 1 rows
    batches = [torch.tensor([[1.0], [0.0], [0.5], [2.0]]), torch.tensor([[3.0], [-1.0]])]
    rewards = np.concatenate([paired_rewards(b, None).numpy() for b in batches])
    assert rewards.tolist() == [[1.0, 0.5], [0.0, 2.0], [3.0, -1.0]]
    metrics = PairwiseAccuracy(["a", "b", "b"])(SimpleNamespace(predictions=rewards))
    assert metrics == {ACCURACY: pytest.approx(2 / 3), f"{ACCURACY}/a": 1.0, f"{ACCURACY}/b": 0.5}


def test_a_tie_counts_as_wrong():
    assert PairwiseAccuracy(["a"])(SimpleNamespace(predictions=np.array([[1.0, 1.0]])))[ACCURACY] == 0.0


def test_epoch_history_reads_the_evaluation_and_averages_the_epochs_loss():
    history = EpochHistory(progress=False)
    args, state = SimpleNamespace(eval_strategy="epoch"), SimpleNamespace(epoch=1.0)
    for loss in (0.8, 0.6):
        history.on_log(args, state, None, logs={"loss": loss})
    history.on_log(args, state, None, logs={"eval_loss": 9.0})
    history.on_epoch_end(args, state, None)  # the evaluation records this epoch
    history.on_evaluate(
        args, state, None, metrics={f"eval_{ACCURACY}": 0.75, f"eval_{ACCURACY}/x": 0.5, "eval_accuracy": 1.0}
    )
    [epoch] = history.history
    assert (epoch.epoch, epoch.accuracy, epoch.per_source, epoch.train_loss) == (
        1,
        0.75,
        {"x": 0.5},
        pytest.approx(0.7),
    )
    no_eval = EpochHistory(progress=False)
    no_eval.on_epoch_end(SimpleNamespace(eval_strategy="no"), SimpleNamespace(epoch=2.0), None)
    assert [(h.epoch, h.accuracy, h.train_loss) for h in no_eval.history] == [(2, None, None)]


def test_best_epoch_is_checkpointed_and_restored_only_with_validation_pairs(tmp_path):
    with_val = reward_config(RMConfig(), str(tmp_path), 64, validate=True, progress=False)
    assert (with_val.eval_strategy, with_val.save_strategy, with_val.load_best_model_at_end) == ("epoch", "best", True)
    assert with_val.metric_for_best_model == ACCURACY and with_val.max_length is None
    without = reward_config(RMConfig(), str(tmp_path), 64, validate=False, progress=False)
    assert (without.eval_strategy, without.save_strategy, without.load_best_model_at_end) == ("no", "no", False)


def test_training_stays_on_the_cpu_unless_asked(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    assert reward_config(RMConfig(), str(tmp_path), 64, validate=False, progress=False).use_cpu is True
    assert reward_config(RMConfig(device="auto"), str(tmp_path), 64, validate=False, progress=False).use_cpu is False


def test_auto_without_an_accelerator_trains_on_the_cpu_in_bf16_too(tmp_path, monkeypatch):
    # transformers refused bf16 with use_cpu off and no GPU ("Your setup doesn't support bf16/gpu"): device="auto"
    # with bf16 failed on a CPU machine, where device="cpu" with bf16 trains
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: False)
    args = reward_config(RMConfig(device="auto", bf16=True), str(tmp_path), 64, validate=False, progress=False)
    assert (args.use_cpu, args.bf16) == (True, True)


def test_lora_is_off_by_default_and_needs_peft():
    assert lora_config(RMConfig()) is None
    try:
        import peft  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match="peft"):
            lora_config(RMConfig(lora=True))
    else:
        assert lora_config(RMConfig(lora=True, lora_r=4)).r == 4
