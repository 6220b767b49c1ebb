"""The TRL reward function: called as GRPOTrainer calls it, and inside a real (tiny) GRPOTrainer run."""

import asyncio
import logging

import pytest

from adapter_fakes import ITEMS
from live_server import free_port
from orchrm import AsyncTRLReward, TRLReward
from orchrm.errors import ConfigError

QUESTIONS = [q for q, _ in ITEMS]


class Recorder:
    """TRL's log_metric / log_extra."""

    def __init__(self):
        self.metrics, self.extra = {}, {}

    def call(self, reward, completions, questions, prompts=None):
        prompts = prompts if prompts is not None else ["p"] * len(completions)
        out = reward(
            prompts=prompts,
            completions=completions,
            completion_ids=[[1]] * len(completions),
            question=questions,
            trainer_state=None,
            log_metric=self.metrics.__setitem__,
            log_extra=self.extra.__setitem__,
        )
        return asyncio.run(out) if asyncio.iscoroutine(out) else out


def _chat(text):
    return [{"role": "assistant", "content": text}]


@pytest.mark.parametrize("kind", [TRLReward, AsyncTRLReward])
@pytest.mark.parametrize("where", ["rm", "folder", "server"])
def test_the_same_scores_as_the_reward_model(kind, where, rm, rm_folder, server, expected):
    reward = kind(url=server) if where == "server" else kind(rm if where == "rm" else rm_folder)
    texts = [p for _, p in ITEMS]
    assert Recorder().call(reward, texts, QUESTIONS) == pytest.approx(expected, abs=1e-5)
    assert Recorder().call(reward, [_chat(t) for t in texts], QUESTIONS) == pytest.approx(
        expected, abs=1e-5
    )  # conversational
    templated = [f"<|im_start|>assistant\n{t}<|im_end|>\n" for t in texts]
    assert Recorder().call(reward, templated, QUESTIONS) == pytest.approx(expected, abs=1e-5)


def test_trl_sees_sync_and_async_for_what_they_are(rm):
    from trl.trainer.utils import get_callable_name, is_async_callable

    assert not is_async_callable(TRLReward(rm)) and is_async_callable(AsyncTRLReward(rm))
    assert (
        get_callable_name(TRLReward(rm)) == "orchrm" and get_callable_name(TRLReward(rm, name="plan_rm")) == "plan_rm"
    )


@pytest.mark.parametrize("kind", [TRLReward, AsyncTRLReward])
def test_no_plan_is_penalised_and_no_question_is_none(kind, rm, expected, caplog):
    rec = Recorder()
    texts = [ITEMS[0][1], "", "<|im_start|>assistant\n<|im_end|>", ITEMS[0][1]]
    with caplog.at_level(logging.WARNING, logger="orchrm.adapters"):
        out = rec.call(kind(rm), texts, [QUESTIONS[0], QUESTIONS[0], QUESTIONS[0], None])
    assert out[0] == pytest.approx(expected[0], abs=1e-5) and out[1:] == [-1.0, -1.0, None]
    assert rec.metrics == {"orchrm/invalid": 0.5, "orchrm/unscored": 0.25}
    empty = "no valid plan (parse): the completion holds no text outside reasoning blocks"
    assert rec.extra["orchrm_error"] == ["", empty, empty, "no question in column 'question'"]
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        f"reward orchrm: 2 of 4 completions hold no valid plan (penalised); first: {empty}",
        "reward orchrm: 1 of 4 completions unscored; first: no question in column 'question'",
    ]
    assert rec.call(kind(rm, invalid_penalty=None), texts[:2], QUESTIONS[:2])[1] is None  # left out of the group


