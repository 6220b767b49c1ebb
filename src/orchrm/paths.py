"""Where orchrm keeps what it builds and downloads: one user cache, overridable for tests and CI."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_cache_dir


def cache_dir() -> Path:
    """The root of orchrm's cache: `$ORCHRM_CACHE_DIR`, else the platform's user cache."""
    root = os.environ.get("ORCHRM_CACHE_DIR")
    path = Path(root).expanduser() if root else Path(user_cache_dir("orchrm"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def responses_db() -> Path:
    """The default response-cache database (`$ORCHRM_RESPONSE_CACHE` overrides it)."""
    override = os.environ.get("ORCHRM_RESPONSE_CACHE")
    return Path(override).expanduser() if override else cache_dir() / "responses.sqlite"
