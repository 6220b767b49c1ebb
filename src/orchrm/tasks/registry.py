"""Opening a task by its spec string, as the CLI names it."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from .base import Task

TASK_HELP = (
    "search_qa, world_qa (or world_qa:kinds=A+B;unseen=C), champ, fanoutqa, any reasoning-gym generator "
    "(gsm_symbolic, basic_arithmetic, chain_sum, family_relationships, ...), jsonl:PATH, hf:NAME_OR_FILE[#SPLIT], "
    "or mix:A,B,... (their questions interleaved in one pool)"
)


def load_task(spec: str) -> Task:
    """`search_qa`, `world_qa`, `mix:A,B,...`, `champ`, `fanoutqa`, a reasoning-gym generator name, `jsonl:PATH`
    or `hf:SOURCE[#SPLIT]`."""
    if spec == "search_qa":
        from .search_qa import SearchQATask

        return SearchQATask()
    if spec.startswith("mix:"):
        from .mix import parse_mix

        return parse_mix(spec, load_task)
    if spec == "world_qa" or spec.startswith("world_qa:"):
        from .world_qa import parse_world_qa

        return parse_world_qa(spec)
    if spec == "champ":
        from .external import ChampTask

        return ChampTask()
    if spec == "fanoutqa":
        from .external import FanOutQATask

        return FanOutQATask()
    if spec.startswith("jsonl:"):
        from .user import JsonlTask

        return JsonlTask(Path(spec.removeprefix("jsonl:")).expanduser())
    if spec.startswith("hf:"):
        from .user import DatasetTask

        source, _, split = spec.removeprefix("hf:").partition("#")
        return DatasetTask(source, split=split or "train")
    if spec.endswith(".jsonl") and Path(spec).exists():
        from .user import JsonlTask

        return JsonlTask(Path(spec))
    from .gym import GymTask, gym_names

    if spec in gym_names():
        return GymTask(spec)
    raise ConfigError(f"unknown task {spec!r}", hint=f"use {TASK_HELP}")
