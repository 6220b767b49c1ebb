"""The orchestration RM for OpenRLHF, in both of its forms.

Remote: `orchrm serve` answers OpenRLHF's reward protocol at `POST /openrlhf`
(`--reward.remote_url http://host:8765/openrlhf`):

    {"query": [prompt + response, ...], "prompts": [prompt, ...], "labels": [question, ...]}
    -> {"rewards": [float, ...], "scores": [float, ...],
        "extra_logs": {"orchrm_invalid": [0.0 | 1.0, ...], "orchrm_unscored": [0.0 | 1.0, ...]}}

Python file: `--reward.remote_url $(python -c 'import orchrm.adapters.openrlhf as m; print(m.__file__)')`
loads `reward_func(queries, prompts, labels)` below; the model comes from `ORCHRM_RM` (a model folder,
loaded once per process on `ORCHRM_DEVICE`: auto, the default, cpu or cuda) or `ORCHRM_URL` (`orchrm serve`,
token in `ORCHRM_TOKEN`).

The plan is the query after its prompt, up to the chat template's end-of-turn token. OpenRLHF passes no
question but the label: start it with `--data.label_key` naming the question column (a label that is an object
is read at its "question"). Rewards follow the reward contract (`orchrm.rm.reward`), as
`train-orchestrator --reward rm` pays: a valid plan the sigmoid of `RewardModel.score(question, [plan])`
(`ORCHRM_SCALE=raw`: the score), a response with no valid plan the penalty (-1.0; `ORCHRM_PENALTY`,
`orchrm serve --openrlhf-penalty`) and `orchrm_invalid` 1.0; OpenRLHF needs a number for every sample, so one
that cannot be judged (no question, no response after its prompt) gets `ORCHRM_UNSCORED_REWARD` (0.0, never the
penalty) and `orchrm_unscored` 1.0 in `extra_logs` (averaged into OpenRLHF's logged metrics); the reason goes
to the log, one line per request. With `ORCHRM_URL`, a busy or absent server is waited for up to
`ORCHRM_DEADLINE_S` (300 s); more than `ORCHRM_MAX_UNSCORED` (0) samples it fails on stop the step.
`scores` (OpenRLHF's dynamic-filtering value) repeats the rewards, as OpenRLHF's own reward server does.
"""

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError

from orchrm import safejson
from orchrm.adapters._core import (
    FAILURES,
    MAX_UNSCORED,
    UNSCORED_REWARD,
    Scorer,
    Verdict,
    cached_scorer,
    judge,
    log,
    number,
    plan_after_prompt,
    report,
)
from orchrm.errors import ConfigError
from orchrm.rm.reward import INVALID_PENALTY, RewardContract

if TYPE_CHECKING:
    from fastapi import APIRouter

    from orchrm.rm.server import ServerContext

__all__ = ["DEFAULT_PENALTY", "OpenRLHFRequest", "contract_from_env", "openrlhf_rewards", "reward_func", "router"]

#: The reward of a sample with no valid plan, or one that could not be judged: the reward contract's penalty,
#: what `train-orchestrator --reward rm` gives an invalid plan.
DEFAULT_PENALTY = INVALID_PENALTY
NOT_AFTER_PROMPT = "the query neither starts with its prompt nor holds an assistant turn"
NO_QUESTION = "the label holds no question (start OpenRLHF with --data.label_key naming the question column)"


class OpenRLHFRequest(BaseModel):
    query: list[str] = Field(min_length=1)
    prompts: list[str]
    labels: list[Any] = Field(default_factory=list)


def _question(label: Any) -> Any:
    return label.get("question") if isinstance(label, dict) else label


def openrlhf_rewards(
    scorer: Scorer,
    queries: Sequence[str],
    prompts: Sequence[str],
    labels: Sequence[Any],
    *,
    contract: RewardContract | None = None,
    unscored_reward: float = UNSCORED_REWARD,
    max_unscored: int = MAX_UNSCORED,
) -> dict[str, Any]:
    """OpenRLHF's reward answer for one request; `labels` may be shorter (OpenRLHF sends "" without a label key)."""
    labels = list(labels) + [None] * (len(queries) - len(labels))
    prompts = list(prompts) + [""] * (len(queries) - len(prompts))
    plans = [
        plan_after_prompt(q, p) if isinstance(q, str) and isinstance(p, str) else None for q, p in zip(queries, prompts)
    ]
    keep = [i for i, plan in enumerate(plans) if plan is not None]
    contract = contract or RewardContract()
    questions, texts = [_question(labels[i]) for i in keep], [plans[i] for i in keep]
    judged = iter(judge(scorer, questions, texts, contract=contract, missing=NO_QUESTION))
    verdicts = [Verdict(None, NOT_AFTER_PROMPT) if plan is None else next(judged) for plan in plans]
    report(verdicts, "openrlhf reward")
    FAILURES.charge(verdicts, max_unscored, "openrlhf reward")
    rewards = [number(v, contract, unscored_reward) for v in verdicts]
    return {
        "rewards": rewards,
        "scores": list(rewards),
        "extra_logs": {
            "orchrm_invalid": [float(v.invalid) for v in verdicts],
            "orchrm_unscored": [float(v.error is not None and not v.invalid) for v in verdicts],
        },
    }


