"""mix:A,B,...: several tasks' questions in one pool, so one reward model must route plans per question.

Questions are interleaved one per member in turn (a member that runs out drops out), their ids prefixed
with the member's name (`chain_sum/chain_sum-1a2b...`), and `metadata["task"]`/`metadata["kind"]` name
their source (a member without kinds gives its own name as the kind); a question text already drawn from
another member is skipped (search_qa's bridge questions are also world_qa's). Each question is scored by its
own task. Splits stay by question hash (the members' own rule), so a question is in the same split alone or
mixed; within a split, members take turns, so any prefix is balanced across members. Corpus: none if no
member has one; a member's own if one has; the union of the documents if several do (the `search` agent
then searches all of them, for every question). The union refuses two documents with one id and different
texts, and a corpus that is not a `Corpus` (its documents are unknown).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..errors import ConfigError
from .base import Question, Retriever, Split, Task
from .corpus import Corpus, Document

SEPARATOR = "/"


class MixTask(Task):
    domain = "mixed"

    def __init__(self, members: list[Task], name: str | None = None) -> None:
        if len(members) < 2:
            raise ConfigError("a mix needs at least two tasks", hint="mix:world_qa,chain_sum")
        names = [m.name for m in members]
        if len(set(names)) < len(names):
            raise ConfigError(f"a mix names one task twice: {','.join(names)}")
        self.members = {m.name: m for m in members}
        self.name = name or "mix:" + ",".join(names)
        self.domain = "mixed: " + "; ".join(dict.fromkeys(m.domain for m in members))
        self.corpus = _joint_corpus(members)

    def questions(self, n: int, *, split: Split = "train", seed: int = 0) -> list[Question]:
        """The first `n` questions of `split`, one per member in turn (interleaved within the split, so every
        prefix is balanced across members whatever their pools' split rates)."""
        if split not in ("train", "test"):
            raise ConfigError(f"unknown split {split!r}; use train or test")
        out: list[Question] = []
        stream = self._interleaved(lambda task: _split_stream(task, split, seed))
        for q in stream:
            out.append(q)
            if len(out) == n:
                return out
        raise ConfigError(f"task {self.name} has only {len(out)} {split} questions, asked for {n}")

    def _pool(self, seed: int) -> Iterator[Question]:
        return self._interleaved(lambda task: task._pool(seed))

    def _interleaved(self, pool_of: Callable[[Task], Iterator[Question]]) -> Iterator[Question]:
        streams = {name: iter(pool_of(task)) for name, task in self.members.items()}
        texts: set[str] = set()
        while streams:
            for name in list(streams):
                q = next(streams[name], None)
                if q is None:
                    del streams[name]
                    continue
                if q.question in texts:
                    continue  # one question twice (search_qa's bridges are world_qa's too): keep the first
                texts.add(q.question)
                kind = q.metadata.get("kind") or name
                yield q.model_copy(
                    update={"id": f"{name}{SEPARATOR}{q.id}", "metadata": {**q.metadata, "task": name, "kind": kind}}
                )

    def source(self, question: Question) -> tuple[Task, Question]:
        """The member task a mixed question comes from, and the question as that task asked it. Found by the
        id's prefix, so a question rebuilt from a trace (no metadata) still finds its scorer."""
        name, sep, own_id = question.id.partition(SEPARATOR)
        task = self.members.get(name) if sep else None
        if task is None:
            raise ConfigError(f"question {question.id!r} is not from this mix ({', '.join(self.members)})")
        metadata = dict(question.metadata)
        metadata.pop("task", None)
        if metadata.get("kind") == name:
            metadata.pop("kind")  # added by the mix, not the member's own
        return task, question.model_copy(update={"id": own_id, "metadata": metadata})

    def split(self, question: Question) -> Split:
        task, own = self.source(question)
        return task.split(own)

    def score(self, prediction: str | None, question: Question) -> float:
        task, own = self.source(question)
        return task.score(prediction, own)

    def correct(self, prediction: str | None, question: Question) -> tuple[float, bool]:
        task, own = self.source(question)
        return task.correct(prediction, own)  # the member's own `correct_at`


def parse_mix(spec: str, load: Callable[[str], Task]) -> MixTask:
    """`mix:A,B,...` -> a MixTask over the tasks `load` opens by name."""
    names = [s.strip() for s in spec.removeprefix("mix:").split(",") if s.strip()]
    if any(n.startswith("mix:") for n in names):
        raise ConfigError(f"a mix cannot contain a mix: {spec!r}")
    return MixTask([load(n) for n in names], name=spec)


def _joint_corpus(members: list[Task]) -> Retriever | None:
    corpora = [m.corpus for m in members if m.corpus is not None]
    if not corpora:
        return None
    if len(corpora) == 1:
        return corpora[0]
    documents: dict[str, Document] = {}
    for corpus in corpora:
        if not isinstance(corpus, Corpus):
            raise ConfigError(f"cannot join a {type(corpus).__name__} with other corpora: its documents are unknown")
        for doc in corpus.documents:
            seen = documents.get(doc.id)
            if seen is not None and seen.text != doc.text:
                raise ConfigError(f"two tasks of the mix hold different documents with id {doc.id!r}")
            documents.setdefault(doc.id, doc)
    if all(len(c.documents) == len(documents) for c in corpora):  # type: ignore[attr-defined]
        return corpora[0]  # the same collection twice (search_qa and world_qa share a world)
    return Corpus(list(documents.values()))


def _split_stream(task: Task, split: Split, seed: int) -> Iterator[Question]:
    """A member's distinct questions of one split, in its pool's order (what `Task.questions` takes from)."""
    seen: set[str] = set()
    for q in task._pool(seed):
        if task.split(q) == split and q.id not in seen:
            seen.add(q.id)
            yield q
