"""What the pair builder read, made and left out, per source and per counterfactual edit kind: the
`stats.json` of a pairs folder and the `pair_stats` an RM card records."""

from __future__ import annotations

from pydantic import BaseModel, Field


class SourceCount(BaseModel):
    train: int = 0
    val: int = 0


class EditCount(BaseModel):
    """One edit kind's counterfactuals, as the builder met them: every edit read is `tried`; one whose source
    plan is among the traces is then in exactly one of the counts from `invalid` to `same_outcome`, or paired."""

    tried: int = 0
    invalid: int = Field(0, description="The edit made the plan invalid: at most a validity pair (source artifact).")
    unfinished: int = Field(0, description="Valid, but never executed (a collection killed mid-edit).")
    executed: int = 0
    unscored: int = Field(0, description="Executed, but the edit's or its source's score is missing or an error.")
    same_outcome: int = Field(0, description="Executed with its source's outcome: no pair.")
    paired: int = Field(0, description="Counterfactual pairs kept (after the per-question cap and the balance).")


class PairStats(BaseModel):
    """What the builder read, made, and left out (and why)."""

    traces: int = 0
    questions: int = 0
    questions_with_pairs: int = 0
    questions_without_pairs: dict[str, int] = Field(default_factory=dict)
    duplicate_plans_merged: int = 0
    unscored_executions: int = 0
    scorer_errors: int = 0
    conflicting_pairs_dropped: int = 0
    pairs_over_question_cap: int = 0
    pairs_dropped_to_balance: dict[str, int] = Field(default_factory=dict)
    train_questions: int = 0
    val_questions: int = 0
    per_source: dict[str, SourceCount] = Field(default_factory=dict)
    orchestrator_models: dict[str, int] = Field(
        default_factory=dict, description="Traces per model that wrote the plan."
    )
    agent_models: dict[str, int] = Field(
        default_factory=dict, description="Executed traces per model that ran the sub-agents."
    )
    edits: dict[str, EditCount] = Field(default_factory=dict, description="Counterfactual edits by kind.")
    edits_without_source: int = Field(0, description="Edits whose source plan is not among the traces read.")

    @property
    def total(self) -> int:
        return sum(c.train + c.val for c in self.per_source.values())
