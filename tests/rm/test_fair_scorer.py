"""The server's scorer: passes within a token budget, least-served requests first, a bounded queue, failures
handed back."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from orchrm.rm._fair_scorer import FairScorer, QueueFull


class GatedModel:
    """Scores an item by its plan text's length; holds each pass until the test opens the gate."""

    def __init__(self) -> None:
        self.passes: list[list[str]] = []
        self.gate = threading.Event()
        self.entered = threading.Event()

    def __call__(self, items):
        self.passes.append([plan for _, plan in items])
        self.entered.set()
        assert self.gate.wait(10)
        return [float(len(plan)) for _, plan in items]


def _items(tag, n):
    return [("q", f"{tag}{i}") for i in range(n)]


def test_each_pass_takes_one_item_from_each_waiting_request_in_turn():
    model = GatedModel()
    scorer = FairScorer(model, pass_tokens=4, max_requests=8, max_items=100)
    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(scorer.score, _items("w", 1))  # holds the model while the others queue
        assert model.entered.wait(10)
        heavy = [pool.submit(scorer.score, _items(tag, 6)) for tag in "ab"]
        while scorer._waiting_items < 12:
            time.sleep(0.001)
        small = pool.submit(scorer.score, _items("s", 1))
        while scorer._waiting_items < 13:
            time.sleep(0.001)
        model.gate.set()
        assert small.result(10) == [2.0] and first.result(10) == [2.0]
        assert heavy[0].result(10) == [2.0] * 6
    assert model.passes[1] == ["a0", "b0", "s0", "a1"]  # the 1-item request is in the next pass
    assert model.passes[2] == ["b1", "a2", "b2", "a3"]
    assert sorted(sum(model.passes, [])) == sorted(["w0", "s0"] + [f"{t}{i}" for t in "ab" for i in range(6)])


# Issue 48 overrides the old rule (a full queue refused at once, 503): a client that ignores Retry-After
# (OpenRLHF's own) must not be refused while the model makes progress, so a full queue now holds the caller.
def test_a_full_queue_holds_the_caller_until_a_pass_frees_room():
    model = GatedModel()
    scorer = FairScorer(model, pass_tokens=2, max_requests=2, max_items=5)
    with ThreadPoolExecutor(3) as pool:
        running = pool.submit(scorer.score, _items("r", 1))
        assert model.entered.wait(10)
        queued = pool.submit(scorer.score, _items("a", 4))
        while scorer._waiting_items < 4:
            time.sleep(0.001)
        held = pool.submit(scorer.score, _items("b", 2))  # 6 items would wait: held, not refused
        while scorer.depth()[2] < 1:
            time.sleep(0.001)
        assert not held.done() and scorer.depth() == (1, 4, 1)
        model.gate.set()
        assert running.result(10) == [2.0] and queued.result(10) == [2.0] * 4 and held.result(10) == [2.0] * 2
    assert scorer.depth() == (0, 0, 0)


def test_held_callers_are_let_in_in_arrival_order():
    model = GatedModel()
    scorer = FairScorer(model, pass_tokens=1, max_requests=1, max_items=10)
    with ThreadPoolExecutor(5) as pool:
        first = pool.submit(scorer.score, _items("w", 1))
        assert model.entered.wait(10)
        futures = []
        for tag in "abc":  # a fills the queue; b then c are held, in that order
            futures.append(pool.submit(scorer.score, _items(tag, 2)))
            while scorer.depth()[0] + scorer.depth()[2] < len(futures):
                time.sleep(0.001)
        model.gate.set()
        assert [f.result(10) for f in futures] == [[2.0, 2.0]] * 3 and first.result(10) == [2.0]
    assert model.passes == [["w0"], ["a0"], ["a1"], ["b0"], ["b1"], ["c0"], ["c1"]]


