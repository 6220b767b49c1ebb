"""Bradley–Terry training of the orchestration reward model: TRL's `RewardTrainer`, configured.

Rows are tokenised with `encoding.encode` (the same function scoring uses), so TRL neither drops long pairs
nor tokenises differently. TRL's evaluation loop measures held-out pairwise accuracy overall and per source
after every epoch; transformers' early stopping ends training when it stops improving, and the best epoch's
weights are loaded back at the end. LoRA is TRL's `peft_config`. The TRL side lives in `trl_setup.py`.

Under `accelerate launch --num_processes N` (gloo on CPU, NCCL on GPUs) training is data-parallel: each
process takes `batch_size` pairs a step, the checkpoints live in one folder all processes share, and only
the main process writes the model folder (`TrainResult.main_process` tells the caller which it is).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .. import safejson
from ..errors import ConfigError
from ..llm.weights import quiet_transformers
from ..pairs.builder import PairStats
from ..pairs.render import RENDER_VERSION, RENDER_VERSIONS
from ..pairs.rows import PairRow
from .backbone import Backbone, backbone_kind, resolve_backbone
from .config import RMConfig
from .decoder import base_classifier
from .device import resolve_device
from .metrics import EpochMetrics, accuracy_by_source
from .model import ModelCard, RewardModel
from .trackers import tracker_list


@dataclass
class TrainResult:
    model: RewardModel
    history: list[EpochMetrics] = field(default_factory=list)
    best_epoch: int = 0
    train_seconds: float = 0.0
    pairs_per_second: float = 0.0
    #: False in the other processes of a multi-process (`accelerate launch`) run: they do not write outputs.
    main_process: bool = True
    processes: int = 1


def data_hash(rows: list[PairRow]) -> str:
    h = hashlib.sha256()
    for r in rows:
        h.update(r.model_dump_json().encode())
    return h.hexdigest()


def pairwise_accuracy(
    model: RewardModel, rows: list[PairRow], batch_size: int = 64
) -> tuple[float | None, dict[str, float]]:
    """A trained model's pairwise accuracy on `rows`, overall and per source (None without rows)."""
    if not rows:
        return None, {}
    chosen = model.score_rendered([(r.prompt, r.chosen) for r in rows], batch_size=batch_size)
    rejected = model.score_rendered([(r.prompt, r.rejected) for r in rows], batch_size=batch_size)
    return accuracy_by_source([r.source for r in rows], chosen, rejected)


def data_models(pair_stats: dict[str, Any] | None) -> dict[str, list[str]]:
    """The card's record of which models made the training data, read from the pairs' stats (empty for
    stats written before they counted models, or for pairs that came without stats)."""
    try:
        stats = PairStats.model_validate(pair_stats or {})
    except ValidationError:
        return {}
    return {"orchestrator_models": sorted(stats.orchestrator_models), "agent_models": sorted(stats.agent_models)}


