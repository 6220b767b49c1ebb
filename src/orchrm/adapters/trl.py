"""The orchestration RM as a TRL reward function, for `GRPOTrainer` / `RLOOTrainer(reward_funcs=[...])`.

TRL calls it with `prompts`, `completions` (text, or assistant messages for a conversational dataset) and
every other dataset column; the question travels as a column (`question` unless told otherwise). It pays
each completion by the reward contract (`orchrm.rm.reward`), exactly as `train-orchestrator --reward rm`:
the valid plan in it gets the sigmoid of `RewardModel.score(question, [plan])` (`scale="raw"`: the score
itself), a completion with no valid plan (prose, broken JSON, an empty reply) gets `invalid_penalty` (-1.0;
`None` leaves it out of its group instead). A completion that cannot be judged (no question, a server that
failed past `deadline_s`, 300 s of waiting out a busy server) gets `None` (TRL leaves it out of its group's
baseline). Each batch with either logs one warning
line, the `<name>/invalid` and `<name>/unscored` metrics and a `<name>_error` column in TRL's completions
table. A dataset without the question column at all is a mistake, raised as a one-line `ConfigError` on the
first call.

    from orchrm.adapters import TRLReward
    reward = TRLReward(rm="runs/rm")                     # in process (device="auto": the GPU if any; cpu, cuda)
    reward = TRLReward(url="http://127.0.0.1:8765")      # `orchrm serve`
    GRPOTrainer(model=..., reward_funcs=[reward], train_dataset=ds_with_prompt_and_question, ...)

`AsyncTRLReward` is the same as an `async` function: TRL runs it on its event loop beside other async
rewards, and the HTTP request does not hold a thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchrm.adapters._core import Verdict, ajudge, judge, open_scorer, report
from orchrm.completions import completion_text
from orchrm.errors import ConfigError
from orchrm.rm.reward import INVALID_PENALTY, RewardContract, RewardScale

if TYPE_CHECKING:
    from orchrm.rm import RewardModel


class TRLReward:
    """A synchronous TRL reward function scoring each completion's plan with the orchestration RM."""

    def __init__(
        self,
        rm: RewardModel | str | Path | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        question_column: str = "question",
        name: str = "orchrm",
        degree: str = "dag",
        agent_types: Sequence[str] | None = None,
        invalid_penalty: float | None = INVALID_PENALTY,
        scale: RewardScale = "unit",
        deadline_s: float | None = None,
        device: str | None = None,
    ) -> None:
        self.contract = RewardContract.model_validate(
            {"degree": degree, "agent_types": agent_types, "invalid_penalty": invalid_penalty, "scale": scale}
        )
        self.scorer = open_scorer(rm=rm, url=url, token=token, deadline_s=deadline_s, device=device)
        self.question_column = question_column
        self.__name__ = name  # TRL logs the reward as rewards/<name>/mean

    def _inputs(self, completions: Sequence[Any], columns: dict[str, Any]) -> tuple[list[Any], list[str]]:
        if self.question_column not in columns:
            given = sorted(
                k for k in columns if k not in ("trainer_state", "log_extra", "log_metric", "completion_ids")
            )
            raise ConfigError(
                f"the dataset has no {self.question_column!r} column for the orchrm reward "
                f"(its columns: {', '.join(given) or 'none'})",
                hint="add the question as a column, or name yours with question_column=",
            )
        return list(columns[self.question_column]), [completion_text(c) for c in completions]

    def _finish(self, verdicts: list[Verdict], columns: dict[str, Any]) -> list[float | None]:
        report(verdicts, f"reward {self.__name__}")
        if callable(columns.get("log_metric")):
            n = max(len(verdicts), 1)
            columns["log_metric"](f"{self.__name__}/invalid", sum(v.invalid for v in verdicts) / n)
            columns["log_metric"](
                f"{self.__name__}/unscored", sum(v.error is not None and not v.invalid for v in verdicts) / n
            )
        if callable(columns.get("log_extra")):
            columns["log_extra"](f"{self.__name__}_error", [v.error or "" for v in verdicts])
        return [v.score for v in verdicts]

    def __call__(self, prompts: list[Any], completions: list[Any], **columns: Any) -> list[float | None]:
        questions, texts = self._inputs(completions, columns)
        missing = f"no question in column {self.question_column!r}"
        return self._finish(judge(self.scorer, questions, texts, contract=self.contract, missing=missing), columns)


class AsyncTRLReward(TRLReward):
    """`TRLReward` as an async reward function."""

    async def __call__(  # type: ignore[override]
        self, prompts: list[Any], completions: list[Any], **columns: Any
    ) -> list[float | None]:
        questions, texts = self._inputs(completions, columns)
        missing = f"no question in column {self.question_column!r}"
        verdicts = await ajudge(self.scorer, questions, texts, contract=self.contract, missing=missing)
        return self._finish(verdicts, columns)
