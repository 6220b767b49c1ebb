"""What every adapter shares: a framework's completion judged by the reward contract (`rm.reward`: the plan
`mas.completion.read_plan` finds, checked by the orchestrator's rules, the RM's score on the contract's scale),
and a scorer (the model in this process, or `orchrm serve` over HTTP) that scores the valid plans exactly as
`RewardModel.score` does. A completion with no valid plan gets the contract's penalty, never a model score;
an item that cannot be judged at all (no question, a server that failed) gets a `Verdict` naming why.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from orchrm import safejson
from orchrm.errors import ConfigError, OrchrmError
from orchrm.mas.completion import ASSISTANT_HEADER, END_TOKENS, plan_region
from orchrm.mas.plans import Plan, PlanError
from orchrm.rm.reward import RewardContract

if TYPE_CHECKING:
    from orchrm.rm import RewardModel

log = logging.getLogger("orchrm.adapters")

__all__ = ["END_TOKENS", "RewardContract", "RewardServerError", "Verdict", "judge", "plan_text"]

#: The server's limits (`orchrm serve --max-items`); larger batches are sent in pieces of this size.
REQUEST_ITEMS = 64
#: Response bodies are read under these bounds: a server that answers garbage gets an error, not a hang.
RESPONSE_LIMITS = safejson.Limits(max_chars=20_000_000, max_depth=8, max_number_chars=100)
#: What a scorer gives one valid plan: the RM's raw score, or the reason the server gave none.
Raw = float | str


class RewardServerError(OrchrmError):
    """The reward server was unreachable or answered something other than one score per item."""


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


class Scorer(Protocol):
    def score(self, items: Sequence[tuple[str, Plan]]) -> list[Raw]: ...


class LocalScorer:
    """The reward model in this process; one forward pass at a time (frameworks call from several threads)."""

    def __init__(self, rm: RewardModel | str | Path) -> None:
        if isinstance(rm, (str, Path)):
            from orchrm.rm import RewardModel

            rm = RewardModel.load(rm)
        self.rm = rm
        self._lock = threading.Lock()

    def score(self, items: Sequence[tuple[str, Plan]]) -> list[Raw]:
        with self._lock:
            return list(self.rm.score_items(items))

    async def ascore(self, items: Sequence[tuple[str, Plan]]) -> list[Raw]:
        return await asyncio.to_thread(self.score, items)


class RemoteScorer:
    """`orchrm serve` over HTTP (`POST {url}/score`). Connection failures and 5xx answers are retried;
    anything else that is not one finite score per item is a `RewardServerError`."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 60.0, retries: int = 2) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"reward server URL {url!r} is not http(s)", hint="e.g. http://127.0.0.1:8765")
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.timeout = timeout
        self.retries = retries

    def _body(self, items: Sequence[tuple[str, Plan]]) -> dict[str, Any]:
        return {"items": [{"question": q, "plan": p.model_dump(mode="json")} for q, p in items]}

    def score(self, items: Sequence[tuple[str, Plan]]) -> list[Raw]:
        import httpx

        out: list[Raw] = []
        with httpx.Client(timeout=self.timeout, headers=self.headers) as client:
            for start in range(0, len(items), REQUEST_ITEMS):
                chunk = items[start : start + REQUEST_ITEMS]
                for attempt in range(self.retries + 1):
                    try:
                        response = client.post(f"{self.url}/score", json=self._body(chunk))
                    except httpx.TransportError as exc:
                        response = exc
                    scores = self._settle(response, len(chunk), attempt)
                    if scores is not None:
                        out += scores
                        break
                    time.sleep(0.5 * 2**attempt)
        return out

    async def ascore(self, items: Sequence[tuple[str, Plan]]) -> list[Raw]:
        import httpx

        out: list[Raw] = []
        async with httpx.AsyncClient(timeout=self.timeout, headers=self.headers) as client:
            for start in range(0, len(items), REQUEST_ITEMS):
                chunk = items[start : start + REQUEST_ITEMS]
                for attempt in range(self.retries + 1):
                    try:
                        response = await client.post(f"{self.url}/score", json=self._body(chunk))
                    except httpx.TransportError as exc:
                        response = exc
                    scores = self._settle(response, len(chunk), attempt)
                    if scores is not None:
                        out += scores
                        break
                    await asyncio.sleep(0.5 * 2**attempt)
        return out

    def _settle(self, response: Any, n: int, attempt: int) -> list[Raw] | None:
        """One try's outcome, shared by the sync and async loops: the scores, or None to retry (a transport
        error or a 5xx while tries remain); the last failed try raises."""
        last = attempt == self.retries
        if isinstance(response, Exception):
            if last:
                raise self._unreachable(response) from None
            return None
        return self._scores(response, n) if response.status_code < 500 or last else None

    def _unreachable(self, exc: Exception) -> RewardServerError:
        return RewardServerError(f"reward server {self.url} unreachable after {self.retries + 1} tries: {type(exc).__name__}: {exc}",
                                 hint="is `orchrm serve` running there?")  # fmt: skip

    def _scores(self, response: Any, n: int) -> list[Raw]:
        """One raw score per item; where the server found no valid plan (`null`), its reason instead."""
        where = f"reward server {self.url}/score"
        if response.status_code != 200:
            detail = " ".join(response.text.split())[:200]
            raise RewardServerError(f"{where} answered HTTP {response.status_code}: {detail}")
        try:
            body = safejson.loads(response.content, RESPONSE_LIMITS)
        except safejson.UnsafeJSONError as exc:
            raise RewardServerError(f"{where} answered something that is not acceptable JSON: {exc.reason}") from None
        scores = body.get("scores") if isinstance(body, dict) else None
        if not isinstance(scores, list) or len(scores) != n:
            got = f"{len(scores)} scores" if isinstance(scores, list) else "no 'scores' list"
            raise RewardServerError(f"{where} answered {got} for {n} items")
        errors = body.get("errors") if isinstance(body.get("errors"), list) and len(body["errors"]) == n else [None] * n
        out: list[Raw] = []
        for s, e in zip(scores, errors):
            if s is None:
                out.append(f"the reward server scored no plan: {e if isinstance(e, str) else 'no reason given'}"[:300])
            elif isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s):
                raise RewardServerError(f"{where} answered a score that is not a finite number: {s!r}"[:300])
            else:
                out.append(float(s))
        return out


def open_scorer(
    rm: RewardModel | str | Path | None = None, url: str | None = None, token: str | None = None
) -> LocalScorer | RemoteScorer:
    """The in-process model (`rm`: a `RewardModel` or its folder) or the server at `url`: exactly one."""
    if (rm is None) == (url is None):
        raise ConfigError(
            "give the reward model either in process (rm=folder) or as a server (url=...), not both or neither"
        )
    return LocalScorer(rm) if rm is not None else RemoteScorer(url, token=token)  # type: ignore[arg-type]


_SCORERS: dict[tuple[str | None, str | None, str | None], LocalScorer | RemoteScorer] = {}
_SCORERS_LOCK = threading.Lock()


def cached_scorer(rm: str | None, url: str | None, token: str | None) -> LocalScorer | RemoteScorer:
    """One scorer per process for file-loaded adapters (verl, OpenRLHF) called item by item from a thread pool:
    concurrent first calls wait for the one load (loading twice at once also races transformers' lazy imports)."""
    key = (rm, url, token)
    with _SCORERS_LOCK:
        if key not in _SCORERS:
            _SCORERS[key] = open_scorer(rm=rm, url=url, token=token)
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
            verdicts[i] = Verdict(None, str(scores))
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
