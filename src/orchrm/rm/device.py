"""Where the reward model runs: the one decision behind every `--device` (auto | cpu | cuda).

`auto` is the GPU when torch sees one (`torch.cuda.is_available()`), the CPU otherwise; `cuda` on a machine
without one is a one-line `ConfigError`, said before any model loads. Scoring on a GPU runs in bf16 where the
GPU supports it (halves memory and time; scores move by bf16's rounding), on the CPU always in fp32, so CPU
scores are what they always were.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

Device = Literal["auto", "cpu", "cuda"]
DEVICES: tuple[str, ...] = get_args(Device)
DEVICE_HELP = "Where the reward model runs: auto (the GPU when torch sees one, else the CPU), cpu or cuda."


def resolve_device(name: str = "auto") -> str:
    """'cpu' or 'cuda' for a `--device` value; `cuda` without a GPU (or an unknown name) is a one-line error."""
    from ..errors import ConfigError

    if name not in DEVICES:
        raise ConfigError(f"--device {name!r}: expected one of {', '.join(DEVICES)}")
    if name == "cpu":
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if name == "cuda":
        raise ConfigError("--device cuda: torch sees no CUDA GPU on this machine (use --device cpu or auto)")
    return "cpu"


def scoring_dtype(device: str) -> Any:
    """The dtype a reward model scores in on `device`: bf16 on a GPU that supports it, fp32 anywhere else."""
    import torch

    if device == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32
