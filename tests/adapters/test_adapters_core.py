"""What the adapters share: the plan in a completion, and scorers that match `RewardModel.score` or fail in one line."""

import asyncio
import json

import pytest

from adapter_fakes import ITEMS
from live_server import free_port
from orchrm.adapters import RewardServerError, plan_text
from orchrm.adapters._core import LocalScorer, RemoteScorer, judge, open_scorer, plan_after_prompt
from orchrm.errors import ConfigError

PLAN = json.dumps({"answer": "4"})


@pytest.mark.parametrize(
    "completion",
    [
        PLAN,
        f"  {PLAN}\n",
        f"{PLAN}<|im_end|>",
        f"<|im_start|>assistant\n{PLAN}<|im_end|>\n",
        f"<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>assistant\n{PLAN}<|im_end|>\n<|im_start|>user\nmore?",
        f"<|start_header_id|>assistant<|end_header_id|>\n\n{PLAN}<|eot_id|>",
        f"{PLAN}</s>",
    ],
)
def test_the_chat_template_is_cut_away(completion):
    assert plan_text(completion) == PLAN


def test_nothing_left_is_empty():
    assert plan_text("<|im_start|>assistant\n<|im_end|>") == "" and plan_text("   ") == ""


def test_the_plan_after_its_prompt():
    prompt = "<|im_start|>user\nplan it<|im_end|>\n<|im_start|>assistant\n"
    assert plan_after_prompt(prompt + PLAN + "<|im_end|>", prompt) == PLAN
    assert plan_after_prompt("truncated prompt<|im_start|>assistant\n" + PLAN, prompt) == PLAN
    assert plan_after_prompt("no template at all " + PLAN, prompt) is None


def test_local_and_remote_scorers_match_the_model(rm, rm_folder, server, expected):
    items = [(q, plan_text(p)) for q, p in ITEMS]
    assert LocalScorer(rm).score(items) == pytest.approx(expected, abs=1e-5)
    assert LocalScorer(rm_folder).score(items) == pytest.approx(expected, abs=1e-5)
    remote = RemoteScorer(server)
    assert remote.score(items) == pytest.approx(expected, abs=1e-5)
    assert asyncio.run(remote.ascore(items)) == pytest.approx(expected, abs=1e-5)


def test_requests_past_the_server_limit_go_in_pieces(server, rm):
    items = [(q, plan_text(p)) for q, p in ITEMS] * 30  # 150 items; the server takes 8 a request, the client sends 64
    import orchrm.adapters._core as core

    old, core.REQUEST_ITEMS = core.REQUEST_ITEMS, 8
    try:
        assert RemoteScorer(server).score(items) == pytest.approx(rm.score_items(items), abs=1e-5)
    finally:
        core.REQUEST_ITEMS = old


def test_exactly_one_model():
    with pytest.raises(ConfigError, match="not both or neither"):
        open_scorer()
    with pytest.raises(ConfigError, match="not both or neither"):
        open_scorer(rm="x", url="http://h")
    with pytest.raises(ConfigError, match="not http"):
        open_scorer(url="localhost:8765")


def test_a_server_that_is_down_is_one_line():
    scorer = RemoteScorer(f"http://127.0.0.1:{free_port()}", retries=1)
    with pytest.raises(RewardServerError) as err:
        scorer.score([("q", PLAN)])
    assert "unreachable after 2 tries" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(RewardServerError, match="unreachable"):
        asyncio.run(scorer.ascore([("q", PLAN)]))


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (200, b"<html>hello</html>", "not acceptable JSON"),
        (200, b'{"scores": [1.0, 2.0]}', "2 scores for 1 items"),
        (200, b'{"rewards": [1.0]}', "no 'scores' list"),
        (200, b"[1.0]", "no 'scores' list"),
        (200, b'{"scores": ["1.0"]}', "not a finite number"),
        (200, b'{"scores": [NaN]}', "not acceptable JSON"),
        (200, b'{"scores": [true]}', "not a finite number"),
        (200, b'{"scores": [1' + b"0" * 400 + b"]}", "not acceptable JSON"),
        (401, b'{"detail": "missing or wrong bearer token"}', "HTTP 401: .*bearer token"),
        (503, b"overloaded", "HTTP 503"),
    ],
)
def test_a_server_that_answers_garbage_is_one_line(garbage, status, body, message):
    garbage.status, garbage.body = status, body
    scorer = RemoteScorer(garbage.url, retries=1)
    with pytest.raises(RewardServerError, match=message) as err:
        scorer.score([("q", PLAN)])
    assert "\n" not in str(err.value)
    assert garbage.posts == (2 if status >= 500 else 1)  # only server errors are retried


def test_judge_names_every_item_it_cannot_score(rm, garbage):
    verdicts = judge(LocalScorer(rm), ["q", None, "", "q"], [PLAN, PLAN, PLAN, "<|im_start|>assistant\n<|im_end|>"])
    assert verdicts[0].score is not None and verdicts[0].error is None
    assert [v.score for v in verdicts[1:]] == [None, None, None]
    assert [v.error for v in verdicts[1:]] == ["no question", "no question", "empty completion: no plan to score"]
    garbage.body = b"garbage"
    failed = judge(RemoteScorer(garbage.url, retries=0), ["q", "q"], [PLAN, PLAN])
    assert all(v.score is None and "not acceptable JSON" in v.error for v in failed)
