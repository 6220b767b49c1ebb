"""verl 0.9's trainer path with the README's config, from the file `orchrm prompts` wrote to orchrm's reward.

With no model RM configured (the README's case), `RayPPOTrainer` hands its `RewardLoopManager`'s workers to the
agent loop (`enable_agent_reward_loop`), and each sample is scored as it finishes: `AgentLoopWorker` ->
`_agent_loop_postprocess` -> `_compute_score` -> one of the `reward.num_workers` Ray `RewardLoopWorker`s (8, verl's
default) -> the `naive` manager -> orchrm's reward file. Here, as in `fit()`: the README's `orchrm prompts` lines
run, verl's `RLHFDataset` loads the file and its `collate_fn` batches it, `_get_gen_batch` and `repeat` make the
rollout batch, and verl's own `AgentLoopWorker` (the class its Ray actors run) runs its single-turn agent loop over
it with the 8 reward workers. Only vLLM's generation is stood in for (`ScriptedLLM`); the actor update that follows
needs GPUs. Needs verl (ci/frameworks/verl.txt)."""

import asyncio
import time
import uuid

import pytest
from framework_helpers import expected_reward, framework
from verl_config import BASE, compose, readme_overrides, run_readme_prompts

verl = framework("verl")

import numpy as np  # noqa: E402

from adapter_fakes import ITEMS  # noqa: E402

#: The tiny RM's tokenizer (the policy's here) is byte-level: a ~2,100-character prompt is ~2,100 tokens, where
#: the README's 1,024 holds Qwen2.5's ~600-700 (without this verl would cut the prompt's start off; it warns). A
#: step of 8 prompts, not verl's 1,024.
TEST_SIZES = [
    "data.max_prompt_length=4096",
    "data.train_batch_size=8",
    "actor_rollout_ref.actor.ppo_mini_batch_size=8",
    "data.dataloader_num_workers=0",  # the same loader without 8 worker processes
    "actor_rollout_ref.rollout.name=vllm",  # part of the user's `...`: the engine ScriptedLLM stands in for
]
ROWS = 8


class ScriptedLLM:
    """vLLM's server, stood in for: each prompt answered with the completion scripted for its question."""

    def __init__(self, tokenizer, responses):
        self.tokenizer, self.responses, self.prompts = tokenizer, responses, []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **_):
        from verl.workers.rollout.replica import TokenOutput

        prompt = self.tokenizer.decode(prompt_ids, skip_special_tokens=False)
        self.prompts.append(prompt)
        question = next(q for q in self.responses if f"Question: {q}\n" in prompt)
        ids = self.tokenizer(self.responses[question], add_special_tokens=False)["input_ids"]
        return TokenOutput(token_ids=[*ids, self.tokenizer.eos_token_id], stop_reason="completed")


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory, rm_folder, server):
    """The README's verl block, run: its `orchrm prompts` lines into a folder, its overrides composed (the `rm=`
    form) at verl's defaults, a Ray cluster as `main_ppo` starts it, and the trainer's `RewardLoopManager` with its
    reward workers (verl's default count)."""
    import ray
    from omegaconf import OmegaConf
    from verl.experimental.reward_loop import RewardLoopManager
    from verl.trainer.constants_ppo import get_ppo_ray_runtime_env

    data = tmp_path_factory.mktemp("data")
    written = run_readme_prompts(data)
    common, choice = readme_overrides(rm_folder, server, data=str(data))
    config = compose([*common, choice["rm"], *TEST_SIZES], rm_folder, base=BASE)
    ray_init = dict(config.ray_kwargs.get("ray_init", {}))
    runtime_env = OmegaConf.merge(get_ppo_ray_runtime_env(config), ray_init.pop("runtime_env", {}) or {})
    ray.init(**ray_init, runtime_env=OmegaConf.to_container(runtime_env), include_dashboard=False)
    manager = RewardLoopManager(config)
    yield config, manager, written
    for worker in manager.reward_loop_workers:
        ray.kill(worker, no_restart=True)
    ray.shutdown()


def question_of(messages):
    """The question in a prompt's user turn (`Question: ...\nPlan:`)."""
    return messages[-1]["content"].removeprefix("Question: ").removesuffix("\nPlan:")


def rollout_batch(config, files, tokenizer):
    """What `fit()` hands the agent loop for one step: verl's dataset over `files` in the trainer's dataloader (its
    sampler, `collate_fn`, `train_batch_size`), a uid per prompt, `_get_gen_batch`, then `rollout.n` copies of each."""
    from torchdata.stateful_dataloader import StatefulDataLoader
    from verl import DataProto
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer
    from verl.trainer.ppo.utils import create_rl_dataset, create_rl_sampler
    from verl.utils.dataset.rl_dataset import collate_fn

    dataset = create_rl_dataset(files, config.data, tokenizer, None, is_train=True)
    loader = StatefulDataLoader(
        dataset,
        batch_size=config.data.train_batch_size,
        num_workers=config.data.dataloader_num_workers,
        drop_last=True,
        collate_fn=collate_fn,
        sampler=create_rl_sampler(config.data, dataset),
    )
    batch = DataProto.from_single_dict(next(iter(loader)))
    batch.non_tensor_batch["uid"] = np.array([str(uuid.uuid4()) for _ in range(len(batch))], dtype=object)
    gen_batch = RayPPOTrainer._get_gen_batch(None, batch)  # uses nothing of the trainer but the batch
    gen_batch.meta_info["global_steps"] = 1
    return dataset, gen_batch.repeat(repeat_times=config.actor_rollout_ref.rollout.n, interleave=True)


