"""A trained reward model on disk and in memory: save, verified load, batched scoring.

A model folder holds safetensors weights (an encoder's whole network, or a decoder's LoRA adapter and value
head: see `decoder.py`), the tokenizer, and `orchrm.json` (the card): backbone and its kind, tasks,
training-data hash, pair stats, metrics, the rendering version, and the sha256 of every other file in the
folder. Loading refuses a folder whose card is missing, foreign or outdated, in which any file was changed,
removed or added (the tokenizer changes scores as surely as the weights do), or whose backbone is not the
one asked for. Files that no loader reads and that a hub or git adds to a folder are not the card's and are
ignored when the card does not list them (`UNOWNED`): a README, a licence, hidden files and anything under a
hidden folder (`.gitattributes`, the `.cache/huggingface/` that `hf download --local-dir` writes). Saving builds
the folder beside its target, gives every file the folder's normal mode (0644 under umask 022: safetensors
writes 0600, which a server running as another user cannot read) and swaps it in whole. `export.py` writes a
plain transformers copy any serving stack loads (`export_reward_model(rm, out)`: it imports this module, never the
other way round).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError

from .. import safejson
from ..atomic import recover, replacing_dir
from ..errors import ChecksumMismatch, ModelError, OutdatedModel
from ..folders import stamp_folder
from ..hashing import sha256_file
from ..llm.weights import quiet_transformers
from ..mas.plans import Plan
from ..pairs.render import RENDER_VERSION, RENDER_VERSIONS, render_plan, render_question
from ..version import __version__
from .backbone import Kind
from .config import RMConfig
from .decoder import ADAPTER_FILE, load_decoder, save_adapter
from .device import resolve_device, scoring_dtype
from .encoding import encode

if TYPE_CHECKING:
    from ..tasks.base import Task

CARD_FILE = "orchrm.json"
CARD_FORMAT = "orchrm-reward-model"
# v2: the card hashes every file of the folder (v1 hashed only the weights, so a swapped tokenizer loaded).
CARD_VERSION = 2
WEIGHTS_FILE = "model.safetensors"


class ModelCard(BaseModel):
    format: str = CARD_FORMAT
    card_version: int = CARD_VERSION
    orchrm_version: str = __version__
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    backbone: str
    backbone_sha256: str
    backbone_kind: Kind = Field(
        "encoder", description="decoder: the folder holds a LoRA adapter and value head over the backbone."
    )
    model_type: str
    render_version: int = RENDER_VERSION
    max_length: int
    tasks: list[str] = Field(default_factory=list)
    training_data_sha256: str
    pair_stats: dict[str, Any] = Field(default_factory=dict)
    orchestrator_models: list[str] = Field(
        default_factory=list, description="Models that wrote the training traces' plans."
    )
    agent_models: list[str] = Field(
        default_factory=list, description="Models that ran the training traces' sub-agents."
    )
    metrics: dict[str, Any] = Field(default_factory=dict)
    config: RMConfig
    files: dict[str, str] = Field(default_factory=dict, description="sha256 of every file in the folder but the card.")

    @property
    def weights_file(self) -> str:
        return ADAPTER_FILE if self.backbone_kind == "decoder" else WEIGHTS_FILE

    @property
    def weights_sha256(self) -> str:
        return self.files.get(self.weights_file, "")


def _folder_files(folder: Path) -> dict[str, str]:
    """sha256 of every file under `folder` except the card, by path relative to it."""
    return {
        p.relative_to(folder).as_posix(): sha256_file(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.relative_to(folder).as_posix() != CARD_FILE
    }


#: Top-level files no loader reads, which hubs and git add to a model folder (with hidden files and folders).
UNOWNED = frozenset({"README.md", "LICENSE", "LICENSE.md", "LICENSE.txt", "NOTICE"})


def unowned(name: str) -> bool:
    """Whether `name` (relative to the folder) is a file loading never reads, ignored unless the card lists it:
    a `UNOWNED` document, a hidden file (`.gitattributes`) or anything under a hidden folder (`.cache/`, `.git/`).
    Every other unlisted file is refused: transformers and peft read extra files by name (`added_tokens.json`,
    `adapter_config.json`, ...), and such a file changes what loads."""
    first = name.split("/", 1)[0]
    return first.startswith(".") or name in UNOWNED


def _present_files(folder: Path) -> set[str]:
    """Every file under `folder` but the card, relative to it, hidden folders left out (unowned, and a `.git/`
    is big)."""
    out = set()
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        rel = Path(root).relative_to(folder)
        out |= {(rel / f).as_posix() for f in files}
    return out - {CARD_FILE}


def normal_modes(folder: Path) -> None:
    """Give every file and folder under `folder` the mode a newly created one gets there (umask applied): 0644
    and 0755 under umask 022. safetensors writes weights 0600, which a server running as another user cannot read."""
    probe = folder / ".orchrm-mode-probe"
    probe.touch()
    try:
        file_mode = stat.S_IMODE(probe.stat().st_mode)
    finally:
        probe.unlink()
    dir_mode = file_mode | ((file_mode & 0o444) >> 2)  # x wherever r: 0644 -> 0755, 0600 -> 0700
    for root, dirs, files in os.walk(folder):
        for d in dirs:
            os.chmod(os.path.join(root, d), dir_mode)
        for f in files:
            os.chmod(os.path.join(root, f), file_mode)


def _verify_files(folder: Path, card: ModelCard) -> None:
    """Refuse a folder holding anything its card does not vouch for (but `unowned` files), or missing anything
    it does."""
    retrain = "the folder changed after training; restore it or retrain with `orchrm train-rm`"
    present = _present_files(folder)
    for name, expected in card.files.items():
        if name not in present:  # a name is checked only as found inside the folder (a card may say "../x")
            raise ChecksumMismatch(
                f"{folder / name} is listed in its card but missing; refusing to load it", hint=retrain
            )
        present.discard(name)
        digest = sha256_file(folder / name)
        if digest != expected:
            raise ChecksumMismatch(
                f"{folder / name} has sha256 {digest[:16]}…, but its card says {expected[:16]}…; refusing to load it",
                hint=retrain,
            )
    extra = {n for n in present if not unowned(n)}
    if extra:
        raise ChecksumMismatch(f"{folder / min(extra)} is not covered by its card; refusing to load it", hint=retrain)


def _torch() -> Any:
    import torch

    return torch


def read_card(folder: Path) -> ModelCard:
    """A model folder's card (`orchrm.json`), refused when missing, foreign, outdated or invalid: the one reader
    of the card, which `RewardModel.load` checks the folder's files against."""
    card_path = folder / CARD_FILE
    if not card_path.is_file():
        raise ModelError(
            f"{folder} is not an orchrm reward model (no {CARD_FILE})", hint="train one with `orchrm train-rm`"
        )
    try:
        raw = safejson.read(card_path)
    except (OSError, safejson.UnsafeJSONError) as exc:
        raise ModelError(f"{card_path} is not a valid model card: {exc}") from None
    if not isinstance(raw, dict) or raw.get("format") != CARD_FORMAT:
        got = raw.get("format") if isinstance(raw, dict) else type(raw).__name__
        raise ModelError(f"{card_path} has format {got!r}, expected {CARD_FORMAT!r}")
    if raw.get("card_version") != CARD_VERSION:
        raise OutdatedModel(
            f"{folder} has a v{raw.get('card_version')} model card, which does not vouch for all its files; "
            f"this orchrm reads v{CARD_VERSION}",
            hint="retrain it with `orchrm train-rm`",
        )
    try:
        card = ModelCard.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(card)"
        raise ModelError(f"{card_path} is not a valid model card: {where}: {err['msg']}") from None
    if card.render_version not in RENDER_VERSIONS:
        raise OutdatedModel(
            f"{folder} was trained on plan rendering v{card.render_version}; this orchrm renders "
            f"v{', v'.join(map(str, RENDER_VERSIONS))}",
            hint="retrain the reward model",
        )
    return card


