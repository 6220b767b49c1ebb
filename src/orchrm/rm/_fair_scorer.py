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

The queue is bounded twice: at most `max_requests` requests and `max_items` items waiting. A request that
finds it full is held (back-pressure), not refused: callers are let in one at a time in arrival order as passes
free room, so a client that ignores Retry-After (OpenRLHF's own sends one sample a request, retries 5 times 1 s
apart and then leaves the reward empty) is not refused while the model makes progress. A held request is
refused (`QueueFull`, a 503 with Retry-After) only when the scorer is stuck, no pass taken or finished for
`stall_s`, when more than `max_held` callers are already held (memory stays bounded: the server's worker
threads bound them first), or when it alone holds more items than the queue. The model runs on this one thread
only, and the event loop never waits on it.

The last `recent` items' scores are kept (keyed by a hash of the rendered question and plan): a client that
gave up on a request and sends it again is answered from them instead of paying the model twice, which is
what lets a slow RM finish a burst within a retrying client's tries.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

Item = tuple[str, str]
ScoreBatch = Callable[[list[Item]], list[float]]


class QueueFull(Exception):
    """The request was not queued: the scorer is stuck, too many callers are held, or it is larger than the
    queue."""


class RecentScores:
    """The last `size` items' scores, by a 16-byte hash of the item (bounded memory whatever the items' length)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._scores: OrderedDict[bytes, float] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(item: Item) -> bytes:
        return hashlib.blake2b("\0".join(item).encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def get(self, item: Item) -> float | None:
        with self._lock:
            return self._scores.get(self.key(item))

    def put(self, items: Sequence[Item], scores: Sequence[float]) -> None:
        if self.size <= 0:
            return
        with self._lock:
            for item, score in zip(items, scores, strict=True):
                key = self.key(item)
                self._scores[key] = score
                self._scores.move_to_end(key)
            while len(self._scores) > self.size:
                self._scores.popitem(last=False)


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
        stall_s: float = 60.0,
        max_held: int = 4096,
        recent: int = 65_536,
    ) -> None:
        self.pass_tokens, self.max_requests, self.max_items = pass_tokens, max_requests, max_items
        self.stall_s, self.max_held = stall_s, max_held
        self.recent = RecentScores(recent)
        self._score_batch, self._tokens = score_batch, tokens
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)  # the model thread: work arrived
        self._room = threading.Condition(self._lock)  # held callers: room freed, or a pass finished
        self._waiting: list[_Job] = []  # jobs with items not yet sent
        self._waiting_items = 0
        self._held: deque[object] = deque()  # callers waiting for room, in arrival order
        self._progress = 0  # passes taken plus passes finished: what a held caller watches to tell busy from stuck
        self._arrivals = itertools.count()
        threading.Thread(target=self._run, name="orchrm-rm-scorer", daemon=True).start()

    def depth(self) -> tuple[int, int, int]:
        """(requests, items) waiting for the model now, and the callers held for room."""
        with self._lock:
            return len(self._waiting), self._waiting_items, len(self._held)

    def score(self, items: Sequence[Item]) -> list[float]:
        known = [self.recent.get(item) for item in items]
        missing = [item for item, score in zip(items, known) if score is None]
        if not missing:
            return known  # type: ignore[return-value]
        fresh = iter(self._queued(missing).future.result())
        return [next(fresh) if score is None else score for score in known]

    def _queued(self, items: Sequence[Item]) -> _Job:
        sizes = [max(1, self._tokens(item)) for item in items]  # in the caller's thread, not the model's
        if len(items) > self.max_items:
            raise QueueFull(f"{len(items)} items are more than the queue holds ({self.max_items})")
        with self._lock:
            self._admit(len(items))
            job = _Job(items, sizes, next(self._arrivals))
            self._waiting.append(job)
            self._waiting_items += len(items)
            self._ready.notify()
        return job

    def _full(self, n: int) -> bool:
        return len(self._waiting) >= self.max_requests or self._waiting_items + n > self.max_items

    def _admit(self, n: int) -> None:
        """Under the lock: returns once this caller is first in line and `n` items fit; raises QueueFull when
        too many are held or no pass was taken or finished for `stall_s` while it waited."""
        if not self._held and not self._full(n):
            return
        if len(self._held) >= self.max_held:
            raise QueueFull(f"{len(self._held)} requests are already held for room (at most {self.max_held})")
        ticket = object()
        self._held.append(ticket)
        try:
            while self._held[0] is not ticket or self._full(n):
                seen = self._progress
                if not self._room.wait(self.stall_s) and self._progress == seen:
                    raise QueueFull(
                        f"no forward pass taken or finished in {self.stall_s:g} s with {len(self._waiting)} "
                        f"requests and {self._waiting_items} items waiting (at most {self.max_requests} requests, "
                        f"{self.max_items} items)"
                    )
        finally:
            self._held.remove(ticket)
            self._room.notify_all()  # the next in line may fit now

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
        self._moved()
        return picked

    def _moved(self) -> None:
        """Under the lock: a pass was taken or finished; held callers look again."""
        self._progress += 1
        self._room.notify_all()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._waiting:
                    self._ready.wait()
                picked = self._take()
            items = [job.items[i] for job, i in picked]
            try:
                scores = self._score_batch(items)
            except BaseException as exc:  # noqa: BLE001 (handed to each request; the thread keeps serving)
                self._fail({job for job, _ in picked}, exc)
                continue
            self.recent.put(items, scores)
            with self._lock:
                self._moved()
            for (job, i), score in zip(picked, scores, strict=True):
                job.scores[i] = score
                job.scored += 1
                if job.scored == len(job.items):
                    job.future.set_result(job.scores)

    def _fail(self, jobs: set[_Job], exc: BaseException) -> None:
        with self._lock:
            for job in jobs:
                if job in self._waiting:
                    self._waiting.remove(job)
                    self._waiting_items -= len(job.items) - job.sent
            self._moved()
        for job in jobs:
            if not job.future.done():
                job.future.set_exception(exc)
