"""The verl reward file, loaded by path and called the way verl's reward managers call it."""

import importlib.util
import logging
from functools import partial

import pytest

import orchrm.adapters.verl as verl_module
from adapter_fakes import BAD_COMPLETIONS, ITEMS, train_orchestrator_rewards
from live_server import free_port

KEYS = {"score", "orchrm_invalid", "orchrm_unscored", "orchrm_error"}
#: Which of ITEMS hold no valid plan (a direct answer under dag, broken JSON): paid the penalty, flagged invalid.
INVALID = [0.0, 0.0, 1.0, 0.0, 1.0]


def load(name, **reward_kwargs):
    """As verl does: the file by path under a throwaway module name, reward_kwargs merged into every call."""
    spec = importlib.util.spec_from_file_location(f"custom_module_{hash(verl_module.__file__)}", verl_module.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    raw = getattr(module, name)
    return partial(lambda fn, extra, *a, **kw: fn(*a, **{**kw, **extra}), raw, reward_kwargs)


@pytest.mark.parametrize("where", ["folder", "server"])
def test_the_same_scores_as_the_reward_model(where, rm_folder, server, expected):
    kwargs = {"url": server} if where == "server" else {"rm": str(rm_folder)}
    one = load("compute_score", **kwargs)
    got = [
        one(data_source="orchrm", solution_str=p, ground_truth=None, extra_info={"question": q, "index": i})
        for i, (q, p) in enumerate(ITEMS)
    ]
    assert [r["score"] for r in got] == pytest.approx(expected, abs=1e-5)
    assert all(set(r) == KEYS and r["orchrm_unscored"] == 0.0 for r in got)
    assert [r["orchrm_invalid"] for r in got] == INVALID and [bool(r["orchrm_error"]) for r in got] == INVALID
    batch = load("compute_score_batch", **kwargs)
    got = batch(
        data_sources=["orchrm"] * len(ITEMS),
        solution_strs=[p for _, p in ITEMS],
        ground_truths=[None] * len(ITEMS),
        extra_infos=[{"question": q, "rollout_reward_scores": {}} for q, _ in ITEMS],
    )
    assert [r["score"] for r in got] == pytest.approx(expected, abs=1e-5)


def test_the_reward_loop_extras_and_a_templated_response(rm_folder, expected):
    # verl's reward loop adds reward_router_address / reward_model_tokenizer; a response decoded with its special tokens
    one = load("compute_score", rm=str(rm_folder))
    q, p = ITEMS[0]
    r = one(
        data_source="x",
        solution_str=f"{p}<|im_end|>",
        ground_truth="",
        extra_info={"question": q},
        reward_router_address=None,
        reward_model_tokenizer=None,
    )
    assert r["score"] == pytest.approx(expected[0], abs=1e-5)


def test_unscorable_responses_get_the_penalty_recorded(rm_folder, caplog):
    batch = load("compute_score_batch", rm=str(rm_folder), penalty=-7.0)
    q, p = ITEMS[0]
    with caplog.at_level(logging.WARNING, logger="orchrm.adapters"):
        got = batch(
            data_sources=["x"] * 5,
            solution_strs=[p, "", p, p, "<|im_start|>assistant\n<|im_end|>"],
            ground_truths=[None] * 5,
            extra_infos=[{"question": q}, {"question": q}, {"question": ""}, {"question": None}, {"question": q}],
        )
    assert all(set(r) == KEYS for r in got)  # verl keeps one list per key: every result has them all
    assert [r["score"] for r in got[1:]] == [-7.0, 0.0, 0.0, -7.0] and got[0]["score"] not in (-7.0, 0.0)
    assert [r["orchrm_unscored"] for r in got] == [0.0, 0.0, 1.0, 1.0, 0.0]
    assert [r["orchrm_invalid"] for r in got] == [0.0, 1.0, 0.0, 0.0, 1.0]
    empty = "no valid plan (parse): the completion holds no text outside reasoning blocks"
    assert [r["orchrm_error"] for r in got[1:]] == [
        empty,
        'extra_info["question"] is empty',
        'extra_info["question"] is empty',
        empty,
    ]
    lines = [r.getMessage() for r in caplog.records]
    assert "2 of 5 completions hold no valid plan" in lines[0] and "2 of 5 completions unscored" in lines[1]
    other_key = load("compute_score", rm=str(rm_folder), question_key="prompt")
    assert (
        other_key(data_source="x", solution_str=p, ground_truth=None, extra_info={"prompt": q})["orchrm_unscored"]
        == 0.0
    )


@pytest.mark.parametrize("extra_info", [{"prompt": "q", "index": 3}, {}, None])
def test_a_row_without_the_question_key_is_an_error_naming_it(extra_info, tmp_path):
    """A dataset built without the question would train on 0.0 rewards: the step stops, the key named, before
    any model loads (the folder here does not exist)."""
    from orchrm.errors import ConfigError

    one = load("compute_score", rm=str(tmp_path / "no-rm"))
    with pytest.raises(ConfigError, match=r'no extra_info\["question"\] for the orchrm reward') as raised:
        one(data_source="orchrm/chain_sum", solution_str="{}", ground_truth="4", extra_info=extra_info)
    assert "orchrm prompts --format verl" in str(raised.value)
    if extra_info:
        assert "(its extra_info: index, prompt)" in str(raised.value)
    other = load("compute_score", rm=str(tmp_path / "no-rm"), question_key="prompt")
    with pytest.raises(ConfigError, match=r'no extra_info\["prompt"\]'):
        other(data_source="x", solution_str="{}", ground_truth=None, extra_info={"question": "q"})


def test_a_server_that_is_down_is_unscored_then_stops_the_step(garbage):
    from orchrm.adapters import RewardServerError

    url = f"http://127.0.0.1:{free_port()}"
    q, p = ITEMS[0]
    kwargs = {"data_source": "x", "solution_str": p, "ground_truth": None, "extra_info": {"question": q}}
    tolerant = load("compute_score", url=url, deadline_s=0, max_unscored=1)
    r = tolerant(**kwargs)  # within max_unscored: unscored, never the invalid-plan penalty
    assert r["score"] == 0.0 and r["orchrm_unscored"] == 1.0 and r["orchrm_invalid"] == 0.0
    assert "still unavailable after 0 s" in r["orchrm_error"]
    with pytest.raises(
        RewardServerError, match=r"2 samples unscored because the reward server failed \(max_unscored=1\)"
    ):
        tolerant(**kwargs)
    with pytest.raises(RewardServerError, match="max_unscored=0"):  # the default: the first failure stops the step
        load("compute_score", url=url, deadline_s=0)(**kwargs)
    garbage.body = b'{"scores": [1.0, 2.0]}'
    r = load("compute_score", url=garbage.url, max_unscored=10, unscored_reward=-0.5)(**kwargs)
    assert r["score"] == -0.5 and r["orchrm_unscored"] == 1.0 and "2 scores for 1 items" in r["orchrm_error"]


def test_no_model_is_one_line():
    from orchrm.errors import ConfigError

    with pytest.raises(ConfigError, match="either in process"):
        load("compute_score")(data_source="x", solution_str="{}", ground_truth=None, extra_info={"question": "q"})


def test_every_bad_completion_is_paid_as_train_orchestrator_pays_it(rm, rm_folder):
    q = "What is 1 + 3?"
    texts = [c for _, c, _ in BAD_COMPLETIONS]
    trained = train_orchestrator_rewards(rm, [(q, t) for t in texts])
    one = load("compute_score", rm=str(rm_folder))
    got = [one(data_source="openai/gsm8k", solution_str=t, ground_truth="4", extra_info={"question": q}) for t in texts]
    assert [r["score"] for r in got] == pytest.approx(trained, abs=1e-6)


def test_odd_batches_are_unscored_never_a_crash(rm_folder):
    batch = load("compute_score_batch", rm=str(rm_folder))
    got = batch(
        data_sources=[None] * 3,
        solution_strs=[None, 7, b"bytes"],
        ground_truths=[object()] * 3,
        extra_infos=[{"question": "q"}, {"question": 7}, {"question": ["a list"]}],
    )
    assert [r["score"] for r in got] == [0.0] * 3  # unscored, never the invalid-plan penalty
    assert [r["orchrm_unscored"] for r in got] == [1.0] * 3
