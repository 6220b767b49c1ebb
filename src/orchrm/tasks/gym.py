"""reasoning-gym tasks: any of its procedural generators by name, scored by the generator's own scorer, and
on math generators also by the result the answer states (`scoring.result_matches`): the generators' scorers
want the bare answer, so "825 - 515 = 310" against 310 scored 0.2."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import ConfigError
from .base import Question, Task, short_hash
from .scoring import result_matches

#: Generators orchrm names in its docs; any other reasoning-gym generator works by name too.
GYM_TASKS = ("gsm_symbolic", "basic_arithmetic", "chain_sum", "family_relationships")


def gym_names() -> list[str]:
    import reasoning_gym.factory

    return sorted(reasoning_gym.factory.DATASETS)


class GymTask(Task):
    domain = "math and reasoning"

    def __init__(self, generator: str, **config: Any) -> None:
        if generator not in gym_names():
            raise ConfigError(f"reasoning-gym has no generator {generator!r}", hint="see `orchrm rollout --help`")
        self.name = generator
        self.generator = generator
        self.config = config
        self.domain = "relationships" if generator == "family_relationships" else "math"
        self._datasets: dict[tuple[int, int], Any] = {}

    def _dataset(self, seed: int, size: int) -> Any:
        import reasoning_gym

        key = (seed, size)
        if key not in self._datasets:
            self._datasets[key] = reasoning_gym.create_dataset(self.generator, size=size, seed=seed, **self.config)
        return self._datasets[key]

    def _pool(self, seed: int) -> Iterator[Question]:
        size = 64
        start = 0
        while size <= 65536:
            ds = self._dataset(seed, size)
            for i in range(start, size):
                entry = ds[i]
                yield Question(
                    id=f"{self.generator}-{short_hash(entry['question'])}",
                    question=entry["question"],
                    answer=str(entry["answer"]),
                    metadata={"entry": entry, "index": i, "seed": seed},
                )
            # reasoning-gym datasets are prefix-stable in size for a seed, so grow and continue.
            start, size = size, size * 4

    def score(self, prediction: str | None, question: Question) -> float:
        if prediction is None:
            return 0.0
        entry = question.metadata.get("entry")
        value = (
            0.0
            if entry is None
            else float(self._dataset(question.metadata["seed"], 64).score_answer(prediction, entry))
        )
        if value < 1.0 and self.domain == "math" and result_matches(prediction, question.answer):
            value = 1.0  # the stated result is right; the generator only disliked the working around it
        return value
