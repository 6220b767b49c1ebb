"""A persistent response cache: re-running an experiment spends no tokens on calls already made.

SQLite in WAL mode; each entry is written in its own transaction, so a killed process leaves either the
whole entry or none of it. Only successful, schema-valid completions are stored.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from ..errors import ConfigError
from .types import Completion

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model_id TEXT NOT NULL,
    completion TEXT NOT NULL,
    created REAL NOT NULL
)
"""


class ResponseCache:
    """Maps a cache key (see `types.cache_key`) to the completion first produced for it."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"response cache {self.path} cannot be opened: {exc}",
                hint="delete the file or point ORCHRM_RESPONSE_CACHE elsewhere",
            ) from exc

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._db.execute("SELECT completion FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        completion = Completion.model_validate_json(row[0])
        return completion.model_copy(update={"cached": True, "latency_s": 0.0})

    def put(self, key: str, backend: str, model_id: str, completion: Completion) -> None:
        blob = completion.model_copy(update={"cached": False}).model_dump_json()
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, backend, model_id, completion, created) VALUES (?, ?, ?, ?, ?)",
                (key, backend, model_id, blob, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def clear(self) -> None:
        with self._lock:
            self._db.execute("DELETE FROM responses")

    def close(self) -> None:
        with self._lock:
            self._db.close()