def _load_encoder(folder: Path, card: ModelCard) -> Any:
    """The folder's whole network, after checking that its config is the architecture the card names."""
    try:
        config = safejson.read(folder / "config.json")
    except (OSError, safejson.UnsafeJSONError) as exc:
        raise ModelError(f"{folder}/config.json is unreadable: {exc}") from None
    if config.get("model_type") != card.model_type:
        raise ModelError(
            f"{folder}/config.json describes a {config.get('model_type')!r} model, its card a {card.model_type!r} one",
            hint="the weights and the card come from different backbones",
        )
    from transformers import AutoModelForSequenceClassification

    return AutoModelForSequenceClassification.from_pretrained(folder, use_safetensors=True, local_files_only=True)


class RewardModel:
    """Scores (question, plan) without running any sub-agent: higher is a better plan."""

    def __init__(self, model: Any, tokenizer: Any, card: ModelCard, path: Path | None = None) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.card = card
        self.path = path

    @property
    def device(self) -> str:
        """Where the model's weights are: 'cpu' or 'cuda' (a `torch.device` type)."""
        return str(next(self.model.parameters()).device.type)

    def to(self, device: str = "auto") -> RewardModel:
        """Move the model to `device` (auto | cpu | cuda, see `device.resolve_device`), in the dtype it scores in
        there: bf16 on a GPU that supports it, fp32 on the CPU."""
        place = resolve_device(device)
        self.model = self.model.to(device=place, dtype=scoring_dtype(place)).eval()
        return self

    @classmethod
    def load(cls, folder: str | Path, *, expect_backbone: str | None = None, device: str = "cpu") -> RewardModel:
        """The verified model folder, on `device` (auto | cpu | cuda: `device.resolve_device`; cuda without a GPU
        is refused before anything loads)."""
        resolve_device(device)
        folder = Path(folder)
        recover(folder)  # a save killed halfway through its fallback swap
        card = read_card(folder)
        if expect_backbone is not None and card.backbone != expect_backbone:
            raise ModelError(f"{folder} was trained on backbone {card.backbone!r}, not {expect_backbone!r}")
        if card.weights_file not in card.files:
            raise ModelError(f"{folder / CARD_FILE} lists no {card.weights_file}")
        _verify_files(folder, card)
        from transformers import AutoTokenizer

        with quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
            if card.backbone_kind == "decoder":
                model = load_decoder(
                    folder,
                    backbone=card.backbone,
                    sha256=card.backbone_sha256,
                    model_type=card.model_type,
                    tokenizer=tokenizer,
                )
            else:
                model = _load_encoder(folder, card)
        rm = cls(model, tokenizer, card, folder)
        return rm.to(device) if device != "cpu" else rm

    def save(self, folder: str | Path) -> Path:
        """Build the folder beside `folder` and swap it in: a kill at any point leaves the old model or the new."""
        folder = Path(folder)
        with replacing_dir(folder) as tmp:
            with quiet_transformers():
                if self.card.backbone_kind == "decoder":
                    save_adapter(self.model, tmp, self.card.backbone)
                else:
                    self.model.save_pretrained(tmp, safe_serialization=True)
                self.tokenizer.save_pretrained(tmp)
            stamp_folder(tmp, "reward-model")
            card = self.card.model_copy(update={"files": _folder_files(tmp)})
            (tmp / CARD_FILE).write_text(card.model_dump_json(indent=2) + "\n")
            normal_modes(tmp)
        self.card, self.path = card, folder
        return folder

    def score(self, question: str, plans: Sequence[Plan | str], *, batch_size: int = 64) -> list[float]:
        """One reward per plan (a `Plan` or raw orchestrator text) for one question."""
        prompt = render_question(question)
        return self.score_rendered([(prompt, self.render(p)) for p in plans], batch_size=batch_size)

    def score_items(self, items: Sequence[tuple[str, Plan | str]], *, batch_size: int = 64) -> list[float]:
        """One reward per (question, plan) item, questions mixed freely: what `score` gives each, in one batch."""
        return self.score_rendered([(render_question(q), self.render(p)) for q, p in items], batch_size=batch_size)

    def token_counts(self, question: str, plans: Sequence[Plan | str]) -> list[int]:
        """Tokens the model reads to score each plan for `question` (after truncation to `max_length`)."""
        prompt, decoder = render_question(question), self.card.backbone_kind == "decoder"
        return [
            len(encode(self.tokenizer, prompt, self.render(p), self.card.max_length, decoder=decoder)) for p in plans
        ]

    def render(self, plan: Plan | str) -> str:
        """The text of `plan` this model reads: the rendering it was trained on (its card's `render_version`)."""
        return render_plan(plan, version=self.card.render_version)

    def score_rendered(self, items: Sequence[tuple[str, str]], *, batch_size: int = 64) -> list[float]:
        """Rewards of already-rendered (prompt, plan) texts, e.g. pair rows."""
        torch = _torch()
        decoder = self.card.backbone_kind == "decoder"
        ids = [encode(self.tokenizer, p, c, self.card.max_length, decoder=decoder) for p, c in items]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # like lengths batched: less padding computed
        pad = self.tokenizer.pad_token_id or 0
        device = next(self.model.parameters()).device
        out = [0.0] * len(ids)
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                width = max(len(ids[i]) for i in chunk)
                input_ids = torch.full((len(chunk), width), pad, dtype=torch.long)
                mask = torch.zeros((len(chunk), width), dtype=torch.long)
                for row, i in enumerate(chunk):
                    input_ids[row, : len(ids[i])] = torch.tensor(ids[i])
                    mask[row, : len(ids[i])] = 1
                logits = self.model(input_ids=input_ids.to(device), attention_mask=mask.to(device)).logits
                for i, x in zip(chunk, logits.squeeze(-1).float().tolist(), strict=True):
                    out[i] = float(x)
        return out


def rm_warnings(rm: RewardModel, task: Task, spec: str) -> list[str]:
    """What the RM's card says that makes its scores on this task (named `spec` on the command line) suspect."""
    tasks = rm.card.tasks
    if tasks and not {task.name, spec} & set(tasks):
        return [f"the reward model was trained on {', '.join(tasks)}, not {spec}: its scores may not transfer"]
    return []
