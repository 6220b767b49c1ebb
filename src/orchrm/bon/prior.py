"""A plan-shape prior: how often plans of each shape were right on the training questions.

The cheapest selector that could fake a learned reward model is one that only looks at what a plan *is*
(which agents, with which options, wired how) and not at what it says. `ShapePrior` counts successes per
plan signature in a run's training traces; a best-of-N baseline then executes the plan whose signature
succeeded most often. A signature is read at three grains, finest first:

- `plan`: agent types with their options, by topological level ("reflexion(rounds=1) | cot");
- `shape`: agent types by topological level ("search + search | cot"), the same as `plan_shape`;
- `types`: the set of agent types ("cot + search").

Each rate is Beta-smoothed toward the global success rate, `(s + k·g) / (n + k)`, so a signature seen once
does not outrank one seen a hundred times; a signature never seen at one grain backs off to the next coarser
one, and one never seen at any grain gets the global rate.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import BaseModel, Field

from ..mas.plans import AgentSpec, Plan, plan_shape, topological_order
from ..mas.traces import Trace, locate_traces, read_traces

GRAINS = ("plan", "shape", "types")
DIRECT = "direct"  # a plan with no agents: the orchestrator answered itself


def agent_levels(plan: Plan) -> list[list[AgentSpec]]:
    """Agents grouped by topological level: sources at level 0, every other agent one past its deepest input."""
    level: dict[str, int] = {}
    for agent_id in topological_order(plan):
        level[agent_id] = 1 + max((level[u] for u in plan.upstream(agent_id)), default=-1)
    out: list[list[AgentSpec]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for a in plan.agents:
        out[level[a.id]].append(a)
    return out


def _with_options(a: AgentSpec) -> str:
    # Debate roles are free text: only their number is part of the shape.
    opts = {k: (len(v) if isinstance(v, list) else v) for k, v in a.options.items()}
    return a.type + ("(" + ",".join(f"{k}={opts[k]}" for k in sorted(opts)) + ")" if opts else "")


def _by_level(plan: Plan, *, options: bool) -> str:
    if not plan.agents:
        return DIRECT
    show = _with_options if options else (lambda a: a.type)
    return " | ".join(" + ".join(sorted(show(a) for a in agents)) for agents in agent_levels(plan))


def plan_signature(plan: Plan, grain: str = "plan") -> str:
    """The plan's signature at one grain of `GRAINS` (finest first)."""
    if grain == "plan":
        return _by_level(plan, options=True)
    if grain == "shape":
        return plan_shape(plan)
    if grain == "types":
        return " + ".join(sorted({a.type for a in plan.agents})) or DIRECT
    raise ValueError(f"unknown signature grain {grain!r}; use one of {', '.join(GRAINS)}")


def training_rows(traces: Iterable[Trace], exclude: Iterable[str] = ()) -> Iterator[Trace]:
    """The traces a content-blind baseline learns from: valid, executed and scored plans of questions not in
    `exclude` (the held-out ids). Every baseline fitted here reads its rows through this one filter."""
    skip = set(exclude)
    for t in traces:
        scored = t.score is not None and t.score.correct is not None
        if t.valid and t.executed and t.plan is not None and scored and t.question_id not in skip:
            yield t


class Tally(BaseModel):
    successes: int = 0
    trials: int = 0


class PriorScore(BaseModel):
    """A plan's prior and where it came from: the grain and signature used, and how often it was seen."""

    value: float
    grain: str | None  # None: unseen at every grain, the global rate
    signature: str | None
    trials: int


class ShapePrior(BaseModel):
    """Success counts per plan signature, at every grain, from executed valid training plans."""

    strength: float = Field(2.0, gt=0, description="Beta prior's weight, in pseudo-trials at the global rate.")
    total: Tally = Field(default_factory=Tally)
    table: dict[str, dict[str, Tally]] = Field(default_factory=lambda: {g: {} for g in GRAINS})
    source: str = ""

    @classmethod
    def fit(
        cls, traces: Iterable[Trace], *, strength: float = 2.0, exclude: Iterable[str] = (), source: str = ""
    ) -> ShapePrior:
        """Count every valid, executed and scored trace whose question is not in `exclude` (held-out ids)."""
        prior = cls(strength=strength, source=source)
        for t in training_rows(traces, exclude):
            prior.add(t.plan, bool(t.score.correct))  # type: ignore[union-attr, arg-type]
        return prior

    @classmethod
    def from_file(cls, path: Path, *, strength: float = 2.0, exclude: Iterable[str] = ()) -> ShapePrior:
        """Fit on a run folder or traces file; `RunFileError` when there is none."""
        file = locate_traces(path)
        return cls.fit(read_traces(file), strength=strength, exclude=exclude, source=str(file))

    def add(self, plan: Plan, correct: bool) -> None:
        for tally in (self.total, *(self.table[g].setdefault(plan_signature(plan, g), Tally()) for g in GRAINS)):
            tally.trials += 1
            tally.successes += int(correct)

    @property
    def global_rate(self) -> float:
        """Laplace-smoothed, so a prior fitted on nothing is 1/2, not 0/0."""
        return (self.total.successes + 1) / (self.total.trials + 2)

    def lookup(self, plan: Plan) -> PriorScore:
        g = self.global_rate
        for grain in GRAINS:
            sig = plan_signature(plan, grain)
            tally = self.table.get(grain, {}).get(sig)
            if tally is not None and tally.trials > 0:
                value = (tally.successes + self.strength * g) / (tally.trials + self.strength)
                return PriorScore(value=value, grain=grain, signature=sig, trials=tally.trials)
        return PriorScore(value=g, grain=None, signature=None, trials=0)

    def score(self, plan: Plan) -> float:
        return self.lookup(plan).value

    def summary(self) -> dict[str, object]:
        """What results.json records about the prior."""
        return {
            "source": self.source,
            "strength": self.strength,
            "trials": self.total.trials,
            "successes": self.total.successes,
            "signatures": {g: len(self.table.get(g, {})) for g in GRAINS},
        }


class KindPrior(BaseModel):
    """`kind-prior`: a `ShapePrior` per question kind (smoothed toward that kind's own success rate), and the
    pooled prior for a question without a kind or of a kind training never saw."""

    pooled: ShapePrior
    kinds: dict[str, ShapePrior] = Field(default_factory=dict)

    @classmethod
    def fit(
        cls, traces: Iterable[Trace], *, strength: float = 2.0, exclude: Iterable[str] = (), source: str = ""
    ) -> KindPrior:
        rows = list(training_rows(traces, exclude))
        kinds = sorted({t.question_kind for t in rows if t.question_kind})
        return cls(
            pooled=ShapePrior.fit(rows, strength=strength, source=source),
            kinds={
                k: ShapePrior.fit([t for t in rows if t.question_kind == k], strength=strength, source=source)
                for k in kinds
            },
        )

    def score(self, plan: Plan, kind: str | None) -> float:
        return self.kinds.get(kind or "", self.pooled).score(plan)

    def summary(self) -> dict[str, int]:
        """Training plans per kind (what results.json records about it)."""
        return {k: p.total.trials for k, p in self.kinds.items()}
