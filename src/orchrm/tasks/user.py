"""User data: a JSONL file of {id, question, answer} rows, or a `datasets` dataset (local files or the hub)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import safejson
from ..errors import ConfigError
from .base import Question, Task
from .scoring import exact_match, numeric_match, token_f1


def default_score(prediction: str | None, gold: str) -> float:
    """Numbers by value; text by exact match (normalised), else 0."""
    if prediction is None:
        return 0.0
    number = numeric_match(prediction, gold)
    if number is not None:
        return float(number)
    return 1.0 if exact_match(prediction, gold) else 0.0


class _RowsTask(Task):
    domain = "general"

    def __init__(self, name: str, rows: list[Question]) -> None:
        self.name = name
        self.rows = rows

    def _pool(self, seed: int) -> Iterator[Question]:
        yield from self.rows

    def score(self, prediction: str | None, question: Question) -> float:
        return default_score(prediction, question.answer)

    def f1(self, prediction: str, question: Question) -> float:
        return token_f1(prediction, question.answer)


class JsonlTask(_RowsTask):
    """Rows `{"id", "question", "answer"}`, one JSON object a line; a bad line is an error naming it."""

    def __init__(self, path: Path) -> None:
        if not path.exists():
            raise ConfigError(f"no such task file: {path}")
        rows: list[Question] = []
        seen: set[str] = set()
        for lineno, line in enumerate(path.read_text().splitlines(), start=1):
            if not line.strip():
                continue
            try:
                value = safejson.loads(line, safejson.FILE)
                q = Question(id=str(value["id"]), question=str(value["question"]), answer=str(value["answer"]))
            except (safejson.UnsafeJSONError, KeyError, TypeError) as exc:
                raise ConfigError(
                    f"{path}:{lineno}: expected a JSON object with id, question and answer "
                    f"({type(exc).__name__}: {exc})"
                ) from None
            if q.id in seen:
                raise ConfigError(f"{path}:{lineno}: duplicate id {q.id!r}")
            seen.add(q.id)
            rows.append(q)
        super().__init__(f"jsonl:{path.name}", rows)


class DatasetTask(_RowsTask):
    """A `datasets` dataset: a local .jsonl/.json/.csv/.parquet file, a saved dataset folder, or a hub name."""

    def __init__(
        self,
        source: str,
        *,
        split: str = "train",
        config: str | None = None,
        question_field: str = "question",
        answer_field: str = "answer",
        id_field: str | None = "id",
    ) -> None:
        try:
            import datasets
        except ImportError as exc:  # pragma: no cover - installed with orchrm
            raise ConfigError("reading a dataset needs the `datasets` package", hint="pip install datasets") from exc
        data = _load(datasets, source, split, config)
        missing = [f for f in (question_field, answer_field) if f not in data.column_names]
        if missing:
            raise ConfigError(f"dataset {source} has no column {missing[0]!r}; columns: {', '.join(data.column_names)}")
        rows: list[Question] = []
        for i, row in enumerate(data):
            qid = str(row[id_field]) if id_field and id_field in row else f"{i}"
            rows.append(Question(id=qid, question=str(row[question_field]), answer=_text(row[answer_field])))
        super().__init__(f"hf:{source}", rows)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _load(datasets: Any, source: str, split: str, config: str | None) -> Any:
    path = Path(source)
    try:
        if path.is_dir():
            loaded = datasets.load_from_disk(str(path))
            return loaded[split] if isinstance(loaded, datasets.DatasetDict) else loaded
        if path.is_file():
            kind = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}.get(path.suffix)
            if kind is None:
                raise ConfigError(f"cannot read {path}: use .jsonl, .json, .csv or .parquet")
            return datasets.load_dataset(kind, data_files=str(path), split="train")
        return datasets.load_dataset(source, config, split=split)
    except ConfigError:
        raise
    except Exception as exc:  # datasets raises many types; report them as one clear error
        raise ConfigError(f"cannot load dataset {source!r}: {type(exc).__name__}: {exc}") from exc
