"""Two awaitables run at once, where the first failure stops the other instead of leaving it to run unobserved."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Any, TypeVar

__all__ = ["side_by_side"]

A = TypeVar("A")
B = TypeVar("B")


async def side_by_side(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Both at once; the first failure stops the other (work already in a thread finishes first)."""
    tasks = (asyncio.ensure_future(first), asyncio.ensure_future(second))
    try:
        a, b = await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            await _stopped(t)
    return a, b


async def _stopped(task: asyncio.Future[Any]) -> None:
    """`task` cancelled and waited for when it is still running (the work beside it failed); a finished one is
    left as it is, its outcome read by whoever awaited it."""
    if task.done():
        if not task.cancelled():
            task.exception()  # read: a failure the other error overtook is not reported again as never retrieved
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
