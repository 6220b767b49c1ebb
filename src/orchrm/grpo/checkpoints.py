"""Checkpoints of a training run, and which one a resumed run continues from.

TRL writes `checkpoint-N/` (the LoRA adapter as safetensors, the optimizer, scheduler and RNG state a
resume needs, and `trainer_state.json`), but not atomically: a kill -9 during a save leaves a folder that
looks like a checkpoint. So after TRL's save, `CheckpointSeal` writes a seal (`orchrm-checkpoint.json`,
atomically) holding the sha256 of every file and the run's token totals so far; only a sealed checkpoint
whose files still match is resumed from, and unsealed ones after it (a save cut short) are removed. Under
several processes the main process seals, once every process has written its part of the checkpoint.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from .. import safejson
from ..atomic import write_text_atomic
from ..errors import ChecksumMismatch
from ..llm.weights import file_digests, mismatch
from .accounting import write_totals

SEAL_FILE = "orchrm-checkpoint.json"
CHECKPOINTS_DIR = "checkpoints"  # in a run folder: `checkpoints/checkpoint-N/`
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


class Seal(BaseModel):
    step: int
    files: dict[str, str]
    tokens: dict[str, Any]


def seal(folder: Path, step: int, tokens: dict[str, Any]) -> None:
    write_text_atomic(
        folder / SEAL_FILE,
        Seal(step=step, files=file_digests(folder, SEAL_FILE), tokens=tokens).model_dump_json(indent=2) + "\n",
    )


def _read_seal(folder: Path) -> Seal | None:
    try:
        return Seal.model_validate(safejson.read(folder / SEAL_FILE))
    except (OSError, safejson.UnsafeJSONError, ValidationError):
        return None


def checkpoints(folder: Path) -> list[tuple[int, Path]]:
    """`checkpoint-N` folders by step."""
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if p.is_dir() and (m := _CHECKPOINT.match(p.name))]
    return sorted(found)


def run_of(checkpoint: Path) -> Path:
    """The run folder a `checkpoint-N` folder belongs to (`<run>/checkpoints/checkpoint-N`)."""
    return checkpoint.parent.parent


def checkpoint_step(folder: Path) -> int:
    """The optimiser step a `checkpoint-N` folder was saved at."""
    m = _CHECKPOINT.match(folder.name)
    if m is None:
        raise ValueError(f"{folder} is not a checkpoint-N folder")
    return int(m.group(1))


def last_checkpoint(folder: Path) -> Path | None:
    """The newest sealed checkpoint (its files checked against the seal); unsealed newer ones are removed."""
    for _step, path in reversed(checkpoints(folder)):
        s = _read_seal(path)
        if s is None:
            shutil.rmtree(path)  # a save cut short by a kill: TRL would otherwise resume from it
            continue
        bad = mismatch(file_digests(path, SEAL_FILE), s.files)
        if bad is not None:
            raise ChecksumMismatch(
                f"{path / bad} changed after the checkpoint was sealed; refusing to resume from it",
                hint="restore it, or delete the checkpoint to resume from an earlier one",
            )
        return path
    return None


def make_seal_callback(run_dir: Path, processes: Any) -> Any:
    """A TrainerCallback that seals each checkpoint TRL saves and rewrites `tokens.json` (the main process of
    `processes`, accelerate's `PartialState`, once every process has saved its part)."""
    from transformers import TrainerCallback

    class CheckpointSeal(TrainerCallback):  # type: ignore[misc]
        def on_save(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            processes.wait_for_everyone()  # each process writes its own RNG state into the checkpoint
            if not processes.is_main_process:
                return
            tokens = write_totals(run_dir)  # past the wait, every process's records of this step are on disk
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if folder.is_dir():
                seal(folder, state.global_step, tokens)

    return CheckpointSeal()
