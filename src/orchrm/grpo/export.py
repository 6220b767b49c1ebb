"""A trained orchestrator adapter as llama-server serves it: checked, converted to GGUF once, cached.

`served_adapter` takes what `orchrm train-orchestrator` leaves behind — the final `adapter/` folder, one
sealed `checkpoints/checkpoint-N/`, or the run folder itself (its adapter, else its last sealed checkpoint)
— checks every file against the folder's card or seal and that it was trained on the orchestrator's own
GGUF, and returns the adapter as a GGUF file for `llama-server --lora`. The conversion is llama.cpp's own
`convert_lora_to_gguf.py`; its output is cached under the digest of the peft files it reads, with the
GGUF's sha256 in a card that is checked on every later use.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from pydantic import BaseModel, ValidationError

from ..atomic import write_text_atomic
from ..errors import ChecksumMismatch, ConfigError, ServerError
from ..hashing import sha256_file
from ..llm.models import AdapterFile, resolve_model
from ..paths import cache_dir
from .checkpoints import SEAL_FILE, Seal, last_checkpoint
from .config import GRPORunConfig
from .weights import file_digests, mismatch

ADAPTER_CARD = "orchrm-adapter.json"  # written by train.save_adapter
PEFT_FILES = ("adapter_config.json", "adapter_model.safetensors")  # all the converter reads
_CACHE_CARD = "orchrm-adapter-gguf.json"


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
    cmd = [sys.executable, str(ensure_lora_converter()), "--base", str(base_config), "--outfile", str(tmp), "--outtype", "f32", str(peft_dir)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0 or not tmp.is_file():
        raise ServerError(f"converting the LoRA adapter in {peft_dir} to GGUF failed (exit {proc.returncode})", detail=proc.stderr[-2000:])
    os.replace(tmp, out)
    return out


def _checked(folder: Path) -> tuple[str, int, str]:
    """(base GGUF sha256, step, label) of a verified adapter or sealed checkpoint folder."""
    card_path, seal_path = folder / ADAPTER_CARD, folder / SEAL_FILE
    try:
        if card_path.is_file():
            card = json.loads(card_path.read_text())
            listed, base, step = dict(card["files"]), str(card["base_sha256"]), int(card["steps"])
            skip, run = ADAPTER_CARD, folder.parent
        elif seal_path.is_file():
            seal = Seal.model_validate(json.loads(seal_path.read_text()))
            listed, step, skip, run = seal.files, seal.step, SEAL_FILE, folder.parent.parent
            base = GRPORunConfig.model_validate(json.loads((run / "run.json").read_text())).policy_sha256
        else:
            raise ConfigError(f"{folder} holds no trained orchestrator adapter (no {ADAPTER_CARD} or {SEAL_FILE})",
                              hint="pass a train-orchestrator run folder, its adapter/ or one of its checkpoints/checkpoint-N")  # fmt: skip
    except (OSError, KeyError, TypeError, ValueError, ValidationError) as exc:
        raise ConfigError(f"{folder}: unreadable adapter card or seal ({type(exc).__name__}: {exc})") from None
    bad = mismatch(file_digests(folder, skip), listed)
    if bad is not None:
        raise ChecksumMismatch(f"{folder / bad} does not match the sha256 its card or seal lists; refusing to serve it")
    missing = [f for f in PEFT_FILES if not (folder / f).is_file()]
    if missing:
        raise ConfigError(f"{folder} lacks {', '.join(missing)}: not a LoRA adapter")
    return base, step, f"{run.name}:step-{step}"


def adapter_folder(path: Path) -> Path:
    """The adapter a path names: itself when it holds a card or seal; for a run folder, its final adapter,
    else its last sealed checkpoint."""
    path = path.expanduser()
    if not path.is_dir():
        raise ConfigError(f"adapter folder {path} does not exist")
    if (path / ADAPTER_CARD).is_file() or (path / SEAL_FILE).is_file():
        return path
    if (path / "adapter" / ADAPTER_CARD).is_file():
        return path / "adapter"
    found = last_checkpoint(path / "checkpoints")
    if found is None:
        raise ConfigError(f"{path} holds no trained orchestrator adapter and no sealed checkpoint",
                          hint="pass a train-orchestrator run folder, its adapter/ or one of its checkpoints/checkpoint-N")  # fmt: skip
    return found


def served_adapter(path: Path, model: str) -> AdapterFile:
    """The adapter at `path` (see `adapter_folder`) as a verified GGUF adapter for `model`'s llama-server."""
    folder = adapter_folder(path)
    base, _, label = _checked(folder)
    model_file = resolve_model(model)
    if base != model_file.sha256:
        raise ConfigError(f"{folder} was trained on gguf:{base[:12]}…, not on the orchestrator model {model} (gguf:{model_file.sha256[:12]}…)",
                          hint="serve it with the model it was trained from (--model)")  # fmt: skip
    digest = hashlib.sha256("".join(f"{f}:{sha256_file(folder / f)};" for f in PEFT_FILES).encode()).hexdigest()
    home = cache_dir() / "adapters" / digest
    gguf, card_path = home / "adapter.gguf", home / _CACHE_CARD
    if card_path.is_file() and gguf.is_file():
        try:
            known = _Converted.model_validate_json(card_path.read_text())
        except ValidationError:
            known = None
        if known is not None and known.peft_digest == digest and sha256_file(gguf) == known.gguf_sha256:
            return AdapterFile(name=label, path=gguf, sha256=known.gguf_sha256)
    from .weights import policy_weights

    home.mkdir(parents=True, exist_ok=True)
    convert_lora(folder, policy_weights(model).path, gguf)
    sha = sha256_file(gguf)
    write_text_atomic(card_path, _Converted(peft_digest=digest, gguf_sha256=sha).model_dump_json() + "\n")
    return AdapterFile(name=label, path=gguf, sha256=sha)
