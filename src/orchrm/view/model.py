"""The run as the viewer holds it, with the two readings every loader shares: the name a run is shown under
and a setting from its folder's run.json.

It sits below `runs`, `bon_runs` and `training` so each loader can build a `Run` without importing another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import safejson
from ..mas.traces import Trace


@dataclass
class Run:
    """One run as the viewer holds it: its traces by (question, plan), and for best-of-N the per-question rows
    (method picks and RM rewards), the judge's records and the results summary."""

    name: str
    kind: str  # "rollout", "train" (a loop's training rollout), "bon", or "grpo" (a train-orchestrator run)
    traces: dict[tuple[str, int], Trace]
    question_ids: list[str]
    per_question: dict[str, dict[str, Any]] = field(default_factory=dict)
    judgments: dict[str, dict[str, Any]] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    samples: dict[tuple[str, int], Any] = field(default_factory=dict)  # a grpo run's sampled plans (training.py)


def display_name(path: Path) -> str:
    parts = path.resolve().parts
    return "/".join(parts[-3:])


def run_setting(path: Path, key: str) -> int | None:
    """A positive integer setting of run.json, or None: the view reads the traces whatever the file holds."""
    if not path.exists():
        return None
    try:
        value = safejson.read(path).get(key)
    except (OSError, safejson.UnsafeJSONError, AttributeError):
        return None
    return value if type(value) is int and value > 0 else None
