"""File hashes, and the one check that a file is the one pinned: weights, model parts, folders' contents.

Neutral ground: the GGUF models (`llm/models.py`), the RM backbone (`rm/backbone.py`) and RM folders
(`rm/model.py`) all hash files here, so none imports another room just for a hash.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .errors import ChecksumMismatch


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    """Hex sha256 of a file, read in chunks (model weights are gigabytes)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def verify_pinned(path: Path, expected: str, *, hint: str, name: str | None = None) -> str:
    """Hash `path` and refuse it unless it matches the pinned `expected`; returns the digest.

    `name` says what the file should be when the path alone does not (an assembled model's cache file).
    """
    digest = sha256_file(path)
    if digest != expected:
        of = f" for {name}" if name else ""
        raise ChecksumMismatch(
            f"{path} has sha256 {digest[:16]}…, expected {expected[:16]}…{of}; refusing to load it", hint=hint
        )
    return digest
