"""The server's scorer: one thread runs the model, requests wait in a bounded queue and share it fairly.

Each forward pass is built from the waiting requests, least served first: the requests that have had the
fewest items sent to the model come first (ties in arrival order), and the pass takes one item from each in
turn, round after round, while its padded size stays within `pass_tokens` (an item's size is `tokens(item)`,
an upper bound of its length in tokens; a pass is padded to its longest item, so it costs `n * longest`).
A pass takes at least one item, and an item that would pad the pass past the budget waits for a later one.
A 1-item request that arrives beside four requests of 256 long items is therefore scored in the next pass,
on its own or with other short items, not padded beside a long one: it waits for the pass in flight and its
own. (Least served first favours new requests; a stream of new requests could keep a long one waiting, which
the bounded queue limits.)

The queue is bounded twice: at most `max_requests` requests and `max_items` items waiting; a request over
either bound is refused at once (`QueueFull`, a 503 with Retry-After) instead of waiting without end. The
model runs on this one thread only, and the event loop never waits on it.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

Item = tuple[str, str]
ScoreBatch = Callable[[list[Item]], list[float]]


class QueueFull(Exception):
    """The scorer's queue holds as much as it may; the request was not queued."""


@dataclass(eq=False)  # compared and hashed by identity
class _Job:
    items: Sequence[Item]
    sizes: list[int]
    arrival: int
    future: Future[list[float]] = field(default_factory=Future)
    scores: list[float] = field(default_factory=list)
    sent: int = 0  # items handed to a forward pass
    scored: int = 0

    def __post_init__(self) -> None:
        self.scores = [0.0] * len(self.items)


class FairScorer:
    """`score(items)` blocks its caller (a worker thread of the server) until the model thread has scored them.

    `tokens(item)` bounds an item's length in tokens; the default, 1 an item, makes `pass_tokens` a count of
    items."""

    def __init__(
        self,
        score_batch: ScoreBatch,
        *,
        pass_tokens: int = 4,
        tokens: Callable[[Item], int] = lambda item: 1,
        max_requests: int = 32,
        max_items: int = 1024,
    ) -> None:
        self.pass_tokens, self.max_requests, self.max_items = pass_tokens, max_requests, max_items
        self._score_batch, self._tokens = score_batch, tokens
        self._ready = threading.Condition()
        self._waiting: list[_Job] = []  # jobs with items not yet sent
        self._waiting_items = 0
        self._arrivals = itertools.count()
        threading.Thread(target=self._run, name="orchrm-rm-scorer", daemon=True).start()

    def depth(self) -> tuple[int, int]:
        """(requests, items) waiting for the model now."""
        with self._ready:
            return len(self._waiting), self._waiting_items

    def score(self, items: Sequence[Item]) -> list[float]:
        if not items:
            return []
        sizes = [max(1, self._tokens(item)) for item in items]  # in the caller's thread, not the model's
        with self._ready:
            if len(self._waiting) >= self.max_requests or self._waiting_items + len(items) > self.max_items:
                raise QueueFull(
                    f"{len(self._waiting)} requests with {self._waiting_items} items are waiting "
                    f"(at most {self.max_requests} requests, {self.max_items} items)"
                )
            job = _Job(items, sizes, next(self._arrivals))
            self._waiting.append(job)
            self._waiting_items += len(items)
            self._ready.notify()
        return job.future.result()

    def _take(self) -> list[tuple[_Job, int]]:
        """The next forward pass: the least-served jobs first, one item of each in turn, within `pass_tokens`."""
        order = sorted(self._waiting, key=lambda job: (job.sent, job.arrival))
        picked: list[tuple[_Job, int]] = []
        longest, added = 0, True
        while added:
            added = False
            for job in order:
                if job.sent == len(job.items):
                    continue
                size = max(longest, job.sizes[job.sent])
                if picked and size * (len(picked) + 1) > self.pass_tokens:
                    continue
                picked.append((job, job.sent))
                job.sent += 1
                longest, added = size, True
        self._waiting = [job for job in self._waiting if job.sent < len(job.items)]
        self._waiting_items -= len(picked)
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
