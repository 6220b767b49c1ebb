"""The server's scorer: one thread runs the model, requests wait in a bounded queue and share it fairly.

A request's items are scored in slices of at most `slice_items`, and each forward pass takes one item from
each waiting request in turn (round robin). A 1-item request that arrives behind four requests of 256 items
is therefore in the next pass, not behind 1,024 items: it waits for at most two passes. The queue is bounded twice: at most `max_requests`
requests and `max_items` items waiting; a request over either bound is refused at once (`QueueFull`, a 503
with Retry-After) instead of waiting without end. The model runs on this one thread only: torch already
uses every core for one pass, and the event loop never waits on it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

ScoreBatch = Callable[[list[tuple[str, str]]], list[float]]


class QueueFull(Exception):
    """The scorer's queue holds as much as it may; the request was not queued."""


@dataclass(eq=False)  # compared and hashed by identity
class _Job:
    items: Sequence[tuple[str, str]]
    future: Future[list[float]] = field(default_factory=Future)
    scores: list[float] = field(default_factory=list)
    sent: int = 0  # items handed to a forward pass
    scored: int = 0

    def __post_init__(self) -> None:
        self.scores = [0.0] * len(self.items)


class FairScorer:
    """`score(items)` blocks its caller (a worker thread of the server) until the model thread has scored them."""

    def __init__(self, score_batch: ScoreBatch, *, slice_items: int = 4, max_requests: int = 32, max_items: int = 1024) -> None:
        self.slice_items, self.max_requests, self.max_items = slice_items, max_requests, max_items
        self._score_batch = score_batch
        self._ready = threading.Condition()
        self._waiting: deque[_Job] = deque()  # jobs with items not yet sent, in round-robin order
        self._waiting_items = 0
        threading.Thread(target=self._run, name="orchrm-rm-scorer", daemon=True).start()

    def score(self, items: Sequence[tuple[str, str]]) -> list[float]:
        if not items:
            return []
        job = _Job(items)
        with self._ready:
            if len(self._waiting) >= self.max_requests or self._waiting_items + len(items) > self.max_items:
                raise QueueFull(f"{len(self._waiting)} requests with {self._waiting_items} items are waiting "
                                f"(at most {self.max_requests} requests, {self.max_items} items)")  # fmt: skip
            self._waiting.append(job)
            self._waiting_items += len(items)
            self._ready.notify()
        return job.future.result()

    def _take(self) -> list[tuple[_Job, int]]:
        """The next forward pass: one item from each waiting job in turn, up to `slice_items`."""
        picked: list[tuple[_Job, int]] = []
        while self._waiting and len(picked) < self.slice_items:
            job = self._waiting.popleft()
            picked.append((job, job.sent))
            job.sent += 1
            self._waiting_items -= 1
            if job.sent < len(job.items):
                self._waiting.append(job)
        return picked

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._waiting:
                    self._ready.wait()
                picked = self._take()
            try:
                scores = self._score_batch([job.items[i] for job, i in picked])
            except BaseException as exc:  # noqa: BLE001 (handed to each request; the thread keeps serving)
                self._fail({job for job, _ in picked}, exc)
                continue
            for (job, i), score in zip(picked, scores, strict=True):
                job.scores[i] = score
                job.scored += 1
                if job.scored == len(job.items):
                    job.future.set_result(job.scores)

    def _fail(self, jobs: set[_Job], exc: BaseException) -> None:
        with self._ready:
            for job in jobs:
                if job in self._waiting:
                    self._waiting.remove(job)
                    self._waiting_items -= len(job.items) - job.sent
        for job in jobs:
            if not job.future.done():
                job.future.set_exception(exc)
