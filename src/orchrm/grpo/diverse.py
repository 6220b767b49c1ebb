"""A group that holds more than one plan shape: issue #24's remedy for a policy that collapses onto one.

From the bare prompt GRPO's first steps are a race between valid and invalid plans; the first valid shape
the policy samples takes the whole group within a few steps, after which a group's rewards differ only by the
reward's noise and nothing else is ever compared. `DiverseDraws` draws `draws` times the group for each
question and keeps, of those, the first plan of every valid shape drawn, then the earliest others: whenever
the policy can still write a second shape within the draws, the group compares it. Every kept plan is the
policy's own sample; which are kept leans to rare shapes (that is the remedy), so a group's mean reward is no
longer the policy's expected reward, and GRPO's baseline carries that bias. The plans
drawn and not kept are paid for (their tokens go to the ledger under `plan`) and written down
(`draws.jsonl`), so what the policy samples stays visible beside what the group held.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .. import attempts, jsonl
from ..mas.orchestrator import check_plan
from ..mas.plans import PlanError, plan_shape

DRAWS_FILE = "draws.jsonl"
INVALID = "invalid"


def diverse_pick(shapes: Sequence[str], keep: int) -> list[int]:
    """The indices of `keep` draws, in drawing order: the first draw of each valid shape (`INVALID` is not a
    shape), then the earliest draws not yet kept."""
    if keep > len(shapes):
        raise ValueError(f"cannot keep {keep} of {len(shapes)} draws")
    first: dict[str, int] = {}
    for i, s in enumerate(shapes):
        if s != INVALID:
            first.setdefault(s, i)
    chosen = set(sorted(first.values())[:keep])
    for i in range(len(shapes)):
        if len(chosen) == keep:
            break
        chosen.add(i)
    return sorted(chosen)


class DrawRecord(BaseModel):
    """One question's draws at one step: every shape drawn, and which draws the group kept."""

    step: int
    shapes: list[str]
    kept: list[int]
    attempt: int = Field(0, ge=0, description="Which start of the run drew them (0, then one more per resume).")


class DiverseDraws:
    """Turns a batch of GRPO prompts (each group's prompt repeated `group` times, as TRL lays them out) into
    `draws` times as many, and each group's draws back into a group of the original size."""

    def __init__(
        self, draws: int, tokenizer: Any, *, degree: str, agent_types: tuple[str, ...], log: Path | None = None
    ) -> None:
        if draws < 2:
            raise ValueError("a diverse group needs at least 2 draws per plan")
        self.draws = draws
        self.tokenizer = tokenizer
        self.degree = degree
        self.agent_types = agent_types
        self.log = log
        self.attempt = attempts.next_attempt(log, DrawRecord.model_validate, "draw record") if log is not None else 0

    def shape(self, completion_ids: list[int]) -> str:
        text = self.tokenizer.decode(completion_ids, skip_special_tokens=True)
        try:
            return plan_shape(check_plan(text, degree=self.degree, agent_types=self.agent_types))
        except PlanError:
            return INVALID

    def sample(
        self,
        prompt_ids: list[list[int]],
        seeds: list[int],
        complete: Callable[[list[list[int]], list[int]], list[list[int]]],
        step: int,
    ) -> tuple[list[list[int]], list[list[int]]]:
        """Each group's completions, kept from `draws` times as many; and, per returned completion, the lengths
        of the plans drawn and not kept that it carries (all on the group's first plan, none elsewhere).
        A group's first `group` draws use the seeds plain sampling would (`seeds`), the extra ones follow."""
        groups = _groups(prompt_ids)
        wide_ids: list[list[int]] = []
        wide_seeds: list[int] = []
        for start, size in groups:
            wide_ids += [prompt_ids[start]] * (size * self.draws)
            wide_seeds += [seeds[start] + j for j in range(size * self.draws)]
        drawn = complete(wide_ids, wide_seeds)
        kept: list[list[int]] = []
        unkept: list[list[int]] = []
        records = []
        at = 0
        for _, size in groups:
            mine = drawn[at : at + size * self.draws]
            at += size * self.draws
            shapes = [self.shape(c) for c in mine]
            pick = diverse_pick(shapes, size)
            kept += [mine[i] for i in pick]
            picked = set(pick)
            unkept += [[len(c) for i, c in enumerate(mine) if i not in picked]] + [[] for _ in range(size - 1)]
            records.append(DrawRecord(step=step, shapes=shapes, kept=pick, attempt=self.attempt))
        if self.log is not None:
            with jsonl.JsonlWriter(self.log) as writer:
                for r in records:
                    writer.write(r)
        return kept, unkept


def read_draws(folder: Path) -> list[DrawRecord]:
    """A run folder's draws as the run stands: a resumed run's repeat of a step supersedes the attempt a kill cut
    short (none if the run drew no diverse group)."""
    return attempts.latest(jsonl.read(folder / DRAWS_FILE, DrawRecord.model_validate, "draw record"))


def _groups(prompt_ids: list[list[int]]) -> list[tuple[int, int]]:
    """(start, size) of each run of identical consecutive prompts."""
    out: list[tuple[int, int]] = []
    for i, ids in enumerate(prompt_ids):
        if out and prompt_ids[out[-1][0]] == ids:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((i, 1))
    return out
