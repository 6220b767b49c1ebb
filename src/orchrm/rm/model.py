"""A trained reward model on disk and in memory: save, verified load, batched scoring.

A model folder holds safetensors weights, the tokenizer, and `orchrm.json` (the card): backbone, tasks,
training-data hash, pair stats, metrics, the rendering version, the weights' sha256. Loading refuses a
folder whose card is missing or foreign, whose weights were changed, or whose backbone is not the one asked
for.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from .. import __version__
from ..errors import ChecksumMismatch, ModelError
from ..llm.models import sha256_file
from ..mas.plans import Plan
from ..pairs.render import RENDER_VERSION, render_plan, render_question
from .config import RMConfig
from .encoding import encode

CARD_FILE = "orchrm.json"
CARD_FORMAT = "orchrm-reward-model"
WEIGHTS_FILE = "model.safetensors"


class ModelCard(BaseModel):
    format: str = CARD_FORMAT
    card_version: int = 1
    orchrm_version: str = __version__
    created: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    backbone: str
    backbone_sha256: str
    model_type: str
    render_version: int = RENDER_VERSION
    max_length: int
    tasks: list[str] = Field(default_factory=list)
    training_data_sha256: str
    pair_stats: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, Any] = Field(default_factory=dict)
    config: RMConfig
    weights_sha256: str


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """No transformers progress bars or info lines while loading and saving (they flood orchrm's own output)."""
    from transformers.utils import logging as tlog

    level, bars = tlog.get_verbosity(), tlog.is_progress_bar_enabled()
    tlog.set_verbosity_error()
    tlog.disable_progress_bar()
    try:
        yield
    finally:
        tlog.set_verbosity(level)
        if bars:
            tlog.enable_progress_bar()


def _torch() -> Any:
    import torch

    return torch


class RewardModel:
    """Scores (question, plan) without running any sub-agent: higher is a better plan."""

    def __init__(self, model: Any, tokenizer: Any, card: ModelCard, path: Path | None = None) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.card = card
        self.path = path

    @classmethod
    def load(cls, folder: str | Path, *, expect_backbone: str | None = None) -> RewardModel:
        folder = Path(folder)
        card_path = folder / CARD_FILE
        if not card_path.is_file():
            raise ModelError(f"{folder} is not an orchrm reward model (no {CARD_FILE})", hint="train one with `orchrm train-rm`")
        try:
            card = ModelCard.model_validate_json(card_path.read_text())
        except (ValidationError, ValueError) as exc:
            raise ModelError(f"{card_path} is not a valid model card: {str(exc).splitlines()[0]}") from None
        if card.format != CARD_FORMAT:
            raise ModelError(f"{card_path} has format {card.format!r}, expected {CARD_FORMAT!r}")
        if card.render_version != RENDER_VERSION:
            raise ModelError(
                f"{folder} was trained on plan rendering v{card.render_version}; this orchrm renders v{RENDER_VERSION}",
                hint="retrain the reward model",
            )
        if expect_backbone is not None and card.backbone != expect_backbone:
            raise ModelError(f"{folder} was trained on backbone {card.backbone!r}, not {expect_backbone!r}")
        weights = folder / WEIGHTS_FILE
        if not weights.is_file():
            raise ModelError(f"{folder} has no {WEIGHTS_FILE}")
        digest = sha256_file(weights)
        if digest != card.weights_sha256:
            raise ChecksumMismatch(
                f"{weights} has sha256 {digest[:16]}…, but its card says {card.weights_sha256[:16]}…; refusing to load it"
            )
        try:
            config = json.loads((folder / "config.json").read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ModelError(f"{folder}/config.json is unreadable: {exc}") from None
        if config.get("model_type") != card.model_type:
            raise ModelError(
                f"{folder}/config.json describes a {config.get('model_type')!r} model, its card a {card.model_type!r} one",
                hint="the weights and the card come from different backbones",
            )
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        with quiet_transformers():
            model = AutoModelForSequenceClassification.from_pretrained(folder, use_safetensors=True, local_files_only=True)
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        return cls(model, tokenizer, card, folder)

    def save(self, folder: str | Path) -> Path:
        """Write the folder atomically (a temporary sibling renamed into place)."""
        folder = Path(folder)
        tmp = folder.with_name(f".{folder.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        with quiet_transformers():
            self.model.save_pretrained(tmp, safe_serialization=True)
            self.tokenizer.save_pretrained(tmp)
        card = self.card.model_copy(update={"weights_sha256": sha256_file(tmp / WEIGHTS_FILE)})
        (tmp / CARD_FILE).write_text(card.model_dump_json(indent=2) + "\n")
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
        self.card, self.path = card, folder
        return folder

    def score(self, question: str, plans: Sequence[Plan | str], *, batch_size: int = 64) -> list[float]:
        """One reward per plan (a `Plan` or raw orchestrator text) for one question."""
        prompt = render_question(question)
        return self.score_rendered([(prompt, render_plan(p)) for p in plans], batch_size=batch_size)

    def score_rendered(self, items: Sequence[tuple[str, str]], *, batch_size: int = 64) -> list[float]:
        """Rewards of already-rendered (prompt, plan) texts, e.g. pair rows."""
        torch = _torch()
        ids = [encode(self.tokenizer, p, c, self.card.max_length) for p, c in items]
        pad = self.tokenizer.pad_token_id or 0
        out: list[float] = []
        with torch.inference_mode():
            for start in range(0, len(ids), batch_size):
                batch = ids[start : start + batch_size]
                width = max(len(x) for x in batch)
                input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for i, seq in enumerate(batch):
                    input_ids[i, : len(seq)] = torch.tensor(seq)
                    mask[i, : len(seq)] = 1
                logits = self.model(input_ids=input_ids, attention_mask=mask).logits.squeeze(-1)
                out.extend(float(x) for x in logits.tolist())
        return out
