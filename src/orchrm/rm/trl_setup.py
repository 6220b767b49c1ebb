"""How TRL's `RewardTrainer` is configured for the reward model: arguments, datasets, metrics, callback.

This module imports transformers at module level (its callback subclasses `TrainerCallback`), so
`train.py` imports it only when it trains and `import orchrm.rm` stays free of torch and transformers.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from transformers import TrainerCallback

from ..errors import ConfigError
from ..pairs.rows import PairRow
from .config import RMConfig
from .encoding import encode
from .metrics import EpochMetrics, accuracy_by_source
from .trackers import tracker_list

ACCURACY = "pairwise_accuracy"  # not "accuracy": TRL logs its own per-batch "eval_accuracy" over that key


#: Deprecations our dependencies raise at each other, theirs to fix and noise in a user's output: peft reads
#: `is_gradient_checkpointing` and TRL calls `gradient_checkpointing_enable` (both renamed by transformers 5).
DEPENDENCY_DEPRECATIONS = (
    r"`is_gradient_checkpointing` is deprecated",
    r"`gradient_checkpointing_enable` is deprecated",
)


def checkpointing(args_class: type, on: bool) -> dict[str, bool]:
    """Activation (gradient) checkpointing for a TRL config, said so that transformers prints no FutureWarning.

    transformers 5 renamed `gradient_checkpointing` to `activation_checkpointing` and warns whenever only the old
    name is set, which TRL's configs do by default (on); older transformers know only the old name. Called
    before each trainer is built, it also hides `DEPENDENCY_DEPRECATIONS` (by message, nothing else)."""
    for message in DEPENDENCY_DEPRECATIONS:
        warnings.filterwarnings("ignore", message=message, category=FutureWarning)
    fields = getattr(args_class, "__dataclass_fields__", {})
    return {"activation_checkpointing" if "activation_checkpointing" in fields else "gradient_checkpointing": on}


def reward_config(config: RMConfig, out: str, n_train: int, validate: bool, progress: bool) -> Any:
    """TRL's arguments. With validation pairs: evaluate every epoch, checkpoint only a new best, load it at the end."""
    from trl import RewardConfig

    return RewardConfig(
        **checkpointing(RewardConfig, True),  # TRL's default for the reward trainer
        output_dir=out,
        num_train_epochs=config.epochs,
        per_device_train_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        weight_decay=config.weight_decay,
        warmup_steps=config.warmup_ratio,  # a float in [0, 1) is a ratio of total steps
        center_rewards_coefficient=config.center_rewards_coefficient,
        max_length=None,  # already truncated by `encode`; TRL would otherwise drop long pairs
        disable_dropout=True,
        eval_strategy="epoch" if validate else "no",
        save_strategy="best" if validate else "no",
        save_only_model=True,
        load_best_model_at_end=validate,
        metric_for_best_model=ACCURACY if validate else None,
        greater_is_better=True,
        logging_steps=max(1, n_train // (config.batch_size * 4)),
        report_to=tracker_list(config.report_to),
        include_num_input_tokens_seen="non_padding",  # the progress line's tokens: each batch's attention mask
        use_cpu=config.device == "cpu" or not accelerator_present(),
        bf16=config.bf16,
        seed=config.seed,
        disable_tqdm=not progress,
        dataloader_num_workers=0,
    )


def accelerator_present() -> bool:
    """Whether `device="auto"` finds an accelerator. Without one it must say `use_cpu`: transformers refuses bf16
    when `use_cpu` is off and no GPU is there, even though it would then train on the CPU."""
    import torch

    return bool(torch.accelerator.is_available())


def lora_config(config: RMConfig, *, decoder: bool = False) -> Any:
    """TRL's `peft_config`: a decoder's adapter (kept apart from its base), an encoder's when asked for
    (merged into the weights after training), or None."""
    if decoder:
        from .decoder import lora_config as decoder_lora

        return decoder_lora(config.lora_r)
    if not config.lora:
        return None
    try:
        from peft import LoraConfig, TaskType
    except ImportError:
        raise ConfigError("LoRA training needs peft", hint="pip install 'orchrm[lora]'") from None
    return LoraConfig(task_type=TaskType.SEQ_CLS, r=config.lora_r, lora_alpha=2 * config.lora_r)


def preference_dataset(rows: list[PairRow], tokenizer: Any, config: RMConfig, *, decoder: bool = False) -> Any:
    """TRL's pre-tokenised preference rows, tokenised by `encode` like scoring, so none is dropped for length."""
    from datasets import Dataset

    return Dataset.from_list(
        [
            {
                "chosen_ids": encode(tokenizer, r.prompt, r.chosen, config.max_length, decoder=decoder),
                "rejected_ids": encode(tokenizer, r.prompt, r.rejected, config.max_length, decoder=decoder),
                "margin": float(config.margins.get(r.source, 0.0)),
            }
            for r in rows
        ]
    )


def paired_rewards(logits: Any, labels: Any) -> Any:
    """`preprocess_logits_for_metrics`: TRL's eval step yields a batch's rewards as [chosen…, rejected…];
    pair them as (chosen, rejected) rows so that batches concatenate in row order."""
    import torch

    chosen, rejected = logits.squeeze(-1).chunk(2)
    return torch.stack([chosen, rejected], dim=-1)


@dataclass
class PairwiseAccuracy:
    """`compute_metrics`: held-out pairwise accuracy overall and per source (TRL evaluates rows in order)."""

    sources: list[str]

    def __call__(self, prediction: Any) -> dict[str, float]:
        rewards = prediction.predictions
        overall, per_source = accuracy_by_source(self.sources, rewards[:, 0].tolist(), rewards[:, 1].tolist())
        return {ACCURACY: overall, **{f"{ACCURACY}/{s}": a for s, a in per_source.items()}}


class EpochHistory(TrainerCallback):  # type: ignore[misc]
    """One `EpochMetrics` per epoch: the mean logged training loss and the held-out evaluation, if any."""

    def __init__(self, progress: bool) -> None:
        self.progress = progress
        self.history: list[EpochMetrics] = []
        self._losses: list[float] = []

    def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kw: Any) -> None:
        if logs and "loss" in logs:
            self._losses.append(float(logs["loss"]))

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if args.eval_strategy == "no":  # otherwise the evaluation that follows records the epoch
            self._record(state, None, {})

    def on_evaluate(self, args: Any, state: Any, control: Any, metrics: dict | None = None, **kw: Any) -> None:
        metrics = metrics or {}
        prefix = f"eval_{ACCURACY}/"
        per_source = {k.removeprefix(prefix): v for k, v in sorted(metrics.items()) if k.startswith(prefix)}
        self._record(state, metrics.get(f"eval_{ACCURACY}"), per_source)

    def _record(self, state: Any, accuracy: float | None, per_source: dict[str, float]) -> None:
        loss = sum(self._losses) / len(self._losses) if self._losses else None
        self._losses = []
        epoch = round(state.epoch or len(self.history) + 1)
        self.history.append(EpochMetrics(epoch, accuracy, per_source, loss))
        if self.progress and state.is_world_process_zero:
            shown = f"{accuracy:.3f}" if accuracy is not None else "n/a (no validation pairs)"
            print(f"epoch {epoch}: held-out pairwise accuracy {shown} {per_source or ''}", flush=True)
