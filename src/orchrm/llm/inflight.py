"""`InFlight`: identical requests in flight at the same moment go to the backend once.

Two callers asking for the same cache key at once (two plans whose first sub-agent gets the same input, two
judged trajectories that read alike) would both miss the response cache and each take a server slot for the
same answer. The first to ask leads: its request goes to the backend. The others follow: they wait for the
leader's completion and take it as a cache hit, which is what they would have got a moment later, once the
leader's answer was in the cache. A leader that brings back nothing the cache would keep (a failure, a reply off
the schema, a cancelled request) leaves each follower to ask for itself, as it did before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from .types import Completion


class InFlight:
    """The requests being answered now, by cache key, per event loop (an `LLM` may serve several loops)."""

    def __init__(self) -> None:
        self._leaders: dict[tuple[int, str], asyncio.Future[Completion | None]] = {}

    def split(self, keys: dict[int, str]) -> tuple[dict[int, asyncio.Future[Completion | None]], list[int]]:
        """The samples (index -> key) another caller is already asking for (index -> its answer to come), and those
        this caller leads; call `settle` for the led ones once they are answered."""
        loop = asyncio.get_running_loop()
        follow: dict[int, asyncio.Future[Completion | None]] = {}
        lead: list[int] = []
        for i, key in keys.items():
            leader = self._leaders.get((id(loop), key))
            if leader is not None:
                follow[i] = leader
            else:
                self._leaders[(id(loop), key)] = loop.create_future()
                lead.append(i)
        return follow, lead

    def settle(self, keys: dict[int, str], got: dict[int, Completion], keep: Callable[[Completion], bool]) -> None:
        """Hand the led samples' answers (`got`, by index) to their followers: a completion the cache would keep
        (`keep`), else None (the follower asks for itself)."""
        loop = id(asyncio.get_running_loop())
        for i, key in keys.items():
            leader = self._leaders.pop((loop, key), None)
            if leader is not None and not leader.done():
                c = got.get(i)
                leader.set_result(c if c is not None and keep(c) else None)

    @staticmethod
    async def answers(follow: dict[int, asyncio.Future[Completion | None]]) -> dict[int, Completion | None]:
        """The followed samples' answers, each as a cache hit under its own index; None: ask for it yourself."""
        out: dict[int, Completion | None] = {}
        for i, leader in follow.items():
            c = await asyncio.shield(leader)  # a cancelled follower must not cancel the leader's future
            out[i] = None if c is None else c.model_copy(update={"sample_index": i, "cached": True, "latency_s": 0.0})
        return out
