"""What selection reads and what it returns: one question's sampled plans (`Candidate`, gathered in a `Case`)
and what one method achieved on it (`Outcome`, its tokens split into `CATEGORIES`). Every method reads the
same cases (`selectors.py` holds how each picks and what it is charged)."""

from __future__ import annotations

from dataclasses import dataclass, field

CATEGORIES = ("plan", "execute", "verify")


@dataclass(frozen=True)
class Candidate:
    """One sampled plan as selection sees it: validity, RM reward, and (if executed) its answer and cost."""

    index: int
    valid: bool
    reward: float
    answer_key: str | None = None
    correct: bool = False
    plan_tokens: int = 0
    exec_tokens: int = 0
    plan_s: float = 0.0
    exec_s: float = 0.0
    length: int = 0  # the plan's length, for `shortest` (see `cases.plan_lengths` for the unit)
    prior: float | None = None  # the plan-shape prior's success rate, None when no prior was fitted
    kind_prior: float | None = None  # the shape's success rate among training questions of the same kind
    router: float | None = None  # the router's P(right | question, shape)
    router_fallback: bool = False  # the router never saw this shape: `router` is the shape prior's score
    plan_alone: int = 0  # what sampling this plan on its own request would cost (0: plan_tokens), for `random`
    shape: str | None = None  # the plan's shape signature (`plan_signature(plan, "shape")`), for `shape-mean`
    copies_example: bool = False  # its inputs hold a worked example's entity or number (`content.copies_examples`)


@dataclass
class Case:
    """One held-out question: its candidates in plan-index order, and the judge's pick among the valid ones."""

    question_id: str
    candidates: list[Candidate]
    judge_best: int | None = None  # a candidate index
    judge_tokens: int = 0
    judge_s: float = 0.0
    rm_s: float = 0.0  # time to score the candidates with the RM
    rm_tokens: int = 0  # tokens a decoder RM read scoring them (`verify`; 0 for an encoder RM)
    kind: str | None = None  # the question's kind, for per-kind breakdowns
    judged: bool = False  # a judgment exists for exactly these candidates
    seen: bool | None = None  # whether training saw the question's template (None: untemplated, or unknown)

    def prefix(self, n: int) -> Case:
        """The case as if only the first n plans had been sampled (judge fields belong to the full case)."""
        share = self.rm_tokens * n // max(len(self.candidates), 1)  # a decoder RM reads each plan once
        return Case(
            self.question_id, self.candidates[:n], rm_s=self.rm_s, rm_tokens=share, kind=self.kind, seen=self.seen
        )

    @property
    def valid(self) -> list[Candidate]:
        return [c for c in self.candidates if c.valid]


@dataclass
class Outcome:
    """What one method achieved on one question: correctness (an expectation for `random`) and its costs."""

    correct: float
    tokens: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0.0))
    executed: float = 0.0
    wall_s: float = 0.0
    chosen: int | None = None

    @property
    def total_tokens(self) -> float:
        return sum(self.tokens.values())
