"""Trainable weights of an embedded model: its GGUF converted once to a transformers folder.

The orchestrator policy (`grpo`) trains from these weights and the decoder RM backbone (`rm`) starts from
them, so they live here, upstream of both.

transformers reads a Qwen2 GGUF (through the `gguf` package) but marks the result untrainable and
unsaveable: it is loaded under a GGUF "quantization". Conversion loads it dequantized, drops that
quantization, rebuilds the model from its plain config, copies the weights in and saves safetensors with
the tokenizer (the GGUF carries the vocabulary and the chat template). The folder is cached under the
GGUF's sha256 and swapped in whole; a card lists every file's sha256 and is checked on every load. Nothing
is ever downloaded: the GGUF is the one `orchrm models prepare` verified.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from filelock import FileLock
from pydantic import BaseModel, Field, ValidationError

from .. import safejson
from ..atomic import recover, replacing_dir
from ..errors import ChecksumMismatch, ConfigError, ModelError
from ..paths import cache_dir
from ..version import __version__
from .models import resolve_model, sha256_file

CARD_FILE = "orchrm-policy.json"
CARD_FORMAT = "orchrm-policy-weights"
CARD_VERSION = 1
DType = Literal["float32", "bfloat16"]


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


class WeightsCard(BaseModel):
    """What a converted folder was made from, and the sha256 of every file in it but this card."""

    format: str = CARD_FORMAT
    card_version: int = CARD_VERSION
    orchrm_version: str = __version__
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    source: str = Field(description="The embedded model name or GGUF file it was converted from.")
    gguf_sha256: str
    dtype: DType
    model_type: str
    files: dict[str, str] = Field(default_factory=dict)


@dataclass(frozen=True)
class PolicyWeights:
    """A transformers folder safe to train from: `sha256` names what it came from (GGUF or weights file);
    `gguf` is that GGUF (sha256-checked), which llama-server can sample from, or None for a local folder."""

    name: str
    path: Path
    sha256: str
    gguf: Path | None = None


def file_digests(folder: Path, skip: str = CARD_FILE) -> dict[str, str]:
    """sha256 of every file under `folder` but the card (`skip`) that lists them: the check behind the
    converted weights, the checkpoint seals and the adapter card."""
    return {
        p.relative_to(folder).as_posix(): sha256_file(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.relative_to(folder).as_posix() != skip
    }


def mismatch(present: dict[str, str], listed: dict[str, str]) -> str | None:
    """The first file that is extra, missing or changed against a card's list, or None when all match."""
    bad = sorted(set(present) ^ set(listed)) or sorted(k for k in present if present[k] != listed[k])
    return bad[0] if bad else None


def read_card(folder: Path) -> WeightsCard:
    """The folder's card after checking every file against it; a changed, missing or extra file refuses."""
    path = folder / CARD_FILE
    try:
        card = WeightsCard.model_validate(safejson.read(path))
    except (OSError, safejson.UnsafeJSONError, ValidationError) as exc:
        raise ModelError(
            f"{path} is not a valid policy-weights card ({type(exc).__name__})",
            hint="delete the folder to convert again",
        ) from None
    if card.format != CARD_FORMAT or card.card_version != CARD_VERSION:
        raise ModelError(f"{path} is a {card.format} v{card.card_version} card, expected {CARD_FORMAT} v{CARD_VERSION}")
    bad = mismatch(file_digests(folder), card.files)
    if bad is not None:
        raise ChecksumMismatch(
            f"{folder / bad} does not match its card; refusing to load the converted weights",
            hint="delete the folder; the next run converts the GGUF again",
        )
    return card


def convert_gguf(gguf: Path, target: Path, *, source: str, sha256: str, dtype: DType = "float32") -> Path:
    """Write the GGUF's weights and tokenizer to `target` as a plain transformers folder (built beside it,
    swapped in whole)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    try:
        import gguf as _gguf_package  # noqa: F401 (transformers reads GGUF files through it)
    except ImportError:
        raise ConfigError("converting a GGUF for training needs the gguf package", hint="pip install gguf") from None

    torch_dtype = getattr(torch, dtype)
    with quiet_transformers():
        # dequantize=True: dense tensors, not GGUF blocks, so the state dict is ordinary weights.
        packed = AutoModelForCausalLM.from_pretrained(
            gguf.parent,
            gguf_file=gguf.name,
            quantization_config=GgufConfig(dequantize=True),
            dtype=torch.float32,
            local_files_only=True,
        )
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
        plain = packed.config.to_dict()
        plain.pop("quantization_config", None)
        config = type(packed.config).from_dict(plain)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        model.load_state_dict(packed.state_dict(), strict=True)
        model = model.to(torch_dtype)
        del packed
        with replacing_dir(target) as tmp:
            model.save_pretrained(tmp, safe_serialization=True)
            if not (tmp / "config.json").is_file():  # a process other than rank 0 of a started process group
                raise ModelError(
                    f"transformers wrote no weights converting {gguf.name} in this process",
                    hint="convert it in one process first (policy_weights), then launch the others",
                )
            tokenizer.save_pretrained(tmp)
            card = WeightsCard(
                source=source, gguf_sha256=sha256, dtype=dtype, model_type=config.model_type, files=file_digests(tmp)
            )
            (tmp / CARD_FILE).write_text(card.model_dump_json(indent=2) + "\n")
    return target


def converted_dir(sha256: str, dtype: DType) -> Path:
    return cache_dir() / "policies" / f"{sha256[:32]}-{dtype}"


def policy_weights(name_or_path: str | Path, *, dtype: DType = "float32") -> PolicyWeights:
    """Trainable weights for an embedded model name or GGUF file (converted once, cached by sha256), or a
    local transformers folder holding safetensors (used as it is)."""
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return _local_folder(path)
    gguf = resolve_model(str(name_or_path))  # sha256-verified against the pinned value for embedded models
    target = converted_dir(gguf.sha256, dtype)
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        recover(target)
        if not target.is_dir():
            convert_gguf(gguf.path, target, source=gguf.name, sha256=gguf.sha256, dtype=dtype)
    card = read_card(target)
    if card.gguf_sha256 != gguf.sha256:
        raise ChecksumMismatch(f"{target} was converted from another GGUF ({card.gguf_sha256[:16]}…)", hint="delete it")
    return PolicyWeights(name=gguf.name, path=target, sha256=gguf.sha256, gguf=gguf.path)


def _local_folder(path: Path) -> PolicyWeights:
    if not (path / "config.json").is_file():
        raise ConfigError(f"{path} is not a transformers model folder (no config.json)")
    pickled = sorted(p.name for p in path.iterdir() if p.suffix in (".bin", ".pt", ".pth", ".pkl"))
    if pickled:
        raise ModelError(f"{path} holds pickled weights ({pickled[0]}); orchrm loads safetensors only")
    weights = sorted(path.glob("*.safetensors"))
    if not weights:
        raise ModelError(f"{path} has no .safetensors weights")
    if (path / CARD_FILE).is_file():
        card = read_card(path)
        return PolicyWeights(name=card.source, path=path, sha256=card.gguf_sha256)
    digest = sha256_file(weights[0]) if len(weights) == 1 else _combined(weights)
    return PolicyWeights(name=path.name, path=path.resolve(), sha256=digest)


def _combined(files: list[Path]) -> str:
    import hashlib

    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.name}:{sha256_file(f)}\n".encode())
    return h.hexdigest()