def _load_backbone(config: RMConfig) -> tuple[Backbone, Any, Any]:
    """Backbone, tokenizer and a fresh one-output classifier, seeded just before, so its new head is reproducible."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    if config.threads:
        torch.set_num_threads(config.threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    logging.getLogger("transformers.modeling_utils").setLevel(logging.ERROR)  # "newly initialised head" is expected
    if backbone_kind(config.backbone) == "decoder" and not config.lora:
        raise ConfigError(
            f"backbone {config.backbone} is a decoder LLM: it trains LoRA adapters and a value head, not every weight",
            hint="leave lora at its default (on) for decoder backbones",
        )
    backbone = resolve_backbone(config.backbone)
    tokenizer = AutoTokenizer.from_pretrained(backbone.path, local_files_only=True)
    torch.manual_seed(config.seed)  # after resolving: a first GGUF conversion draws random numbers
    with quiet_transformers():
        if backbone.kind == "decoder":
            if tokenizer.pad_token is None:  # the value head finds each sequence's end by the padding after it
                tokenizer.pad_token = tokenizer.eos_token
            net = base_classifier(backbone.path, tokenizer)
        else:
            net = AutoModelForSequenceClassification.from_pretrained(
                backbone.path, num_labels=1, use_safetensors=True, local_files_only=True
            )
    return backbone, tokenizer, net


def _card(
    backbone: Backbone,
    net: Any,
    train: list[PairRow],
    config: RMConfig,
    pair_stats: dict[str, Any] | None,
    render_version: int,
) -> ModelCard:
    return ModelCard(
        render_version=render_version,
        backbone=backbone.name,
        backbone_sha256=backbone.sha256,
        backbone_kind=backbone.kind,
        model_type=net.config.model_type,
        max_length=config.max_length,
        tasks=sorted({r.task for r in train if r.task}),
        training_data_sha256=data_hash(train),
        pair_stats=pair_stats or {},
        **data_models(pair_stats),
        config=config,
    )


def _preflight(config: RMConfig, train: list[PairRow], render_version: int) -> None:
    """What would fail later, as one line before the backbone loads: a rendering this orchrm cannot score in, cuda
    without a GPU, a tracker not installed, no pairs."""
    if render_version not in RENDER_VERSIONS:
        raise ConfigError(f"render_version must be one of {RENDER_VERSIONS}, got {render_version}")
    resolve_device(config.device)
    tracker_list(config.report_to)
    if not train:
        raise ConfigError("no training pairs", hint="build pairs from more rollouts (see `orchrm pairs` stats)")


def train_reward_model(
    train: list[PairRow],
    val: list[PairRow],
    config: RMConfig | None = None,
    *,
    pair_stats: dict[str, Any] | None = None,
    progress: bool = True,
    callbacks: list[Any] | None = None,
    render_version: int = RENDER_VERSION,
) -> TrainResult:
    """Train on `train`, evaluate on `val` each epoch; returns the best epoch's model (not yet saved). The rows'
    text is in plan rendering `render_version` (`PairConfig.render_version`): the card records it, and the model
    is scored in it."""
    from transformers import EarlyStoppingCallback
    from transformers.trainer_callback import PrinterCallback
    from trl import RewardTrainer

    from . import trl_setup as setup

    config = config or RMConfig()
    _preflight(config, train, render_version)
    backbone, tokenizer, net = _load_backbone(config)
    decoder = backbone.kind == "decoder"
    peft_config = setup.lora_config(config, decoder=decoder)
    epochs = setup.EpochHistory(progress)
    # The arguments set up the processes' shared state (gloo or NCCL under `accelerate launch`); the
    # checkpoint folder, which all processes must share, can only be agreed on after that.
    args = setup.reward_config(config, "", len(train), validate=bool(val), progress=progress)
    with _shared_tmpdir(args.distributed_state) as tmp:
        args.output_dir = tmp
        trainer = RewardTrainer(
            model=net,
            args=args,
            train_dataset=setup.preference_dataset(train, tokenizer, config, decoder=decoder),
            eval_dataset=setup.preference_dataset(val, tokenizer, config, decoder=decoder) if val else None,
            processing_class=tokenizer,
            compute_metrics=setup.PairwiseAccuracy([r.source for r in val]),
            preprocess_logits_for_metrics=setup.paired_rewards,
            callbacks=[
                epochs,
                *([EarlyStoppingCallback(config.early_stopping_patience)] if val else []),
                *(callbacks or []),
            ],
            peft_config=peft_config,
        )
        if not progress:
            trainer.remove_callback(PrinterCallback)  # with tqdm off, it prints every log dict
        start = time.perf_counter()
        with quiet_transformers():  # no "Writing model shards" bar for each best-epoch checkpoint
            trainer.train()
        seconds = time.perf_counter() - start
    # Accelerate wraps forward() in autocast under bf16; scoring must run the plain fp32 forward.
    net = trainer.accelerator.unwrap_model(trainer.model, keep_fp32_wrapper=False)
    if peft_config is not None and not decoder:  # a decoder keeps its adapter apart from the base it names
        net = net.merge_and_unload()
    rm = RewardModel(net.cpu(), tokenizer, _card(backbone, net, train, config, pair_stats, render_version))
    result = _result(rm, epochs.history, len(train), len(val), seconds)
    result.main_process = trainer.accelerator.is_main_process
    result.processes = trainer.accelerator.num_processes
    return result


@contextlib.contextmanager
def _shared_tmpdir(state: Any) -> Iterator[str]:
    """A scratch folder for the trainer's checkpoints. With several processes (`state`: accelerate's
    `PartialState`) all must use the same one: the main process saves the best epoch there and every
    process loads it back at the end."""
    if state is None or state.num_processes == 1:
        with tempfile.TemporaryDirectory() as tmp:
            yield tmp
        return
    from accelerate.utils import broadcast_object_list

    path = [tempfile.mkdtemp(prefix="orchrm-rm-") if state.is_main_process else None]
    broadcast_object_list(path)
    try:
        yield str(path[0])
    finally:
        state.wait_for_everyone()  # nobody still reading a checkpoint when the folder goes
        if state.is_main_process:
            shutil.rmtree(str(path[0]), ignore_errors=True)


def _result(rm: RewardModel, history: list[EpochMetrics], n_train: int, n_val: int, seconds: float) -> TrainResult:
    """Write the run's metrics into the card. The best epoch is the first with the highest accuracy (the one
    `load_best_model_at_end` restored), or the last when nothing was validated."""
    scored = [h for h in history if h.accuracy is not None]
    best = max(scored, key=lambda h: h.accuracy or 0.0) if scored else (history[-1] if history else None)
    epochs_run = len(history) or rm.card.config.epochs
    rm.card.metrics = {
        "val_accuracy": best.accuracy if best else None,
        "val_accuracy_per_source": best.per_source if best else {},
        "best_epoch": best.epoch if best else 0,
        "epochs_run": epochs_run,
        "train_pairs": n_train,
        "val_pairs": n_val,
        "history": [h.__dict__ for h in history],
    }
    return TrainResult(
        model=rm,
        history=history,
        best_epoch=best.epoch if best else 0,
        train_seconds=seconds,
        pairs_per_second=n_train * epochs_run / seconds if seconds else 0.0,
    )


def train_from_folder(
    pairs_dir: Path,
    out: Path,
    config: RMConfig | None = None,
    progress: bool = True,
    callbacks: list[Any] | Callable[[], list[Any]] | None = None,
) -> TrainResult:
    """`orchrm train-rm`: read a pairs folder, train, save the model folder. `progress` is TRL's own output
    (tqdm, a line per epoch); `callbacks` go to the trainer (a function making them is called once the pairs are
    read, so a folder that cannot be read is one line, before any progress)."""
    from ..pairs.rows import STATS_FILE, read_pairs_folder

    manifest, train, val = read_pairs_folder(pairs_dir)
    if callable(callbacks):
        callbacks = callbacks()
    stats_path = pairs_dir / STATS_FILE
    stats = safejson.read(stats_path) if stats_path.is_file() else {}  # sha256-checked by read_pairs_dir
    result = train_reward_model(
        train,
        val,
        config,
        pair_stats=stats,
        progress=progress,
        callbacks=callbacks,
        render_version=manifest.render_version,
    )
    if result.main_process:
        result.model.save(out)
    if result.processes > 1:
        from accelerate import PartialState

        PartialState().wait_for_everyone()  # every process returns once the folder is complete
    return result
