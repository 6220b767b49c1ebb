"""verl 0.9's own code calls orchrm: its Hydra config composed from the README's override lines, validated as
`main_ppo` validates it, and its reward loop (`RewardLoopManager` -> a Ray `RewardLoopWorker` ->
`load_reward_manager` -> the registered `naive` manager -> the file at `reward.custom_reward_function.path`) run
over a tokenised `DataProto`, as the trainer runs it each step. Needs verl (ci/frameworks/verl.txt)."""

import time

import pytest
from framework_helpers import expected_reward, framework
from verl_config import compose, readme_overrides

verl = framework("verl")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from adapter_fakes import ITEMS  # noqa: E402

#: A data source verl has its own scorer for: were orchrm's function not called, verl's gsm8k rule would be.
DATA_SOURCE = "openai/gsm8k"


def test_verl_is_the_pinned_release():
    assert verl.__version__ == "0.9.1"


def batch(tokenizer, items, extra_infos=None):
    """A rollout's output as verl's trainer holds it: left-padded chat prompts, right-padded responses ending in
    EOS, the attention mask over both; each row's data_source, reward_model and extra_info."""
    prompts = [
        tokenizer.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True, tokenize=False)
        for q, _ in items
    ]
    p_ids = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    r_ids = [tokenizer(t, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] for _, t in items]
    P, R, n = max(map(len, p_ids)), max(map(len, r_ids)), len(items)
    prompt = torch.full((n, P), tokenizer.pad_token_id)
    response = torch.full((n, R), tokenizer.pad_token_id)
    mask = torch.zeros((n, P + R), dtype=torch.long)
    for i, (a, b) in enumerate(zip(p_ids, r_ids)):
        prompt[i, P - len(a) :], mask[i, P - len(a) : P] = torch.tensor(a), 1
        response[i, : len(b)], mask[i, P : P + len(b)] = torch.tensor(b), 1
    infos = extra_infos or [{"question": q, "index": i} for i, (q, _) in enumerate(items)]
    return verl.DataProto.from_dict(
        tensors={
            "prompts": prompt,
            "responses": response,
            "input_ids": torch.cat([prompt, response], 1),
            "attention_mask": mask,
            "position_ids": (mask.cumsum(1) - 1).clamp(min=0),
        },
        non_tensors={
            "data_source": np.array([DATA_SOURCE] * n, dtype=object),
            "reward_model": np.array([{"style": "rule", "ground_truth": "8"}] * n, dtype=object),
            "extra_info": np.array(infos, dtype=object),
        },
    )


@pytest.fixture(scope="module")
def ray_cluster(rm_folder, server):
    """A local Ray cluster started as `main_ppo.run_ppo` starts it (verl's runtime env, `ray_kwargs.ray_init`)."""
    import ray
    from omegaconf import OmegaConf
    from verl.trainer.constants_ppo import get_ppo_ray_runtime_env

    common, _ = readme_overrides(rm_folder, server)
    config = compose(common, rm_folder)
    ray_init = dict(config.ray_kwargs.get("ray_init", {}))
    runtime_env = OmegaConf.merge(get_ppo_ray_runtime_env(config), ray_init.pop("runtime_env", {}) or {})
    ray.init(**ray_init, runtime_env=OmegaConf.to_container(runtime_env), include_dashboard=False)
    yield ray
    ray.shutdown()


