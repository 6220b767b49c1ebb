"""The orchestration RM as a verl custom reward function: point `reward.custom_reward_function.path` at this file.

verl loads this file by path (not as part of the package), so it imports orchrm absolutely. verl 0.9's reward
managers (`naive`, the default; `dapo`, `rate_limited`, ...) call, one response at a time from a thread pool,

    compute_score(data_source, solution_str, ground_truth, extra_info, **reward_kwargs)

(`compute_score_batch` takes lists of the same, for a reward manager of your own: verl 0.9 has no batch one.)

verl passes no prompt: the question travels in `extra_info["question"]` (another key with
`reward_kwargs.question_key`; `orchrm prompts --format verl` writes rows that hold it). A row without the key
raises a `ConfigError` naming it: a dataset built without the question would otherwise train on 0.0 rewards. The reward model is the server at `reward_kwargs.url` (bearer token in
`token`, or the `ORCHRM_TOKEN` environment variable) or a model folder at `reward_kwargs.rm`, loaded once
per worker process on `reward_kwargs.device` (auto, the default: the GPU if torch sees one; cpu; cuda). Each
result is `{"score", "orchrm_invalid", "orchrm_unscored", "orchrm_error"}`, paid by the reward contract
(`orchrm.rm.reward`) exactly as `train-orchestrator --reward rm` pays: a valid plan the sigmoid of
`RewardModel.score(question, [plan])` (`scale: raw`, the score itself); a response with no valid plan `penalty`
(-1.0) and `orchrm_invalid` 1.0; a response that cannot be judged (an empty question, not text) `unscored_reward` (0.0,
never the penalty) and `orchrm_unscored` 1.0; the reason in `orchrm_error`, so verl's reward metrics show how many
and why. Every result has the same keys, as verl's per-key lists need.
A busy or absent server is waited for up to `deadline_s` (300 s) a request; past it the sample is unscored,
and more than `max_unscored` (0) such samples in one worker stop the step with one line.

    reward.custom_reward_function.path=$(python -c 'import orchrm.adapters.verl as m; print(m.__file__)')
    reward.custom_reward_function.name=compute_score
    +reward.custom_reward_function.reward_kwargs.url=http://127.0.0.1:8765   # or ...reward_kwargs.rm=/abs/rm

(verl 0.9's main_ppo reads only `reward.custom_reward_function.*`: the pre-0.9 top-level
`custom_reward_function.*` keys are ignored, and verl then scores with its own rule for the data source.)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from orchrm.adapters._core import FAILURES, MAX_UNSCORED, UNSCORED_REWARD, cached_scorer, judge, number, report
from orchrm.errors import ConfigError
from orchrm.rm.reward import INVALID_PENALTY, RewardContract

__all__ = ["DEFAULT_PENALTY", "compute_score", "compute_score_batch"]

#: The score of a response with no valid plan, or one that could not be judged: the reward contract's penalty,
#: what `train-orchestrator --reward rm` gives an invalid plan.
DEFAULT_PENALTY = INVALID_PENALTY


def _question(extra_info: Any, key: str) -> Any:
    """The row's question. A row without the key is a dataset built without it, not an odd sample: every row would
    be unscored (0.0) and the run would learn nothing, so it stops the step with the key's name."""
    if not isinstance(extra_info, dict) or key not in extra_info:
        has = ", ".join(sorted(map(str, extra_info))) if isinstance(extra_info, dict) else type(extra_info).__name__
        raise ConfigError(
            f"a verl row has no {_key(key)} for the orchrm reward (its extra_info: {has or 'empty'})",
            hint="write the dataset with `orchrm prompts --format verl`, or name your key with "
            "+reward.custom_reward_function.reward_kwargs.question_key",
        )
    return extra_info[key]


def _key(key: str) -> str:
    return f'extra_info["{key}"]'


def _contract(penalty: Any, degree: Any, agent_types: Any, scale: Any) -> RewardContract:
    try:
        types = tuple(agent_types) if agent_types is not None else None
        return RewardContract.model_validate(
            {"degree": degree, "agent_types": types, "invalid_penalty": float(penalty), "scale": scale}
        )
    except (TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        first = str(exc).splitlines()
        raise ConfigError(f"orchrm reward_kwargs: {' '.join(first[:3])}"[:300]) from None


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[Any],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Any],
    *,
    url: str | None = None,
    rm: str | None = None,
    token: str | None = None,
    question_key: str = "question",
    penalty: float = DEFAULT_PENALTY,
    degree: str = "dag",
    agent_types: Sequence[str] | None = None,
    scale: str = "unit",
    deadline_s: float | None = None,
    unscored_reward: float = UNSCORED_REWARD,
    max_unscored: int = MAX_UNSCORED,
    device: str | None = None,
    **_: Any,
) -> list[dict[str, Any]]:
    """One result per response, in order."""
    contract = _contract(penalty, degree, agent_types, scale)
    questions = [_question(info, question_key) for info in extra_infos]
    scorer = cached_scorer(rm, url, token or os.environ.get("ORCHRM_TOKEN"), deadline_s, device)
    missing = f"{_key(question_key)} is empty"
    verdicts = judge(scorer, questions, list(solution_strs), contract=contract, missing=missing)
    report(verdicts, "verl compute_score")
    FAILURES.charge(verdicts, max_unscored, "verl compute_score")
    return [
        {
            "score": number(v, contract, unscored_reward),
            "orchrm_invalid": float(v.invalid),
            "orchrm_unscored": float(v.error is not None and not v.invalid),
            "orchrm_error": v.error or "",
        }
        for v in verdicts
    ]


def compute_score(
    data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None, **reward_kwargs: Any
) -> dict[str, Any]:
    """One response's result (verl's default `naive` reward manager, called from its thread pool)."""
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info], **reward_kwargs)[0]
