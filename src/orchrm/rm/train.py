"""Bradley–Terry training of the orchestration reward model through TRL's `RewardTrainer`.

Rows are tokenised here with `encoding.encode` (the same function scoring uses), so TRL neither drops long
pairs nor tokenises differently. After every epoch the held-out pairwise accuracy is measured overall and
per source; training stops early when it stops improving, and the best epoch's weights are kept.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import os
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..pairs.rows import PairRow
from .backbone import resolve_backbone
from .config import RMConfig
from .encoding import encode
from .model import ModelCard, RewardModel, quiet_transformers


@dataclass
class EpochMetrics:
    epoch: int
    accuracy: float | None
    per_source: dict[str, float]
    train_loss: float | None


@dataclass
class TrainResult:
    model: RewardModel
    history: list[EpochMetrics] = field(default_factory=list)
    best_epoch: int = 0
    train_seconds: float = 0.0
    pairs_per_second: float = 0.0


def data_hash(rows: list[PairRow]) -> str:
    h = hashlib.sha256()
    for r in rows:
        h.update(r.model_dump_json().encode())
    return h.hexdigest()


def pairwise_accuracy(model: RewardModel, rows: list[PairRow], batch_size: int = 64) -> tuple[float | None, dict[str, float]]:
    """Share of pairs whose chosen plan outscores the rejected one, overall and per source (ties count as wrong)."""
    if not rows:
        return None, {}
    chosen = model.score_rendered([(r.prompt, r.chosen) for r in rows], batch_size=batch_size)
    rejected = model.score_rendered([(r.prompt, r.rejected) for r in rows], batch_size=batch_size)
    wins: dict[str, list[bool]] = defaultdict(list)
    for r, c, j in zip(rows, chosen, rejected, strict=True):
        wins[r.source].append(c > j)
    every = [w for ws in wins.values() for w in ws]
    return sum(every) / len(every), {s: sum(ws) / len(ws) for s, ws in sorted(wins.items())}


def train_reward_model(
    train: list[PairRow],
    val: list[PairRow],
    config: RMConfig | None = None,
    *,
    pair_stats: dict[str, Any] | None = None,
    progress: bool = True,
) -> TrainResult:
    """Train on `train`, evaluate on `val` each epoch; returns the best epoch's model (not yet saved)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, TrainerCallback
    from trl import RewardConfig, RewardTrainer

    config = config or RMConfig()
    if not train:
        raise ConfigError("no training pairs", hint="build pairs from more rollouts (see `orchrm pairs` stats)")
    if config.threads:
        torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    logging.getLogger("transformers.modeling_utils").setLevel(logging.ERROR)  # "newly initialised head" is expected
    backbone = resolve_backbone(config.backbone)
    tokenizer = AutoTokenizer.from_pretrained(backbone.path, local_files_only=True)
    with quiet_transformers():
        net = AutoModelForSequenceClassification.from_pretrained(
            backbone.path, num_labels=1, use_safetensors=True, local_files_only=True
        )
    if config.lora:
        try:
            from peft import LoraConfig, TaskType, get_peft_model
        except ImportError:
            raise ConfigError("LoRA training needs peft", hint="pip install 'orchrm[lora]'") from None

        net = get_peft_model(net, LoraConfig(task_type=TaskType.SEQ_CLS, r=config.lora_r, lora_alpha=2 * config.lora_r))

    from datasets import Dataset

    def rows_to_ds(rows: list[PairRow]) -> Dataset:
        return Dataset.from_list(
            [
                {
                    "chosen_ids": encode(tokenizer, r.prompt, r.chosen, config.max_length),
                    "rejected_ids": encode(tokenizer, r.prompt, r.rejected, config.max_length),
                    "margin": float(config.margins.get(r.source, 0.0)),
                }
                for r in rows
            ]
        )

    card = ModelCard(
        backbone=backbone.name,
        backbone_sha256=backbone.sha256,
        model_type=net.config.model_type,
        max_length=config.max_length,
        tasks=sorted({r.task for r in train if r.task}),
        training_data_sha256=data_hash(train),
        pair_stats=pair_stats or {},
        config=config,
        weights_sha256="",
    )
    rm = RewardModel(net, tokenizer, card)
    history: list[EpochMetrics] = []
    best: dict[str, Any] = {"accuracy": None, "state": None, "epoch": 0}

    class HeldOut(TrainerCallback):  # type: ignore[misc]
        def __init__(self) -> None:
            self.stale = 0
            self.losses: list[float] = []

        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kw: Any) -> None:
            if logs and "loss" in logs:
                self.losses.append(float(logs["loss"]))

        def on_epoch_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
            was_training = model.training
            acc, per_source = pairwise_accuracy(rm, val)
            model.train(was_training)
            loss = sum(self.losses) / len(self.losses) if self.losses else None
            self.losses = []
            epoch = round(state.epoch or len(history) + 1)
            history.append(EpochMetrics(epoch, acc, per_source, loss))
            if progress:
                shown = f"{acc:.3f}" if acc is not None else "n/a (no validation pairs)"
                print(f"epoch {epoch}: held-out pairwise accuracy {shown} {per_source or ''}", flush=True)
            if acc is None:
                best.update(state=None, epoch=epoch)
                return
            if best["accuracy"] is None or acc > best["accuracy"]:
                best.update(accuracy=acc, state=copy.deepcopy(model.state_dict()), epoch=epoch)
                self.stale = 0
            else:
                self.stale += 1
                if self.stale >= config.early_stopping_patience:
                    control.should_training_stop = True

    with tempfile.TemporaryDirectory() as tmp:
        args = RewardConfig(
            output_dir=tmp,
            num_train_epochs=config.epochs,
            per_device_train_batch_size=config.batch_size,
            learning_rate=config.learning_rate,
            weight_decay=config.weight_decay,
            warmup_steps=config.warmup_ratio,  # a float in [0, 1) is a ratio of total steps
            center_rewards_coefficient=config.center_rewards_coefficient,
            max_length=None,  # already truncated by `encode`; TRL would otherwise drop long pairs
            disable_dropout=True,
            save_strategy="no",
            eval_strategy="no",
            logging_steps=max(1, len(train) // (config.batch_size * 4)),
            report_to=[],
            use_cpu=True,
            bf16=config.bf16,
            seed=config.seed,
            disable_tqdm=not progress,
            dataloader_num_workers=0,
        )
        trainer = RewardTrainer(
            model=net, args=args, train_dataset=rows_to_ds(train), processing_class=tokenizer, callbacks=[HeldOut()]
        )
        if not progress:
            from transformers.trainer_callback import PrinterCallback

            trainer.remove_callback(PrinterCallback)  # with tqdm off, it prints every log dict
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
        # Accelerate wraps forward() in autocast under bf16; scoring must run the plain fp32 forward.
        net = trainer.accelerator.unwrap_model(trainer.model, keep_fp32_wrapper=False)
        rm.model = net
    if best["state"] is not None:
        net.load_state_dict(best["state"])
    if config.lora:
        net = net.merge_and_unload()
        rm.model = net.eval()
    epochs_run = len(history) or config.epochs
    final = next((h for h in history if h.epoch == best["epoch"]), history[-1] if history else None)
    rm.card.metrics = {
        "val_accuracy": final.accuracy if final else None,
        "val_accuracy_per_source": final.per_source if final else {},
        "best_epoch": best["epoch"],
        "epochs_run": epochs_run,
        "train_pairs": len(train),
        "val_pairs": len(val),
        "history": [h.__dict__ for h in history],
    }
    rm.model.eval()
    return TrainResult(
        model=rm,
        history=history,
        best_epoch=best["epoch"],
        train_seconds=seconds,
        pairs_per_second=len(train) * epochs_run / seconds if seconds else 0.0,
    )


def train_from_folder(pairs_dir: Path, out: Path, config: RMConfig | None = None, progress: bool = True) -> TrainResult:
    """`orchrm train-rm`: read a pairs folder, train, save the model folder."""
    import json

    from ..pairs.rows import STATS_FILE, read_pairs_dir

    train, val = read_pairs_dir(pairs_dir)
    stats_path = pairs_dir / STATS_FILE
    stats = json.loads(stats_path.read_text()) if stats_path.is_file() else {}
    result = train_reward_model(train, val, config, pair_stats=stats, progress=progress)
    result.model.save(out)
    return result
