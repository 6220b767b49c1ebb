"""What every adapter shares: a framework's completion judged by the reward contract (`rm.reward`: the plan
`mas.completion.read_plan` finds, checked by the orchestrator's rules, the RM's score on the contract's scale),
and a scorer (the model in this process, or `orchrm serve` over HTTP) that scores the valid plans exactly as
`RewardModel.score` does. A completion with no valid plan gets the contract's penalty, never a model score;
an item that cannot be judged at all (no question, a server that failed) gets a `Verdict` naming why.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from orchrm.adapters._remote import Raw, RemoteScorer, RewardServerError
from orchrm.errors import ConfigError, OrchrmError
from orchrm.mas.completion import ASSISTANT_HEADER, END_TOKENS, plan_region
from orchrm.mas.plans import Plan, PlanError
from orchrm.rm.reward import RewardContract

if TYPE_CHECKING:
    from orchrm.rm import RewardModel

log = logging.getLogger("orchrm.adapters")

__all__ = ["END_TOKENS", "RewardContract", "RewardServerError", "Verdict", "judge", "plan_text"]


def plan_text(completion: str) -> str:
    """The part of a completion a plan is read from (`mas.completion.plan_region`): the chat template's turn,
    reasoning blocks dropped, stripped. Empty when nothing is left."""
    return plan_region(completion)


def plan_after_prompt(query: str, prompt: str) -> str | None:
    """The response in a prompt+response text (OpenRLHF's query): what follows the prompt. None when the query
    neither starts with its prompt nor holds an assistant header to start from."""
    if prompt and query.startswith(prompt):
        return query[len(prompt) :]
    if ASSISTANT_HEADER.search(query):  # the prompt was truncated or re-tokenised differently: the template still tells
        return query
    return None


@dataclass(frozen=True)
class Verdict:
    """One item's reward, or why it has none. `invalid`: the completion holds no valid plan (the policy's fault,
    paid the contract's penalty); otherwise an error means the item could not be judged (unscored)."""

    score: float | None
    error: str | None = None
    invalid: bool = False
    failed: bool = False  # the scorer (a reward server past its deadline) failed: unscored, never penalised


class Scorer(Protocol):
    def score(self, items: Sequence[tuple[str, Plan]]) -> list[Raw]: ...


class LocalScorer:
    """The reward model in this process; one forward pass at a time (frameworks call from several threads).
    `device` (auto | cpu | cuda): where a folder's model runs (default auto); a `RewardModel` given is moved
    only when it is set."""

    def __init__(self, rm: RewardModel | str | Path, device: str | None = None) -> None:
        if isinstance(rm, (str, Path)):
            from orchrm.rm import RewardModel
            from orchrm.rm.device import resolve_device

            place = resolve_device(device or "auto")  # cuda without a GPU: one line before the folder loads
            rm = RewardModel.load(rm)
            if place != "cpu":
                rm = rm.to(place)
        elif device is not None:
            rm = rm.to(device)
        self.rm = rm
        self._lock = threading.Lock()

    def score(self, items: Sequence[tuple[str, Plan]]) -> list[Raw]:
        with self._lock:
            return list(self.rm.score_items(items))

    async def ascore(self, items: Sequence[tuple[str, Plan]]) -> list[Raw]:
        return await asyncio.to_thread(self.score, items)


def open_scorer(
    rm: RewardModel | str | Path | None = None,
    url: str | None = None,
    token: str | None = None,
    deadline_s: float | None = None,
    device: str | None = None,
) -> LocalScorer | RemoteScorer:
    """The in-process model (`rm`: a `RewardModel` or its folder, on `device`: see `LocalScorer`) or the server
    at `url`: exactly one. A server that is busy or down is waited for up to `deadline_s` a request (default
    `DEADLINE_S`)."""
    if (rm is None) == (url is None):
        raise ConfigError(
            "give the reward model either in process (rm=folder) or as a server (url=...), not both or neither"
        )
    if rm is not None:
        return LocalScorer(rm, device)
    deadline = {} if deadline_s is None else {"deadline_s": deadline_s}
    return RemoteScorer(url, token=token, **deadline)  # type: ignore[arg-type]


_SCORERS: dict[tuple[str | None, str | None, str | None, float | None, str | None], LocalScorer | RemoteScorer] = {}
_SCORERS_LOCK = threading.Lock()


def cached_scorer(
    rm: str | None, url: str | None, token: str | None, deadline_s: float | None = None, device: str | None = None
) -> LocalScorer | RemoteScorer:
    """One scorer per process for file-loaded adapters (verl, OpenRLHF) called item by item from a thread pool:
    concurrent first calls wait for the one load (loading twice at once also races transformers' lazy imports)."""
    key = (rm, url, token, deadline_s, device)
    with _SCORERS_LOCK:
        if key not in _SCORERS:
            _SCORERS[key] = open_scorer(rm=rm, url=url, token=token, deadline_s=deadline_s, device=device)
        return _SCORERS[key]


def _text_error(value: Any, what: str) -> str | None:
    """Why `value` is not usable text (not a string, blank, or holding a lone surrogate), or None."""
    if not isinstance(value, str):
        return f"the {what} is {type(value).__name__}, not text"
    if not value.strip():
        return f"the {what} is empty"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"the {what} holds a lone surrogate at character {exc.start}"
    return None


def _pending(
    contract: RewardContract, questions: Sequence[Any], texts: Sequence[Any], missing: str
) -> tuple[list[Verdict | None], list[int], list[tuple[str, Plan]]]:
    verdicts: list[Verdict | None] = []
    index: list[int] = []
    items: list[tuple[str, Plan]] = []
    for i, (q, text) in enumerate(zip(questions, texts, strict=True)):
        bad_question = _text_error(q, "question")
        if bad_question is not None:
            verdicts.append(Verdict(None, missing if q is None or q == "" else bad_question))
            continue
        if not isinstance(text, str):  # the framework's mistake, not the policy's: unscored, not penalised
            verdicts.append(Verdict(None, f"the completion is {type(text).__name__}, not text"))
            continue
        try:
            plan = contract.check(text)
        except PlanError as exc:
            verdicts.append(Verdict(contract.invalid_penalty, f"no valid plan ({exc.rule}): {exc.reason}"[:300], True))
            continue
        verdicts.append(None)
        index.append(i)
        items.append((q, plan))
    return verdicts, index, items


def _fill(
    contract: RewardContract, verdicts: list[Verdict | None], index: list[int], scores: list[Raw] | OrchrmError
) -> list[Verdict]:
    for n, i in enumerate(index):
        if isinstance(scores, OrchrmError):
            verdicts[i] = Verdict(None, str(scores), failed=True)
        else:
            raw = scores[n]
            verdicts[i] = Verdict(None, raw) if isinstance(raw, str) else Verdict(contract.value(raw))
    return verdicts  # type: ignore[return-value]


def judge(
    scorer: Scorer,
    questions: Sequence[Any],
    texts: Sequence[Any],
    *,
    contract: RewardContract | None = None,
    missing: str = "no question",
) -> list[Verdict]:
    """A verdict per (question, completion text) under the reward contract: the reward of the valid plan in it,
    the penalty for a completion with no valid plan, or the reason it has no reward (no question, a completion
    that is not text, a server that failed: its one-line error)."""
    contract = contract or RewardContract()
    verdicts, index, items = _pending(contract, questions, texts, missing)
    if not items:
        return _fill(contract, verdicts, index, [])
    try:
        scores: list[Raw] | OrchrmError = scorer.score(items)
    except RewardServerError as exc:
        scores = exc
    return _fill(contract, verdicts, index, scores)


async def ajudge(
    scorer: LocalScorer | RemoteScorer,
    questions: Sequence[Any],
    texts: Sequence[Any],
    *,
    contract: RewardContract | None = None,
    missing: str = "no question",
) -> list[Verdict]:
    """`judge` without blocking the event loop."""
    contract = contract or RewardContract()
    verdicts, index, items = _pending(contract, questions, texts, missing)
    if not items:
        return _fill(contract, verdicts, index, [])
    try:
        scores: list[Raw] | OrchrmError = await scorer.ascore(items)
    except RewardServerError as exc:
        scores = exc
    return _fill(contract, verdicts, index, scores)


def report(verdicts: Sequence[Verdict], who: str) -> None:
    """One warning line per batch that had completions with no valid plan or unscored items: how many, and the
    first reason of each."""
    invalid = [v.error for v in verdicts if v.invalid]
    unscored = [v.error for v in verdicts if not v.invalid and v.error is not None]
    n = len(verdicts)
    if invalid:
        log.warning(
            "%s: %d of %d completions hold no valid plan (penalised); first: %s", who, len(invalid), n, invalid[0]
        )
    if unscored:
        log.warning("%s: %d of %d completions unscored; first: %s", who, len(unscored), n, unscored[0])


#: Defaults of the frameworks that need a number for every sample (verl, OpenRLHF): what an unscored sample gets
#: (not the invalid-plan penalty: the policy did nothing wrong), and how many samples the reward server may fail
#: on (past its deadline) in one process before the training step is stopped.
UNSCORED_REWARD = 0.0
MAX_UNSCORED = 0


class _FailureTally:
    """Samples a failed reward server left unscored in this process; past the user's limit, the step stops."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def charge(self, verdicts: Sequence[Verdict], limit: int, who: str) -> None:
        failed = [v.error for v in verdicts if v.failed]
        if not failed:
            return
        with self._lock:
            self.count += len(failed)
            total = self.count
        if total > limit:
            # logged as well as raised: OpenRLHF swallows a reward function's exception into an INFO line
            log.error(
                "%s: %d samples unscored because the reward server failed (max_unscored=%d); last: %s",
                who,
                total,
                limit,
                failed[-1],
            )
            raise RewardServerError(
                f"{who}: {total} samples unscored because the reward server failed (max_unscored={limit}); "
                f"last: {failed[-1]}",
                hint="bring the server back and resume, or raise max_unscored to train past such samples",
            )


FAILURES = _FailureTally()


def number(verdict: Verdict, contract: RewardContract, unscored_reward: float) -> float:
    """A verdict as the number verl and OpenRLHF need: the reward, the penalty for no valid plan, or
    `unscored_reward` for a sample that could not be judged."""
    if verdict.score is not None:
        return verdict.score
    if verdict.invalid and contract.invalid_penalty is not None:
        return float(contract.invalid_penalty)
    return float(unscored_reward)