@pytest.mark.parametrize("kind", [TRLReward, AsyncTRLReward])
def test_every_bad_completion_is_paid_as_train_orchestrator_pays_it(kind, rm):
    from adapter_fakes import BAD_COMPLETIONS, train_orchestrator_rewards

    texts = [c for _, c, _ in BAD_COMPLETIONS]
    questions = ["What is 1 + 3?"] * len(texts)
    trained = train_orchestrator_rewards(rm, list(zip(questions, texts)))
    assert Recorder().call(kind(rm), texts, questions) == pytest.approx(trained, abs=1e-6)
    parts = [[{"role": "assistant", "content": [{"type": "text", "text": t}]}] for t in texts]  # content as parts
    assert Recorder().call(kind(rm), parts, questions) == pytest.approx(trained, abs=1e-6)
    odd = [None, 7, [{"role": "assistant", "content": None}], [{"role": "assistant", "content": [{"type": "image"}]}]]
    assert Recorder().call(kind(rm), odd, questions[:4]) == [-1.0] * 4  # nothing to read is no plan, never a crash


def test_a_missing_question_column_is_one_line(rm):
    reward = TRLReward(rm)
    with pytest.raises(ConfigError, match="no 'question' column .*its columns: answer") as err:
        reward(prompts=["p"], completions=["x"], completion_ids=[[1]], answer=["4"], trainer_state=None)
    assert "\n" not in str(err.value)
    assert (
        TRLReward(rm, question_column="task")(prompts=["p"], completions=[ITEMS[0][1]], task=[QUESTIONS[0]])[0]
        is not None
    )


@pytest.mark.parametrize("kind", [TRLReward, AsyncTRLReward])
def test_a_server_that_is_down_gives_none_never_zero(kind, caplog):
    reward = kind(url=f"http://127.0.0.1:{free_port()}", deadline_s=0)
    rec = Recorder()
    with caplog.at_level(logging.WARNING, logger="orchrm.adapters"):
        assert rec.call(reward, [ITEMS[0][1]] * 2, QUESTIONS[:2]) == [None, None]
    assert rec.metrics == {"orchrm/invalid": 0.0, "orchrm/unscored": 1.0}
    assert "still unavailable" in rec.extra["orchrm_error"][0]
    assert "still unavailable" in caplog.records[0].getMessage()


@pytest.mark.parametrize("trainer_name", ["GRPO", "RLOO"])
@pytest.mark.parametrize("kind", [TRLReward, AsyncTRLReward])
def test_a_real_trl_run_logs_the_orchrm_reward(kind, trainer_name, rm, policy_dir, tmp_path):
    import trl
    from datasets import Dataset

    Config, Trainer = getattr(trl, f"{trainer_name}Config"), getattr(trl, f"{trainer_name}Trainer")

    rows = [{"prompt": [{"role": "user", "content": f"Write a plan for: {q}"}], "question": q} for q in QUESTIONS[:2]]
    seen = []

    class Spy(kind):
        def _finish(self, verdicts, columns):
            seen.append(verdicts)
            return super()._finish(verdicts, columns)

    args = Config(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=8,
        max_steps=2,
        logging_steps=1,
        learning_rate=1e-3,
        beta=0.0,
        report_to=[],
        use_cpu=True,
        bf16=False,
        save_strategy="no",
        disable_tqdm=True,
        dataloader_num_workers=0,
        seed=0,
    )
    trainer = Trainer(model=str(policy_dir), reward_funcs=[Spy(rm)], args=args, train_dataset=Dataset.from_list(rows))
    trainer.train()
    assert trainer.state.global_step == 2
    logged = [h for h in trainer.state.log_history if "rewards/orchrm/mean" in h]
    assert len(logged) == 2 and all(isinstance(h["rewards/orchrm/mean"], float) for h in logged)
    assert "orchrm/unscored" in logged[0]
    # What TRL logged is the mean of what the reward function returned (random tiny policy: its completions hold
    # no plan, and get the penalty, never a model score).
    for h, verdicts in zip(logged, seen, strict=True):
        scores = [v.score for v in verdicts if v.score is not None]
        if scores:
            assert h["rewards/orchrm/mean"] == pytest.approx(sum(scores) / len(scores), abs=1e-4)
        assert h["orchrm/unscored"] == pytest.approx(sum(v.score is None for v in verdicts) / len(verdicts))
