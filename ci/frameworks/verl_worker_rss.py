"""What one of verl 0.9's reward workers holds with orchrm's reward: the README's number, measured.

    .venv-verl/bin/python ci/frameworks/verl_worker_rss.py --rm /abs/rm --policy /abs/policy-folder

Starts a local Ray cluster as `main_ppo` does, one `RewardLoopWorker` actor from verl's own `RewardLoopManager`
(the README's overrides, `reward.num_workers=1`: each of the default 8 is the same process), and reads the
actor's resident memory (Rss, and Pss: its share of pages shared with other processes) after it started (verl, torch and the policy's tokenizer loaded) and after it
scored one sample through orchrm's reward file in each form: `rm=` (the model loaded in the worker) and `url=`
(an `orchrm serve` elsewhere; here nothing answers, so the sample is unscored: only the client's cost is read).
Prints one JSON object.
"""

import argparse
import json
import os
import sys
import time


def rss_mb(_self=None) -> dict[str, float]:
    """This process's resident memory (Rss), and its proportional share (Pss: pages shared with other processes,
    torch's libraries in the other workers, counted once over all of them), in MB."""
    with open(f"/proc/{os.getpid()}/smaps_rollup") as f:
        kb = {line.split(":")[0]: int(line.split()[1]) for line in f if line.split(":")[0] in ("Rss", "Pss")}
    return {name.lower() + "_mb": round(value / 1024, 1) for name, value in kb.items()}


def config(policy: str, reward_kwargs: list[str]):
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    import orchrm.adapters.verl as adapter

    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        cfg = compose(
            "ppo_trainer",
            overrides=[
                "algorithm.adv_estimator=grpo",
                f"actor_rollout_ref.model.path={policy}",
                f"reward.custom_reward_function.path={adapter.__file__}",
                "reward.custom_reward_function.name=compute_score",
                "reward.num_workers=1",
                *reward_kwargs,
            ],
        )
    OmegaConf.resolve(cfg)
    return cfg


def sample(tokenizer):
    """One scored response as verl's agent loop hands it to a reward worker (one row of a `DataProto`)."""
    import numpy as np
    import torch
    from verl import DataProto

    prompt = tokenizer("Question: What is 2 + 3?\nPlan:", add_special_tokens=False)["input_ids"]
    plan = '{"agents": [{"id": "a", "type": "cot", "input": "Add 2 and 3."}]}'
    response = tokenizer(plan, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt + response])
    return DataProto.from_dict(
        tensors={
            "prompts": torch.tensor([prompt]),
            "responses": torch.tensor([response]),
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "position_ids": torch.arange(ids.shape[1])[None],
        },
        non_tensors={
            "data_source": np.array(["orchrm/chain_sum"], dtype=object),
            "reward_model": np.array([{"style": "model", "ground_truth": "5"}], dtype=object),
            "extra_info": np.array([{"question": "What is 2 + 3?", "index": 0}], dtype=object),
        },
    )


def measure(ray, policy: str, reward_kwargs: list[str]) -> dict:
    from verl.experimental.reward_loop import RewardLoopManager
    from verl.utils import hf_tokenizer

    manager = RewardLoopManager(config(policy, reward_kwargs))
    (worker,) = manager.reward_loop_workers
    started = ray.get(worker.__ray_call__.remote(rss_mb))
    t0 = time.monotonic()
    result = ray.get(worker.compute_score.remote(sample(hf_tokenizer(policy))))
    scored_s = time.monotonic() - t0
    after = ray.get(worker.__ray_call__.remote(rss_mb))
    ray.kill(worker, no_restart=True)
    time.sleep(2)  # the actor's name is freed before the next manager names its worker alike
    return {
        "started": started,
        "after_one_sample": after,
        "first_sample_s": round(scored_s, 1),
        "reward": result["reward_score"],
        "orchrm_error": result["reward_extra_info"].get("orchrm_error", ""),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rm", required=True, help="an orchrm reward-model folder (absolute)")
    parser.add_argument("--policy", required=True, help="the policy's folder: its tokenizer is what a worker loads")
    args = parser.parse_args()

    import ray
    import verl

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        out = {"verl": verl.__version__, "python": sys.version.split()[0], "rm": args.rm, "policy": args.policy}
        out["rm="] = measure(ray, args.policy, [f"+reward.custom_reward_function.reward_kwargs.rm={args.rm}"])
        url = [
            "+reward.custom_reward_function.reward_kwargs.url=http://127.0.0.1:9",
            "+reward.custom_reward_function.reward_kwargs.deadline_s=0",
            "+reward.custom_reward_function.reward_kwargs.max_unscored=1",
        ]
        out["url="] = measure(ray, args.policy, url)
    finally:
        ray.shutdown()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
