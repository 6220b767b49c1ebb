"""Two awaitables at once: both results in order, or the first failure and the other stopped."""

import asyncio
import time

import pytest

from orchrm.side_by_side import side_by_side


def test_both_results_come_back_in_the_order_given():
    async def after(s, value):
        await asyncio.sleep(s)
        return value

    assert asyncio.run(side_by_side(after(0.02, "first"), after(0.0, "second"))) == ("first", "second")


def test_a_failure_on_one_side_stops_the_other_at_once():
    stopped = []

    async def long_training():
        try:
            await asyncio.sleep(30)
        finally:
            stopped.append("training")

    async def failing_held_out():
        await asyncio.sleep(0.01)
        raise RuntimeError("held-out rollout failed")

    start = time.monotonic()
    with pytest.raises(RuntimeError, match="held-out rollout failed"):
        asyncio.run(side_by_side(long_training(), failing_held_out()))
    assert time.monotonic() - start < 5 and stopped == ["training"]
