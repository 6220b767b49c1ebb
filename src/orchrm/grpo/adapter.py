"""A trained orchestrator's adapter folder: written at the end of training (`save_adapter`, with a card
naming the base weights and every file's sha256), and served by llama-server (checked, converted to GGUF once,
cached).

`served_adapter` takes what `orchrm train-orchestrator` leaves behind — the final `adapter/` folder, one
sealed `checkpoints/checkpoint-N/`, or the run folder itself (its adapter, else its last sealed checkpoint)
— checks every file against the folder's card or seal and that it was trained on the orchestrator's own
GGUF, and returns the adapter as a GGUF file for `llama-server --lora`. The conversion is llama.cpp's own
`convert_lora_to_gguf.py`; its output is cached under the digest of the peft files it reads, with the
GGUF's sha256 in a card that is checked on every later use.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from .. import safejson
from ..atomic import replacing_dir, write_text_atomic
from ..errors import ChecksumMismatch, ConfigError, ServerError
from ..hashing import sha256_file
from ..llm.models import AdapterFile, resolve_model
from ..llm.weights import PolicyWeights, file_digests, mismatch, policy_weights, quiet_transformers
from ..paths import cache_dir
from ..version import __version__
from .checkpoints import CHECKPOINTS_DIR, SEAL_FILE, Seal, last_checkpoint, run_of
from .config import GRPORunConfig, read_training_config

ADAPTER_DIR = "adapter"  # in a run folder
ADAPTER_CARD = "orchrm-adapter.json"
PEFT_FILES = ("adapter_config.json", "adapter_model.safetensors")  # all the converter reads
_CACHE_CARD = "orchrm-adapter-gguf.json"


class AdapterCard(BaseModel):
    """What an adapter folder was trained from and on, and the sha256 of every file in it but this card."""

    format: str = "orchrm-orchestrator-adapter"
    card_version: int = 1
    orchrm_version: str = __version__
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    base: str
    base_sha256: str
    steps: int
    config: GRPORunConfig
    files: dict[str, str] = Field(default_factory=dict)


class _Converted(BaseModel):
    peft_digest: str
    gguf_sha256: str


def convert_lora(peft_dir: Path, base_config: Path, out: Path) -> Path:
    """`peft_dir`'s LoRA adapter as a GGUF adapter (f32, as trained) at `out`, written beside and renamed in.
    `base_config` is a folder holding the base model's `config.json`."""
    from ..llm.server_build import ensure_lora_converter

    tmp = out.with_name(out.name + ".tmp")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}  # the base config is local; never ask the hub
    env.pop("NO_LOCAL_GGUF", None)  # the script must use its own gguf-py, matching the server
    cmd = [
        sys.executable,
        str(ensure_lora_converter()),
        "--base",
        str(base_config),
        "--outfile",
        str(tmp),
        "--outtype",
        "f32",
        str(peft_dir),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0 or not tmp.is_file():
        raise ServerError(
            f"converting the LoRA adapter in {peft_dir} to GGUF failed (exit {proc.returncode})",
            detail=proc.stderr[-2000:],
        )
    os.replace(tmp, out)
    return out


def _checked(folder: Path) -> tuple[str, str, dict[str, str]]:
    """(base GGUF sha256, label, every file's sha256) of a verified adapter or sealed checkpoint folder."""
    card_path, seal_path = folder / ADAPTER_CARD, folder / SEAL_FILE
    try:
        if card_path.is_file():
            card = AdapterCard.model_validate(safejson.read(card_path))
            listed, base, step = card.files, card.base_sha256, card.steps
            skip, run = ADAPTER_CARD, folder.parent  # the adapter is its run's ADAPTER_DIR
        elif seal_path.is_file():
            seal = Seal.model_validate(safejson.read(seal_path))
            listed, step, skip, run = seal.files, seal.step, SEAL_FILE, run_of(folder)
            base = read_training_config(run).policy_sha256
        else:
            raise ConfigError(
                f"{folder} holds no trained orchestrator adapter (no {ADAPTER_CARD} or {SEAL_FILE})",
                hint="pass a train-orchestrator run folder, its adapter/ or one of its checkpoints/checkpoint-N",
            )
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(card)"
        raise ConfigError(f"{folder}: unreadable adapter card or seal ({where}: {err['msg']})") from None
    except (OSError, KeyError, TypeError, ValueError, safejson.UnsafeJSONError) as exc:
        raise ConfigError(f"{folder}: unreadable adapter card or seal ({type(exc).__name__}: {exc})") from None
    bad = mismatch(file_digests(folder, skip), listed)
    if bad is not None:
        raise ChecksumMismatch(f"{folder / bad} does not match the sha256 its card or seal lists; refusing to serve it")
    missing = [f for f in PEFT_FILES if f not in listed]
    if missing:
        raise ConfigError(f"{folder} lacks {', '.join(missing)}: not a LoRA adapter")
    return base, f"{run.name}:step-{step}", listed


def adapter_folder(path: Path) -> Path:
    """The adapter a path names: itself when it holds a card or seal; for a run folder, its final adapter,
    else its last sealed checkpoint."""
    path = path.expanduser()
    if not path.is_dir():
        raise ConfigError(f"adapter folder {path} does not exist")
    if (path / ADAPTER_CARD).is_file() or (path / SEAL_FILE).is_file():
        return path
    if (path / ADAPTER_DIR / ADAPTER_CARD).is_file():
        return path / ADAPTER_DIR
    found = last_checkpoint(path / CHECKPOINTS_DIR)
    if found is None:
        raise ConfigError(
            f"{path} holds no trained orchestrator adapter and no sealed checkpoint",
            hint="pass a train-orchestrator run folder, its adapter/ or one of its checkpoints/checkpoint-N",
        )
    return found


def served_adapter(path: Path, model: str) -> AdapterFile:
    """The adapter at `path` (see `adapter_folder`) as a verified GGUF adapter for `model`'s llama-server."""
    folder = adapter_folder(path)
    base, label, digests = _checked(folder)
    model_file = resolve_model(model)
    if base != model_file.sha256:
        raise ConfigError(
            f"{folder} was trained on gguf:{base[:12]}…, "
            f"not on the orchestrator model {model} (gguf:{model_file.sha256[:12]}…)",
            hint="serve it with the model it was trained from (--model)",
        )
    digest = hashlib.sha256("".join(f"{f}:{digests[f]};" for f in PEFT_FILES).encode()).hexdigest()  # checked just now
    home = cache_dir() / "adapters" / digest
    gguf, card_path = home / "adapter.gguf", home / _CACHE_CARD
    if card_path.is_file() and gguf.is_file():
        try:
            known = _Converted.model_validate(safejson.read(card_path))
        except (OSError, safejson.UnsafeJSONError, ValidationError):
            known = None
        if known is not None and known.peft_digest == digest and sha256_file(gguf) == known.gguf_sha256:
            return AdapterFile(name=label, path=gguf, sha256=known.gguf_sha256)
    home.mkdir(parents=True, exist_ok=True)
    convert_lora(folder, policy_weights(model).path, gguf)
    sha = sha256_file(gguf)
    write_text_atomic(card_path, _Converted(peft_digest=digest, gguf_sha256=sha).model_dump_json() + "\n")
    return AdapterFile(name=label, path=gguf, sha256=sha)


def save_adapter(
    model: Any, tokenizer: Any, folder: Path, weights: PolicyWeights, config: GRPORunConfig, steps: int
) -> Path:
    """The trained adapter (safetensors), the tokenizer and a card with every file's sha256, swapped in whole."""
    with replacing_dir(folder) as tmp, quiet_transformers():
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        card = AdapterCard(
            base=weights.name,
            base_sha256=weights.sha256,
            steps=steps,
            config=config,
            files=file_digests(tmp, ADAPTER_CARD),
        )
        (tmp / ADAPTER_CARD).write_text(card.model_dump_json(indent=2) + "\n")
    return folder