def router(context: "ServerContext", *, contract: RewardContract | None = None) -> "APIRouter":
    """`POST /openrlhf` for `orchrm serve`, under the server's body limits and token.

    (This file does not postpone annotations: FastAPI must see the `Request` imported here.)"""
    from fastapi import APIRouter, Depends, HTTPException, Request
    from starlette.concurrency import run_in_threadpool

    from orchrm.rm.server import unprocessable

    routes = APIRouter()

    @routes.post("/openrlhf", dependencies=[Depends(context.authorize)])
    async def openrlhf(request: Request) -> dict[str, Any]:
        raw = await context.read_json(request)
        try:
            body = OpenRLHFRequest.model_validate(raw)
        except ValidationError as exc:
            raise unprocessable(exc) from None
        n = len(body.query)
        if len(body.prompts) != n or len(body.labels) > n:
            raise HTTPException(
                422,
                f"{n} queries need as many prompts ({len(body.prompts)}) "
                f"and at most as many labels ({len(body.labels)})",
            )
        if n > context.max_items:
            raise HTTPException(413, f"{n} queries exceed the limit of {context.max_items} per request")
        for i, (q, label) in enumerate(zip(body.query, body.labels + [None] * n)):
            question = _question(label)
            size = len(q) + (len(question) if isinstance(question, str) else 0)
            if size > context.max_item_chars:
                raise HTTPException(
                    413, f"sample {i} has {size} characters of query and question, at most {context.max_item_chars}"
                )
        return await run_in_threadpool(
            lambda: openrlhf_rewards(context, body.query, body.prompts, body.labels, contract=contract)
        )

    return routes


def reward_func(queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any], **_: Any) -> dict[str, Any]:
    """OpenRLHF's Python-file reward: the model from `ORCHRM_RM` or `ORCHRM_URL`; the contract's settings from
    `ORCHRM_PENALTY`, `ORCHRM_SCALE` (unit | raw) and `ORCHRM_DEGREE`."""
    env = {name: os.environ.get(f"ORCHRM_{name.upper()}") or None for name in ("rm", "url", "token", "device")}
    if (env["rm"] is None) == (env["url"] is None):
        _no_model(both=env["rm"] is not None)
    deadline_s = _env_number("ORCHRM_DEADLINE_S", None)
    scorer = cached_scorer(env["rm"], env["url"], env["token"], deadline_s, env["device"])
    unscored = _env_number("ORCHRM_UNSCORED_REWARD", UNSCORED_REWARD)
    return openrlhf_rewards(
        scorer,
        list(queries),
        list(prompts),
        list(labels),
        contract=contract_from_env(),
        unscored_reward=unscored,
        max_unscored=_env_count("ORCHRM_MAX_UNSCORED"),
    )


def _no_model(*, both: bool) -> None:
    """The file was loaded without its model: raised at the first call, and logged as an error too, since OpenRLHF
    turns a reward function's exception into an INFO line and its step later dies of the empty reward."""
    import socket

    where = f"pid {os.getpid()} on {socket.gethostname()}"
    if both:
        message = f"orchrm's OpenRLHF reward: both ORCHRM_RM and ORCHRM_URL are set in {where}; set one"
    else:
        message = (
            f"orchrm's OpenRLHF reward: neither ORCHRM_RM (the RM folder) nor ORCHRM_URL (`orchrm serve`) is set in "
            f"this rollout worker's environment ({where})"
        )
    hint = (
        "on a Ray cluster started with `ray start`, variables of the submitting shell do not reach the workers: "
        """pass them as `ray job submit --runtime-env-json '{"env_vars": {"ORCHRM_RM": "/abs/rm"}}'`"""
    )
    log.error("%s (%s)", message, hint)
    raise ConfigError(message, hint=hint)


def _env_count(name: str) -> int:
    raw = os.environ.get(name)
    if not raw:
        return MAX_UNSCORED
    value = safejson.bounded_int(raw.strip(), high=10**12)
    if value is None:
        raise ConfigError(f"{name}={raw[:40]!r} is not a whole number of samples")
    return value


def _env_number(name: str, default: Any) -> Any:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ConfigError(f"{name}={raw!r} is not a finite number")
    return value


def contract_from_env() -> RewardContract:
    """The reward contract from `ORCHRM_PENALTY`, `ORCHRM_SCALE` and `ORCHRM_DEGREE` (unset: the defaults)."""
    penalty = _env_number("ORCHRM_PENALTY", DEFAULT_PENALTY)
    settings = {"scale": os.environ.get("ORCHRM_SCALE") or "unit", "degree": os.environ.get("ORCHRM_DEGREE") or "dag"}
    try:
        return RewardContract.model_validate({"invalid_penalty": penalty, **settings})
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"ORCHRM_{str(err['loc'][0]).upper()}: {err['msg']}") from None
