"""How pairs are built (`PairConfig`): the one set of knobs `build_pairs` reads and `orchrm pairs` exposes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import ConfigError
from .render import RENDER_VERSION, RENDER_VERSIONS
from .rows import SOURCES


class PairConfig(BaseModel):
    """How pairs are built: which sources, their thresholds and caps, and the split. `orchrm pairs` makes one
    option from each field (its default and help are the field's)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sources: tuple[str, ...] = Field(
        SOURCES, description=f"Pair source to use (repeatable; default all): {', '.join(SOURCES)}."
    )
    specialized: str | None = Field(None, description="Checkpoint label of the specialized run.")
    base: str | None = Field(None, description="Checkpoint label of the base run.")
    max_pairs_per_question: int = Field(12, description="Cap on pairs per question.")
    # A per-kind prior already picks a shape from outcome counts; pairs across shapes teach the RM that again and
    # crowd out the pairs only text can decide (the positive control's finding, FINDINGS.md).
    same_shape: bool = Field(
        False, description="correct-over-incorrect only between plans of the same shape (what text decides)."
    )
    # Counterfactual pairs have a cap of their own: several edits of each plan are the point of that source, and
    # under the shared cap they crowded each other out (many outcome-changing edits were dropped).
    max_counterfactual_per_question: int = Field(
        24, description="Cap on counterfactual pairs per question (their own cap)."
    )
    min_agreement: float = Field(0.6, description="Consensus: majority share of answered executions.")
    min_margin: int = Field(2, description="Consensus: majority count minus the runner-up's.")
    # balance: no source above this share while others have pairs
    max_source_share: float = Field(1.0, description="Balance: max share of one source (1 = off).")
    val_fraction: float = Field(0.2, description="Share of questions held out for validation.")
    seed: int = Field(0, description="Seed of the split and of capping.")
    render_version: int = Field(
        RENDER_VERSION, description=f"Plan rendering of the pairs' text: {', '.join(map(str, RENDER_VERSIONS))}."
    )

    @model_validator(mode="after")
    def _check(self) -> PairConfig:
        """A bad combination is a `ConfigError` (one line), raised through pydantic as it is."""
        unknown = set(self.sources) - set(SOURCES)
        if unknown:
            raise ConfigError(f"unknown pair sources {sorted(unknown)}", hint=f"use {', '.join(SOURCES)}")
        if "specialized-over-base" in self.sources and (self.specialized is None) != (self.base is None):
            raise ConfigError("specialized-over-base needs both --specialized and --base checkpoint labels")
        if not 0.0 <= self.val_fraction < 1.0:
            raise ConfigError(f"val_fraction must be in [0, 1), got {self.val_fraction}")
        if self.render_version not in RENDER_VERSIONS:
            raise ConfigError(f"render_version must be one of {RENDER_VERSIONS}, got {self.render_version}")
        return self
