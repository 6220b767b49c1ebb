"""`orchrm serve` as a scorer, under a training job's load: a request the server cannot take now is delayed,
not failed.

A 503 / 429 / 5xx answer, a connection refused, reset or closed mid-response is tried again after the server's
`Retry-After` (bounded to `MAX_RETRY_AFTER_S`; a value that is not a number is ignored) or a jittered
exponential backoff, whichever is longer, until `deadline_s` has passed since the first try. Only the deadline
passed or a 4xx answer is a failure (`RewardServerError`, one line naming the server and the deadline); the
adapters record such an item as unscored, never as the invalid-plan penalty.
"""

from __future__ import annotations

import asyncio
import math
import random
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from orchrm import safejson
from orchrm.errors import ConfigError, OrchrmError

if TYPE_CHECKING:
    from orchrm.mas.plans import Plan

#: The server's limits (`orchrm serve --max-items`); larger batches are sent in pieces of this size.
REQUEST_ITEMS = 64
#: Response bodies are read under these bounds: a server that answers garbage gets an error, not a hang.
RESPONSE_LIMITS = safejson.Limits(max_chars=20_000_000, max_depth=8, max_number_chars=100)
#: How long a request waits for a busy or absent server by default: longer than a training step's reward burst.
DEADLINE_S = 300.0
#: The longest wait a server's Retry-After may ask for, and the longest backoff between tries.
MAX_RETRY_AFTER_S = 30.0
MAX_BACKOFF_S = 8.0
#: Answers that mean "not now" rather than "no".
_RETRY_STATUS = frozenset({408, 429}) | frozenset(range(500, 600))
_SECONDS = re.compile(r"\s*[0-9]{1,6}(?:\.[0-9]{1,3})?\s*")
#: What a scorer gives one valid plan: the RM's raw score, or the reason the server gave none.
Raw = float | str


class RewardServerError(OrchrmError):
    """The reward server was unreachable or busy past the deadline, refused the request, or answered something
    other than one score per item."""


def retry_after(value: str | None) -> float | None:
    """A `Retry-After` header in seconds, bounded to [0, MAX_RETRY_AFTER_S]; None when it is not a number of
    seconds (an HTTP date, a negative or garbled value)."""
    if value is None or not _SECONDS.fullmatch(value):
        return None
    return min(float(value), MAX_RETRY_AFTER_S)


@dataclass
class Backoff:
    """When to try one request again, until `deadline_s` after its first try."""

    deadline_s: float
    started: float = field(default_factory=time.monotonic)
    tries: int = 0
    last: str = ""  # what the last try met, for the message when the deadline passes

    def wait(self, asked: float | None, what: str) -> float | None:
        """Seconds to sleep before the next try, or None when the deadline has passed."""
        self.tries, self.last = self.tries + 1, what
        left = self.deadline_s - (time.monotonic() - self.started)
        if left <= 0:
            return None
        jittered = min(MAX_BACKOFF_S, 0.25 * 2 ** min(self.tries - 1, 10)) * random.uniform(0.5, 1.5)
        return min(max(jittered, asked or 0.0), left)


@dataclass
class _Try:
    """One POST of the retry loop: the body to send, and what came back (a response, or the transport error)."""

    body: dict[str, Any]
    response: Any = None


def _plan_field(plan: Plan | str) -> Any:
    if isinstance(plan, str):
        return plan
    return plan.model_dump(mode="json")