def test_a_stuck_model_refuses_the_held_caller_after_stall_s():
    model = GatedModel()
    scorer = FairScorer(model, pass_tokens=2, max_requests=1, max_items=5, stall_s=0.2)
    with ThreadPoolExecutor(2) as pool:
        running = pool.submit(scorer.score, _items("r", 1))
        assert model.entered.wait(10)
        queued = pool.submit(scorer.score, _items("a", 1))
        while scorer._waiting_items < 1:
            time.sleep(0.001)
        started = time.monotonic()
        with pytest.raises(QueueFull, match="no forward pass taken or finished in 0.2 s"):
            scorer.score(_items("b", 1))
        assert time.monotonic() - started >= 0.2
        with pytest.raises(QueueFull, match="6 items are more than the queue holds"):
            scorer.score(_items("c", 6))  # could never fit: refused at once
        model.gate.set()
        assert running.result(10) == [2.0] and queued.result(10) == [2.0]
    assert scorer.score(_items("d", 2)) == [2.0, 2.0]  # room again


def test_too_many_held_callers_are_refused_at_once():
    model = GatedModel()
    scorer = FairScorer(model, pass_tokens=1, max_requests=1, max_items=5, max_held=1)
    with ThreadPoolExecutor(3) as pool:
        running = pool.submit(scorer.score, _items("r", 1))
        assert model.entered.wait(10)
        queued = pool.submit(scorer.score, _items("a", 1))
        while scorer._waiting_items < 1:
            time.sleep(0.001)
        held = pool.submit(scorer.score, _items("b", 1))
        while scorer.depth()[2] < 1:
            time.sleep(0.001)
        with pytest.raises(QueueFull, match="1 requests are already held"):
            scorer.score(_items("c", 1))
        model.gate.set()
        assert [f.result(10) for f in (running, queued, held)] == [[2.0]] * 3


def test_an_item_scored_lately_is_answered_without_the_model():
    calls = []

    def model(items):
        calls.append([plan for _, plan in items])
        return [float(len(plan)) for _, plan in items]

    scorer = FairScorer(model, pass_tokens=4, recent=3)
    assert scorer.score(_items("a", 3)) == [2.0] * 3
    assert scorer.score([("q", "a1"), ("q", "new"), ("q", "a0")]) == [2.0, 3.0, 2.0]  # a retry: only "new" is run
    assert calls == [["a0", "a1", "a2"], ["new"]]
    scorer.score(_items("b", 3))  # pushes the a's out of the 3 kept
    scorer.score(_items("a", 1))
    assert calls[-1] == ["a0"]


def test_a_failed_pass_fails_its_requests_and_the_scorer_goes_on():
    calls = []

    def model(items):
        calls.append(len(items))
        if len(calls) == 1:
            raise RuntimeError("out of memory")
        return [0.5] * len(items)

    scorer = FairScorer(model, pass_tokens=2)
    with pytest.raises(RuntimeError, match="out of memory"):
        scorer.score(_items("a", 5))
    assert scorer._waiting_items == 0
    assert scorer.score(_items("b", 3)) == [0.5] * 3


def test_a_new_request_goes_before_those_already_served():
    model = GatedModel()
    scorer = FairScorer(model, pass_tokens=2)
    with ThreadPoolExecutor(2) as pool:
        heavy = pool.submit(scorer.score, _items("a", 5))  # a0, a1 held in the model
        assert model.entered.wait(10)
        small = pool.submit(scorer.score, _items("s", 1))
        while scorer._waiting_items < 4:
            time.sleep(0.001)
        model.gate.set()
        assert small.result(10) == [2.0] and heavy.result(10) == [2.0] * 5
    assert model.passes == [["a0", "a1"], ["s0", "a2"], ["a3", "a4"]]


def test_a_short_item_is_not_padded_beside_long_ones():
    model = GatedModel()
    long, short = "x" * 100, "y"
    scorer = FairScorer(model, pass_tokens=100, tokens=lambda item: len(item[1]))
    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(scorer.score, [("q", short)])  # holds the model while the others queue
        assert model.entered.wait(10)
        heavy = pool.submit(scorer.score, [("q", long)] * 3)
        while scorer._waiting_items < 3:
            time.sleep(0.001)
        small = pool.submit(scorer.score, [("q", short)] * 2)
        while scorer._waiting_items < 5:
            time.sleep(0.001)
        model.gate.set()
        assert small.result(10) == [1.0, 1.0] and heavy.result(10) == [100.0] * 3 and first.result(10) == [1.0]
    # the heavy request arrived first, so it opens the next pass, alone: the short items would pad to 3 x 100
    assert model.passes == [[short], [long], [short, short], [long], [long]]
