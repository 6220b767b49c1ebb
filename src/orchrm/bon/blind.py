"""The content-blind baselines, fitted together on one run's training traces: `prior` (shape success rate),
`kind-prior` (the same per question kind) and `router` (question text × plan shape). None of them reads what
a plan says; `rm` is held to the best of them and `shortest` (`selection.CONTENT_BLIND`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from ..mas.traces import Trace, locate_traces, read_traces
from .prior import KindPrior, ShapePrior
from .router import Router, RouterInfo


class BaselinesInfo(BaseModel):
    """What results.json records about `kind-prior` and `router` (the prior has its own `prior` entry)."""

    kind_prior: dict[str, int]  # training plans per kind
    router: RouterInfo


@dataclass(frozen=True)
class ContentBlind:
    """The fitted baselines; `kind_prior` and `router` are None where only a shape prior was given."""

    prior: ShapePrior
    kind_prior: KindPrior | None = None
    router: Router | None = None
    # the question templates training saw (`Trace.question_template`); None when no training trace has one
    templates: frozenset[str] | None = None

    @classmethod
    def fit(
        cls, traces: Iterable[Trace], *, strength: float = 2.0, exclude: Iterable[str] = (), source: str = ""
    ) -> ContentBlind:
        """Every baseline from the same training rows; held-out ids in `exclude` never count."""
        rows, skip = list(traces), set(exclude)
        prior = ShapePrior.fit(rows, strength=strength, exclude=skip, source=source)
        templates = frozenset(t.question_template for t in rows if t.question_template and t.question_id not in skip)
        return cls(
            prior=prior,
            kind_prior=KindPrior.fit(rows, strength=strength, exclude=skip, source=source),
            router=Router.fit(rows, prior=prior, exclude=skip),
            templates=templates or None,
        )

    @classmethod
    def from_file(cls, path: Path, *, strength: float = 2.0, exclude: Iterable[str] = ()) -> ContentBlind:
        """Fit on a run folder or traces file; `RunFileError` when there is none."""
        file = locate_traces(path)
        return cls.fit(read_traces(file), strength=strength, exclude=exclude, source=str(file))

    def info(self) -> BaselinesInfo | None:
        if self.kind_prior is None or self.router is None:
            return None
        return BaselinesInfo(kind_prior=self.kind_prior.summary(), router=self.router.summary())