class RemoteScorer:
    """`orchrm serve` over HTTP (`POST {url}/score`): the raw score of each plan (a `Plan`, or the orchestrator's raw
    text, as `RewardModel.score` takes), or the server's reason for none. Busy and unreachable servers are waited for (module docstring); anything else that is not one finite
    score or `null` per item is a `RewardServerError`."""

    def __init__(
        self, url: str, *, token: str | None = None, timeout: float = 60.0, deadline_s: float = DEADLINE_S
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"reward server URL {url!r} is not http(s)", hint="e.g. http://127.0.0.1:8765")
        if not deadline_s >= 0:
            raise ConfigError(f"the reward server deadline must be a number of seconds >= 0, not {deadline_s!r}")
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.timeout = timeout
        self.deadline_s = deadline_s

    def _body(self, items: Sequence[tuple[str, Plan | str]]) -> dict[str, Any]:
        # A plan as text is sent as written: the server reads it with the same reader `RewardModel.score` uses.
        return {"items": [{"question": q, "plan": _plan_field(p)} for q, p in items]}

    def _chunks(self, items: Sequence[tuple[str, Plan | str]]) -> list[Sequence[tuple[str, Plan | str]]]:
        return [items[i : i + REQUEST_ITEMS] for i in range(0, len(items), REQUEST_ITEMS)]

    def score(self, items: Sequence[tuple[str, Plan | str]]) -> list[Raw]:
        import httpx

        out: list[Raw] = []
        with httpx.Client(timeout=self.timeout, headers=self.headers) as client:
            for step in self._steps(items, out):
                if isinstance(step, float):
                    time.sleep(step)
                    continue
                try:
                    step.response = client.post(f"{self.url}/score", json=step.body)
                except httpx.TransportError as exc:
                    step.response = exc
        return out

    async def ascore(self, items: Sequence[tuple[str, Plan | str]]) -> list[Raw]:
        import httpx

        out: list[Raw] = []
        async with httpx.AsyncClient(timeout=self.timeout, headers=self.headers) as client:
            for step in self._steps(items, out):
                if isinstance(step, float):
                    await asyncio.sleep(step)
                    continue
                try:
                    step.response = await client.post(f"{self.url}/score", json=step.body)
                except httpx.TransportError as exc:
                    step.response = exc
        return out

    def _steps(self, items: Sequence[tuple[str, Plan | str]], out: list[Raw]) -> Iterator[_Try | float]:
        """The retry loop, written once for `score` and `ascore`: each step is a `_Try` to post (the driver sets its
        `response`, a transport error included, before asking for the next step) or seconds to sleep. The scores
        are appended to `out`, chunk by chunk; the deadline passed or a 4xx answer raises from here."""
        for chunk in self._chunks(items):
            backoff = Backoff(self.deadline_s)
            while True:
                attempt = _Try(self._body(chunk))
                yield attempt
                outcome = self._settle(attempt.response, len(chunk), backoff)
                if isinstance(outcome, list):
                    out += outcome
                    break
                yield outcome

    def _settle(self, response: Any, n: int, backoff: Backoff) -> list[Raw] | float:
        """One try's outcome: the scores, or seconds to wait before the next
        try (the server busy or unreachable, the deadline not passed); otherwise raises."""
        if isinstance(response, Exception):
            wait = backoff.wait(None, f"{type(response).__name__}: {response}"[:200])
        elif response.status_code in _RETRY_STATUS:
            detail = " ".join(response.text.split())[:120]
            wait = backoff.wait(
                retry_after(response.headers.get("retry-after")), f"HTTP {response.status_code}: {detail}"
            )
        else:
            return self._scores(response, n)
        if wait is None:
            raise RewardServerError(
                f"reward server {self.url} still unavailable after {self.deadline_s:g} s ({backoff.tries} tries); "
                f"last: {backoff.last}",
                hint="is `orchrm serve` running there? a longer deadline_s waits longer",
            )
        return wait

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
        errors = body.get("errors")
        errors = errors if isinstance(errors, list) and len(errors) == n else [None] * n
        out: list[Raw] = []
        for s, e in zip(scores, errors):
            if s is None:
                out.append(f"the reward server scored no plan: {e if isinstance(e, str) else 'no reason given'}"[:300])
            elif isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s):
                raise RewardServerError(f"{where} answered a score that is not a finite number: {s!r}"[:300])
            else:
                out.append(float(s))
        return out
