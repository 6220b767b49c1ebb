"""The run folder's contract, in one place: which questions a run config covers, which traces belong to it, and
the settings file that makes a resumed run the same run.

A run folder holds `run.json` (the `RunConfig` it was made with, plus when) and `traces.jsonl` (one `Trace`
per (question, plan), appended as they finish; a file written by `TraceWriter`, read by `read_traces`). A
folder may hold more than one config needs: a run grown to more questions or plans, or a duplicate line left
by a kill between write and flush. `run_traces` is the one rule for what a config reads back: the config's
own questions, plan indices below N, the first trace of each index (`first_plans` groups it by question).
The rollout resumes by it, and pairs and best-of-N select by it, so they never disagree on what a run holds.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from .. import safejson
from ..atomic import write_text_atomic
from ..errors import ConfigError, RunFileError
from ..folders import FolderKind, folder_kind, require_kind, stamp_folder
from ..tasks.base import Question, Task
from .run_config import RunConfig
from .traces import RUN_FILE, Trace

#: Settings a resumed rollout may grow: asking for more questions or plans extends the run.
GROWABLE = frozenset({"n_questions", "n_plans"})
#: Where the settings came from, not what they are: a run resumed under another profile name with the same values
#: is the same run.
LABELS = frozenset({"profile", "model_name", "agent_model_name"})

Settings = TypeVar("Settings", bound=BaseModel)


def run_questions(task: Task, n_questions: int, split: str, seed: int, skip: int = 0) -> list[Question]:
    """The questions a run covers, in the order it runs them: the one place runs enumerate a task. The first
    `skip` of the split are passed over (questions an earlier run chose a model on), so growing `n_questions`
    extends the same held-out list."""
    return task.questions(skip + n_questions, split=split, seed=seed)[skip:]


def run_traces(traces: Iterable[Trace], question_ids: Iterable[str], n: int) -> list[Trace]:
    """The traces a config reads back, in file order: its questions' plans with index below `n`, the first
    trace of each (question, index) — a later duplicate (a line a kill left twice) is not read."""
    wanted = set(question_ids)
    seen: set[tuple[str, int]] = set()
    out: list[Trace] = []
    for t in traces:
        if t.question_id in wanted and t.plan_index < n and (t.question_id, t.plan_index) not in seen:
            seen.add((t.question_id, t.plan_index))
            out.append(t)
    return out


def first_plans(traces: Iterable[Trace], question_ids: Iterable[str], n: int) -> dict[str, list[Trace]]:
    """`run_traces` grouped by question, each question's plans in index order. Every wanted question is a key,
    with an empty list when the folder holds none of its plans."""
    ids = list(question_ids)
    by_q: dict[str, list[Trace]] = {q: [] for q in ids}
    for t in run_traces(traces, ids, n):
        by_q[t.question_id].append(t)
    return {q: sorted(plans, key=lambda t: t.plan_index) for q, plans in by_q.items()}


@dataclass
class RunFile(Generic[Settings]):
    """A folder's settings file, checked: `config` is what the run goes on with, `data` what the file holds once
    the run is done, `on_disk` what it holds now (None: no file yet)."""

    path: Path
    config: Settings
    data: dict[str, Any]
    on_disk: Any
    kind: FolderKind | None = None  # the folder's stamp, written with the file (a folder made before stamps gets one)

    @property
    def new(self) -> bool:
        return self.on_disk is None

    def write(self) -> None:
        """Write the file (atomically) unless it already holds `data`: a resume with the same settings leaves it."""
        if self.data != self.on_disk:
            write_text_atomic(self.path, json.dumps(self.data, indent=2) + "\n")
            self.on_disk = self.data
        if self.kind is not None and folder_kind(self.path.parent) is None:
            stamp_folder(self.path.parent, self.kind)


def open_run_file(
    folder: Path,
    config: Settings,
    differences: Callable[[Settings, Settings], list[str]],
    *,
    name: str = RUN_FILE,
    what: str = "a run",
    stamp: bool = False,
    kept: Callable[[Settings, Settings], Settings] | None = None,
    kind: FolderKind | None = None,
) -> RunFile[Settings]:
    """Create `folder`, and check that the settings file it holds (if any) describes the same run; writes nothing.

    `kept(new, old)` is `new` with what a resumed run keeps from the one it resumes (e.g. a rollout's version,
    which decides how its plans are seeded). `differences(new, old)` then names what changed in a way a resume
    cannot honour; any such change is a one-line `ConfigError`, and an unreadable file a `RunFileError`,
    before anything in the folder is touched. With `stamp`, the file records when the run was made; a resume
    keeps the first stamp. With `kind`, a folder stamped as another kind is refused, and writing the file stamps
    the folder (`orchrm.folders`)."""
    if kind is not None:
        require_kind(folder, kind)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    on_disk: Any = None
    if path.exists():
        on_disk, old = _read_settings(path, type(config), "use a new --out folder")
        config = kept(config, old) if kept is not None else config
        diff = differences(config, old)
        if diff:
            raise ConfigError(
                f"{folder} holds {what} made with other settings ({', '.join(diff)})", hint="use a new --out folder"
            )
    data = config.model_dump(mode="json")
    if stamp:
        created = on_disk.get("created") if isinstance(on_disk, dict) else None
        data["created"] = created if isinstance(created, str) else dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return RunFile(path, config, data, on_disk, kind)


def settle_run_file(
    folder: Path, config: Settings, differences: Callable[[Settings, Settings], list[str]], **kw: Any
) -> Settings:
    """`open_run_file`, then (re)write the file at once; returns the settings the run goes on with. A rollout
    instead writes a grown file only once it has finished (`arollout`)."""
    run_file = open_run_file(folder, config, differences, **kw)
    run_file.write()
    return run_file.config


def _read_settings(path: Path, model: type[Settings], hint: str) -> tuple[Any, Settings]:
    """(the file's JSON, the settings it holds); an unreadable or invalid file is a `RunFileError`."""
    try:
        on_disk = safejson.read(path)
        return on_disk, model.model_validate(on_disk)
    except safejson.UnsafeJSONError as exc:
        raise RunFileError(f"{path}: not a valid run config ({exc})", hint=hint) from None
    except ValidationError as exc:
        raise RunFileError(f"{path}: not a valid run config ({type(exc).__name__})", hint=hint) from None


def read_settings(folder: Path, model: type[Settings], hint: str, name: str = RUN_FILE) -> Settings:
    """The settings `folder`'s settings file holds (`run.json`, or `name`), typed as `model`: the one reader
    behind each folder kind's own (`read_run_config` here, a training run's, a loop's). A missing, unreadable
    or invalid file is a `RunFileError` with `hint`."""
    if not (folder / name).is_file():
        raise RunFileError(f"{folder} has no {name}", hint=hint)
    return _read_settings(folder / name, model, hint)[1]


def read_run_config(run: Path) -> RunConfig:
    """The `RunConfig` a rollout's folder was made with: the one reader of its `run.json`."""
    return read_settings(run, RunConfig, "pass a run folder made by `orchrm rollout`")


def rollout_differences(new: BaseModel, old: BaseModel) -> list[str]:
    """A rollout's settings that differ, as `name: old -> new`; the growable ones never count."""
    mine, theirs = new.model_dump(), old.model_dump()
    kept = (k for k in mine if k not in GROWABLE | LABELS)
    return [f"{k}: {theirs.get(k)!r} -> {mine[k]!r}" for k in kept if mine[k] != theirs.get(k)]
