"""What the adapters share: the plan in a completion, the reward contract, and scorers that match
`RewardModel.score` or fail in one line."""

import asyncio
import json

import pytest

from adapter_fakes import BAD_COMPLETIONS, GOOD, ITEMS, train_orchestrator_rewards
from live_server import free_port
from orchrm.adapters import RewardServerError, plan_text
from orchrm.adapters._core import LocalScorer, RemoteScorer, cached_scorer, judge, open_scorer, plan_after_prompt
from orchrm.errors import ConfigError
from orchrm.mas.completion import read_plan
from orchrm.mas.plans import parse_plan
from orchrm.rm.reward import RewardContract

PLAN = json.dumps({"answer": "4"})
VALID = RewardContract().check(GOOD)


def _valid_items():
    """ITEMS' valid plans, as the scorers take them: (question, checked plan)."""
    contract, out = RewardContract(), []
    for q, text in ITEMS:
        try:
            out.append((q, contract.check(text)))
        except Exception:
            pass
    return out


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
    assert plan_text(plan_after_prompt(prompt + PLAN + "<|im_end|>", prompt)) == PLAN
    assert plan_text(plan_after_prompt("truncated prompt<|im_start|>assistant\n" + PLAN, prompt)) == PLAN
    assert plan_after_prompt("no template at all " + PLAN, prompt) is None


@pytest.mark.parametrize(("name", "completion", "valid"), BAD_COMPLETIONS, ids=[b[0] for b in BAD_COMPLETIONS])
def test_the_contract_finds_every_plan_and_only_plans(name, completion, valid):
    contract = RewardContract()
    if not valid:
        with pytest.raises(Exception) as err:
            contract.check(completion)
        assert type(err.value).__name__ == "PlanError"
        return
    plan = contract.check(completion)
    if name != "mas-orchestra xml":  # the final plan, never the draft or the thought
        assert plan == contract.check(GOOD) and read_plan(completion) == parse_plan(GOOD)


def test_the_bad_completion_set_is_paid_as_train_orchestrator_pays_it(rm):
    """Every adapter's judge gives each text of the set exactly what `train-orchestrator --reward rm` gives."""
    items = [("What is 1 + 3?", c) for _, c, _ in BAD_COMPLETIONS]
    trained = train_orchestrator_rewards(rm, items)
    verdicts = judge(LocalScorer(rm), [q for q, _ in items], [c for _, c in items])
    assert [v.score for v in verdicts] == pytest.approx(
        trained, abs=1e-6
    )  # batch padding moves a score by float rounding
    for (name, _, valid), v, t in zip(BAD_COMPLETIONS, verdicts, trained):
        assert v.invalid == (not valid) and (t == -1.0) == (not valid), name
        assert (0 < v.score < 1) if valid else v.error.startswith("no valid plan"), name


def test_raw_scale_and_unscored_invalid_are_one_setting_each(rm):
    raw = judge(
        LocalScorer(rm), ["q", "q"], [GOOD, "prose"], contract=RewardContract(scale="raw", invalid_penalty=None)
    )
    assert raw[0].score == pytest.approx(rm.score("q", [VALID])[0], abs=1e-6)
    assert raw[1].score is None and raw[1].invalid


def test_local_and_remote_scorers_match_the_model(rm, rm_folder, server):
    items = _valid_items()
    want = rm.score_items(items)
    assert LocalScorer(rm).score(items) == pytest.approx(want, abs=1e-5)
    assert LocalScorer(rm_folder).score(items) == pytest.approx(want, abs=1e-5)
    remote = RemoteScorer(server)
    assert remote.score(items) == pytest.approx(want, abs=1e-5)
    assert asyncio.run(remote.ascore(items)) == pytest.approx(want, abs=1e-5)


def test_concurrent_first_calls_load_the_model_once(rm_folder, monkeypatch):
    import threading

    from orchrm.rm import RewardModel

    loads, real = [], RewardModel.load.__func__
    monkeypatch.setattr(RewardModel, "load", classmethod(lambda cls, f: loads.append(f) or real(cls, f)))
    barrier, out, errors = threading.Barrier(8), [], []

    def first_call():
        barrier.wait()
        try:
            out.append(cached_scorer(str(rm_folder) + "/", None, None))
        except Exception as exc:  # noqa: BLE001 - the count is the assertion
            errors.append(exc)

    threads = [threading.Thread(target=first_call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(loads) == 1 and len({id(s) for s in out}) == 1


def test_requests_past_the_server_limit_go_in_pieces(server, rm):
    items = _valid_items() * 50  # 150 items; the server takes 8 a request, the client sends 64
    import orchrm.adapters._remote as core

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
    scorer = RemoteScorer(f"http://127.0.0.1:{free_port()}", deadline_s=0.5)
    with pytest.raises(RewardServerError) as err:
        scorer.score([("q", VALID)])
    assert "still unavailable after 0.5 s" in str(err.value) and "ConnectError" in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(RewardServerError, match="still unavailable"):
        asyncio.run(scorer.ascore([("q", VALID)]))


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
        (503, b"overloaded", "still unavailable after 0.5 s .*HTTP 503: overloaded"),
    ],
)
def test_a_server_that_answers_garbage_is_one_line(garbage, status, body, message):
    garbage.status, garbage.body = status, body
    scorer = RemoteScorer(garbage.url, deadline_s=0.5)
    with pytest.raises(RewardServerError, match=message) as err:
        scorer.score([("q", VALID)])
    assert "\n" not in str(err.value)
    assert garbage.posts >= 2 if status >= 500 else garbage.posts == 1  # only "not now" answers are retried


def test_judge_names_every_item_it_cannot_score(rm, garbage):
    questions = ["q", None, "", "q", 7, "bad \ud800", "q"]
    texts = [GOOD, GOOD, GOOD, "<|im_start|>assistant\n<|im_end|>", GOOD, GOOD, ["not", "text"]]
    verdicts = judge(LocalScorer(rm), questions, texts)
    assert verdicts[0].score is not None and verdicts[0].error is None
    assert [v.score for v in verdicts[1:]] == [None, None, -1.0, None, None, None]
    assert [v.invalid for v in verdicts[1:]] == [False, False, True, False, False, False]
    assert [v.error for v in verdicts[1:]] == [
        "no question",
        "no question",
        "no valid plan (parse): the completion holds no text outside reasoning blocks",
        "the question is int, not text",
        "the question holds a lone surrogate at character 4",
        "the completion is list, not text",
    ]
    garbage.body = b"garbage"
    failed = judge(RemoteScorer(garbage.url, deadline_s=0), ["q", "q"], [GOOD, GOOD])
    assert all(v.score is None and v.failed and "not acceptable JSON" in v.error for v in failed)


def test_a_server_that_finds_no_plan_says_why(garbage):
    garbage.body = b'{"scores": [null, 0.5], "errors": ["no valid plan (parse): nothing", null]}'
    out = RemoteScorer(garbage.url, deadline_s=0).score([("q", VALID), ("q", VALID)])
    assert out == ["the reward server scored no plan: no valid plan (parse): nothing", 0.5]
