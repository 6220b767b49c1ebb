"""`Permits`: a first-come-first-served counting semaphore whose holders take several permits at once.

A request for k completions of one prompt needs k server slots free together (llama-server defers a
k-completion request until it can start all k). With a plain semaphore, single requests slip past it for
ever; here a waiter at the head of the queue blocks the ones behind it, so the group gets its k permits
as soon as k are returned, and no more requests are in flight than the server has slots.
"""

from __future__ import annotations

import asyncio
from collections import deque


class Permits:
    """`total` permits; `acquire(k)` waits in arrival order until k are free (k is capped at `total`)."""

    def __init__(self, total: int) -> None:
        if total < 1:
            raise ValueError(f"permits must be at least 1, got {total}")
        self.total = total
        self.free = total
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    async def acquire(self, k: int = 1) -> int:
        """Take `min(k, total)` permits; returns how many were taken (what `release` must give back)."""
        k = max(1, min(k, self.total))
        if not self._waiters and self.free >= k:
            self.free -= k
            return k
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((k, fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release(k)  # granted just as it was cancelled: give the permits back
            else:
                self._waiters = deque(w for w in self._waiters if w[1] is not fut)
                self._wake()
            raise
        return k

    def release(self, k: int) -> None:
        self.free += k
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self._waiters[0][1].done():
            self._waiters.popleft()
        while self._waiters and self.free >= self._waiters[0][0]:
            k, fut = self._waiters.popleft()
            if fut.done():
                continue
            self.free -= k
            fut.set_result(None)

    def held(self, k: int = 1) -> _Held:
        """`async with permits.held(k):` takes k permits for the block."""
        return _Held(self, k)


class _Held:
    def __init__(self, permits: Permits, k: int) -> None:
        self.permits, self.k, self.taken = permits, k, 0

    async def __aenter__(self) -> int:
        self.taken = await self.permits.acquire(self.k)
        return self.taken

    async def __aexit__(self, *exc: object) -> None:
        self.permits.release(self.taken)
