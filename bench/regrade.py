"""Re-grade committed traces with today's task scorers, without any LLM call: which plans flip, and the traces
as today's grading would have scored them. The committed files are never rewritten; `baselines_replay.py`
reports its numbers under both gradings."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from orchrm import Trace
from orchrm.tasks import Question, Task


@dataclass
class Regrade:
    """The traces with today's grades, and how many flipped, by "<kind>: wrong→right" / "right→wrong"."""

    traces: list[Trace]
    flips: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)  # a few flipped answers against their gold


def regrade(traces: Iterable[Trace], task: Task, questions: Iterable[Question], examples: int = 5) -> Regrade:
    """Each scored trace of a known question through `task.correct` again; unscored traces pass unchanged."""
    by_id = {q.id: q for q in questions}
    out = Regrade([])
    for t in traces:
        q = by_id.get(t.question_id)
        if q is not None and t.score is not None and t.score.correct is not None:
            value, ok = task.correct(t.final_answer, q)
            if ok != t.score.correct:
                out.flips[f"{t.question_kind or t.task}: {'wrong→right' if ok else 'right→wrong'}"] += 1
                if len(out.examples) < examples:
                    out.examples.append(f"{t.final_answer!r} vs gold {t.gold!r}: {t.score.value:.2f} → {value:.2f}")
                t = t.model_copy(update={"score": t.score.model_copy(update={"value": value, "correct": ok})})
        out.traces.append(t)
    return out