def run_reward_loop(ray, config, data):
    """verl's reward step: the trainer's `RewardLoopManager` scores `data` on its Ray reward workers."""
    from verl.experimental.reward_loop import RewardLoopManager

    manager = RewardLoopManager(config)
    try:
        return manager, manager.compute_rm_score(data)
    finally:
        for worker in manager.reward_loop_workers:  # workers are named actors: free the names for the next run
            ray.kill(worker, no_restart=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                ray.get_actor("reward_loop_worker_0")
            except ValueError:
                break
            time.sleep(0.2)


@pytest.mark.parametrize("where", ["rm", "url"])
def test_the_reward_loop_pays_orchrms_reward(where, ray_cluster, rm_folder, server, rm):
    common, choice = readme_overrides(rm_folder, server)
    config = compose([*common, choice[where]], rm_folder)
    assert config.reward.reward_manager.name == "naive"  # verl's default manager, found in its registry
    assert config.reward.custom_reward_function.reward_kwargs == {where: str(rm_folder) if where == "rm" else server}

    from verl.utils import hf_tokenizer

    tokenizer = hf_tokenizer(str(rm_folder))
    data = batch(tokenizer, ITEMS)
    manager, out = run_reward_loop(ray_cluster, config, data)
    assert manager.reward_manager_cls.__name__ == "NaiveRewardManager"

    want = [expected_reward(rm, q, text) for q, text in ITEMS]
    scores = out.batch["rm_scores"]
    assert scores.shape == data.batch["responses"].shape
    # the reward sits on each response's last token, nothing elsewhere (verl's assemble_rm_scores)
    last = data.batch["attention_mask"][:, data.batch["prompts"].shape[1] :].sum(1) - 1
    assert scores[torch.arange(len(ITEMS)), last].tolist() == pytest.approx(want, abs=1e-5)
    assert scores.sum(1).tolist() == pytest.approx(want, abs=1e-5)
    # orchrm's extra keys reach verl's reward metrics; orchrm's own result, not verl's gsm8k rule ("acc" key)
    assert {"score", "orchrm_unscored", "orchrm_error"} <= set(out.meta_info["reward_extra_keys"])
    assert "acc" not in out.non_tensor_batch
    assert list(out.non_tensor_batch["orchrm_unscored"]) == [0.0] * len(ITEMS)
    assert list(out.non_tensor_batch["score"]) == pytest.approx(want, abs=1e-5)


def test_an_empty_question_is_flagged_and_a_missing_one_stops_the_step(ray_cluster, rm_folder, server):
    common, choice = readme_overrides(rm_folder, server)
    config = compose([*common, choice["rm"]], rm_folder)
    from verl.utils import hf_tokenizer

    q, text = ITEMS[0]
    tokenizer = hf_tokenizer(str(rm_folder))
    data = batch(tokenizer, [(q, text), (q, text)], extra_infos=[{"question": q}, {"question": ""}])
    _, out = run_reward_loop(ray_cluster, config, data)
    assert list(out.non_tensor_batch["orchrm_unscored"]) == [0.0, 1.0]
    assert out.non_tensor_batch["orchrm_error"][1] == 'extra_info["question"] is empty'
    data = batch(tokenizer, [(q, text), (q, text)], extra_infos=[{"question": q}, {"prompt": q}])
    with pytest.raises(Exception, match=r'a verl row has no extra_info\["question"\] for the orchrm reward'):
        run_reward_loop(ray_cluster, config, data)


def test_the_pre_09_keys_are_ignored_and_verl_falls_back_to_its_own_scorer(rm_folder, server):
    """Why the README writes `reward.custom_reward_function.*`: verl 0.9's main_ppo never reads the old top-level
    `custom_reward_function.*`, and its reward worker silently scores with its own rule for the data source."""
    common, choice = readme_overrides(rm_folder, server)
    old = [line.removeprefix("+").removeprefix("reward.") for line in [*common, choice["rm"]]]
    config = compose([("+" if "reward_kwargs" in line else "") + line for line in old], rm_folder)
    assert config.custom_reward_function.path and config.reward.custom_reward_function.path is None

    from verl.experimental.reward_loop import RewardLoopWorker

    worker = RewardLoopWorker(config)  # verl's worker class, in this process (the Ray actor runs the same code)
    data = batch(worker.input_tokenizer, ITEMS)
    out = worker.loop.run_until_complete(worker.compute_score_batch(data))
    assert [o["reward_score"] for o in out] == [0.0] * len(ITEMS)  # gsm8k's rule: no "#### 8" answer
    assert all("orchrm_unscored" not in o["reward_extra_info"] for o in out)