def agent_loop(config, manager, tokenizer, responses):
    """verl's `AgentLoopWorker` with the reward workers the trainer hands it under the README's config."""
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.trainer.ppo.utils import need_reward_model

    assert not need_reward_model(config)  # so `RayPPOTrainer.init_workers` sets enable_agent_reward_loop
    llm = ScriptedLLM(tokenizer, responses)
    return llm, AgentLoopWorker(config, llm, None, manager.reward_loop_workers)


def test_the_trainers_agent_loop_pays_orchrms_reward_from_the_prompts_file(readme_run, rm):
    from verl.trainer.ppo.reward import extract_reward
    from verl.utils import hf_tokenizer

    config, manager, (train, _) = readme_run
    assert config.reward.num_workers == 8 and len(manager.reward_loop_workers) == 8  # verl's default
    tokenizer = hf_tokenizer(config.actor_rollout_ref.model.path)
    dataset, gen_batch = rollout_batch(config, [str(train)], tokenizer)
    assert len(dataset) == 64  # the README's line: train-orchestrator's default prompt set

    file_prompts = {row["extra_info"]["question"]: row["prompt"] for row in dataset.dataframe}
    questions = [info["question"] for info in gen_batch.non_tensor_batch["extra_info"]]
    assert len(questions) == ROWS * config.actor_rollout_ref.rollout.n
    texts = {q: ITEMS[i % len(ITEMS)][1] for i, q in enumerate(questions)}  # a plan, a direct answer, prose, ...
    llm, worker = agent_loop(config, manager, tokenizer, texts)
    out = asyncio.run(worker.generate_sequences(gen_batch))

    # what verl sent the policy is the file's chat prompt (the orchestrator's system prompt first), as rendered
    sent = [
        tokenizer.apply_chat_template(file_prompts[q], add_generation_prompt=True, tokenize=False) for q in questions
    ]
    assert sorted(llm.prompts) == sorted(sent)
    assert "rm_scores" in out.batch.keys()  # scored in the agent loop: `fit()` skips its own reward step
    rewards, extra = extract_reward(out)
    want = [expected_reward(rm, q, texts[q]) for q in questions]
    assert rewards.sum(-1).tolist() == pytest.approx(want, abs=1e-5)
    assert list(out.non_tensor_batch["orchrm_unscored"]) == [0.0] * ROWS
    assert list(out.non_tensor_batch["score"]) == pytest.approx(want, abs=1e-5)


def test_each_of_the_eight_workers_loads_the_rm_and_scores(readme_run, rm):
    """The agent loop picks a worker at random per sample: here each of the 8 is sent one sample directly, so
    every worker loads its own copy of the RM (rm=) and pays orchrm's reward."""
    import ray
    from verl.utils import hf_tokenizer

    config, manager, (train, _) = readme_run
    tokenizer = hf_tokenizer(config.actor_rollout_ref.model.path)
    _, gen_batch = rollout_batch(config, [str(train)], tokenizer)
    q = gen_batch.non_tensor_batch["extra_info"][0]["question"]
    _, text = ITEMS[0]
    llm, worker = agent_loop(config, manager, tokenizer, {q: text})
    one = asyncio.run(worker.generate_sequences(gen_batch[:1]))
    sample = one.select(batch_keys=["prompts", "responses", "input_ids", "attention_mask", "position_ids"])
    sample.non_tensor_batch = {k: gen_batch.non_tensor_batch[k][:1] for k in ("data_source", "reward_model")}
    sample.non_tensor_batch["extra_info"] = np.array([{"question": q}], dtype=object)
    t0 = time.monotonic()
    results = ray.get([w.compute_score.remote(sample) for w in manager.reward_loop_workers])
    pids = ray.get([w.__ray_call__.remote(lambda self: __import__("os").getpid()) for w in manager.reward_loop_workers])
    assert len(set(pids)) == 8, pids  # eight processes, eight RM loads
    want = expected_reward(rm, q, text)
    assert [r["reward_score"] for r in results] == pytest.approx([want] * 8, abs=1e-5), time.monotonic() - t0


def test_a_row_without_the_question_stops_the_step_naming_the_key(readme_run, tmp_path):
    """A verl dataset built by hand without `extra_info["question"]` (the README before `orchrm prompts`): the agent
    loop's reward raises, and the step fails with the key's name instead of training on 0.0 rewards."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from verl.utils import hf_tokenizer

    config, manager, (train, _) = readme_run
    table = pq.read_table(train).slice(0, ROWS)
    extra = [{"index": row["index"]} for row in table.column("extra_info").to_pylist()]
    bare = tmp_path / "no-question.parquet"
    pq.write_table(table.set_column(table.schema.get_field_index("extra_info"), "extra_info", pa.array(extra)), bare)
    tokenizer = hf_tokenizer(config.actor_rollout_ref.model.path)
    _, gen_batch = rollout_batch(config, [str(bare)], tokenizer)
    texts = {question_of(messages): ITEMS[0][1] for messages in table.column("prompt").to_pylist()}
    _, worker = agent_loop(config, manager, tokenizer, texts)
    with pytest.raises(Exception, match=r'a verl row has no extra_info\["question"\] for the orchrm reward'):
        asyncio.run(worker.generate_sequences(gen_batch))
