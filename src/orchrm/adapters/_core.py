"""What every adapter shares: a framework's completion turned into the plan text the RM reads, and a scorer
(the model in this process, or `orchrm serve` over HTTP) that scores (question, plan) items exactly as
`RewardModel.score` does. An item that cannot be scored gets a `Verdict` naming why, never a number.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from orchrm import safejson
from orchrm.errors import ConfigError, OrchrmError

if TYPE_CHECKING:
    from orchrm.rm import RewardModel

log = logging.getLogger("orchrm.adapters")

#: End-of-turn and end-of-text tokens of the common chat templates; a completion decoded with its special
#: tokens (OpenRLHF's query, verl with `skip_special_tokens=False`) ends with one.
END_TOKENS = (
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<|end|>",
    "<end_of_turn>",
    "</s>",
    "<eos>",
)
#: The header that opens an assistant turn (ChatML, Llama 3, Gemma): a completion that still holds the chat
#: template starts its plan after the last one.
_ASSISTANT = re.compile(
    r"<\|im_start\|>assistant[ \t]*\n?|<\|start_header_id\|>assistant<\|end_header_id\|>\s*|<start_of_turn>model[ \t]*\n?"
)
#: The server's limits (`orchrm serve --max-items`); larger batches are sent in pieces of this size.
REQUEST_ITEMS = 64
#: Response bodies are read under these bounds: a server that answers garbage gets an error, not a hang.
RESPONSE_LIMITS = safejson.Limits(max_chars=20_000_000, max_depth=8, max_number_chars=100)


class RewardServerError(OrchrmError):
    """The reward server was unreachable or answered something other than one score per item."""


def plan_text(completion: str) -> str:
    """The plan in a completion: after the last assistant header if the chat template leaked in, up to the
    first end-of-turn token, stripped. Empty when nothing is left."""
    headers = list(_ASSISTANT.finditer(completion))
    if headers:
        completion = completion[headers[-1].end() :]
    cut = min((i for i in (completion.find(t) for t in END_TOKENS) if i >= 0), default=len(completion))
    return completion[:cut].strip()


def plan_after_prompt(query: str, prompt: str) -> str | None:
    """The plan in a prompt+response text (OpenRLHF's query): what follows the prompt, cleaned as `plan_text`.
    None when the query neither starts with its prompt nor holds an assistant header to start from."""
    if prompt and query.startswith(prompt):
        return plan_text(query[len(prompt) :])
    if _ASSISTANT.search(query):  # the prompt was truncated or re-tokenised differently: the template still tells
        return plan_text(query)
    return None


@dataclass(frozen=True)
class Verdict:
    """One item's reward, or why it has none."""

    score: float | None
    error: str | None = None


class Scorer(Protocol):
    def score(self, items: Sequence[tuple[str, str]]) -> list[float]: ...


class LocalScorer:
    """The reward model in this process; one forward pass at a time (frameworks call from several threads)."""

    def __init__(self, rm: RewardModel | str | Path) -> None:
        if isinstance(rm, (str, Path)):
            from orchrm.rm import RewardModel

            rm = RewardModel.load(rm)
        self.rm = rm
        self._lock = threading.Lock()

    def score(self, items: Sequence[tuple[str, str]]) -> list[float]:
        with self._lock:
            return self.rm.score_items(items)

    async def ascore(self, items: Sequence[tuple[str, str]]) -> list[float]:
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

    def _body(self, items: Sequence[tuple[str, str]]) -> dict[str, Any]:
        return {"items": [{"question": q, "plan": p} for q, p in items]}

    def score(self, items: Sequence[tuple[str, str]]) -> list[float]:
        import httpx

        out: list[float] = []
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

    async def ascore(self, items: Sequence[tuple[str, str]]) -> list[float]:
        import httpx

        out: list[float] = []
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

    def _settle(self, response: Any, n: int, attempt: int) -> list[float] | None:
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

    def _scores(self, response: Any, n: int) -> list[float]:
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
        for s in scores:
            if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s):
                raise RewardServerError(f"{where} answered a score that is not a finite number: {s!r}"[:300])
        return [float(s) for s in scores]


def open_scorer(
    rm: RewardModel | str | Path | None = None, url: str | None = None, token: str | None = None
) -> LocalScorer | RemoteScorer:
    """The in-process model (`rm`: a `RewardModel` or its folder) or the server at `url`: exactly one."""
    if (rm is None) == (url is None):
        raise ConfigError(
            "give the reward model either in process (rm=folder) or as a server (url=...), not both or neither"
        )
    return LocalScorer(rm) if rm is not None else RemoteScorer(url, token=token)  # type: ignore[arg-type]


@lru_cache(maxsize=8)
def cached_scorer(rm: str | None, url: str | None, token: str | None) -> LocalScorer | RemoteScorer:
    """One scorer per process for file-loaded adapters (verl, OpenRLHF) that are called item by item."""
    return open_scorer(rm=rm, url=url, token=token)


def _pending(
    questions: Sequence[Any], texts: Sequence[str], missing: str
) -> tuple[list[Verdict | None], list[int], list[tuple[str, str]]]:
    verdicts: list[Verdict | None] = []
    index, items = [], []
    for i, (q, text) in enumerate(zip(questions, texts, strict=True)):
        plan = plan_text(text) if isinstance(text, str) else ""
        if not isinstance(q, str) or not q.strip():
            verdicts.append(Verdict(None, missing))
        elif not plan:
            verdicts.append(Verdict(None, "empty completion: no plan to score"))
        else:
            verdicts.append(None)
            index.append(i)
            items.append((q, plan))
    return verdicts, index, items


def _fill(verdicts: list[Verdict | None], index: list[int], scores: list[float] | OrchrmError) -> list[Verdict]:
    for n, i in enumerate(index):
        verdicts[i] = Verdict(None, str(scores)) if isinstance(scores, OrchrmError) else Verdict(scores[n])
    return verdicts  # type: ignore[return-value]


def judge(
    scorer: Scorer, questions: Sequence[Any], texts: Sequence[str], *, missing: str = "no question"
) -> list[Verdict]:
    """A verdict per (question, completion text): the RM's score of the plan in it, or the reason it has none
    (no question, an empty completion, a server that failed: its one-line error)."""
    verdicts, index, items = _pending(questions, texts, missing)
    if not items:
        return _fill(verdicts, index, [])
    try:
        scores: list[float] | OrchrmError = scorer.score(items)
    except RewardServerError as exc:
        scores = exc
    return _fill(verdicts, index, scores)


async def ajudge(
    scorer: LocalScorer | RemoteScorer, questions: Sequence[Any], texts: Sequence[str], *, missing: str = "no question"
) -> list[Verdict]:
    """`judge` without blocking the event loop."""
    verdicts, index, items = _pending(questions, texts, missing)
    if not items:
        return _fill(verdicts, index, [])
    try:
        scores: list[float] | OrchrmError = await scorer.ascore(items)
    except RewardServerError as exc:
        scores = exc
    return _fill(verdicts, index, scores)


def report(verdicts: Sequence[Verdict], who: str) -> None:
    """One warning line per batch that had unscored items: how many, and the first reason."""
    failed = [v.error for v in verdicts if v.score is None]
    if failed:
        log.warning("%s: %d of %d completions unscored; first: %s", who, len(failed), len(verdicts), failed[0])
