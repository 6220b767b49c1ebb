"""Reading a group's shared prompt once gives TRL's own per-token log-probs, entropies and gradients."""

import torch
from datasets import Dataset
from test_grpo_train import config, count_b

from orchrm.grpo import shared_prompt
from orchrm.grpo.shared_prompt import shared_prompt_trainer
from orchrm.grpo.train import grpo_args, load_policy, lora_config
from orchrm.llm.weights import policy_weights


def batch(tok):
    """Two groups (two prompts of different lengths, left-padded) of two plans each (right-padded)."""
    pad = tok.pad_token_id
    p1, p2 = [11, 12, 13, 14, 15, 16], [pad, pad, 21, 22, 23, 24]
    m1, m2 = [1] * 6, [0, 0, 1, 1, 1, 1]
    completions = [[31, 32, 33, 34, 35], [41, 42, pad, pad, pad], [51, 52, 53, pad, pad], [61, 62, 63, 64, 65]]
    cmask = [[1] * 5, [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1] * 5]
    prompts, pmasks = [p1, p2, p1, p2], [m1, m2, m1, m2]  # groups interleaved: rows go back in their order
    ids = torch.tensor([p + c for p, c in zip(prompts, completions, strict=True)])
    mask = torch.tensor([p + c for p, c in zip(pmasks, cmask, strict=True)])
    return ids, mask, torch.tensor(cmask)


def test_the_shared_prompt_pass_matches_trls_own(tmp_path, policy_dir):
    from trl import GRPOTrainer

    cfg = config()
    model, tok = load_policy(policy_weights(policy_dir), bf16=False)
    ds = Dataset.from_list([{"prompt": [{"role": "user", "content": "hi"}]}] * 4)
    trainer = shared_prompt_trainer()(
        model=model,
        reward_funcs=count_b,
        args=grpo_args(cfg, tmp_path, progress=False),
        train_dataset=ds,
        processing_class=tok,
        peft_config=lora_config(cfg),
    )
    torch.manual_seed(0)
    lora = [p for n, p in trainer.model.named_parameters() if "lora_" in n]
    for p in lora:
        p.data.normal_(0, 0.3)  # a trained adapter: the shared prompt's keys and values depend on it
    trainer.model.train()  # as in the update
    ids, mask, cmask = batch(tok)

    def run(method):
        trainer.model.zero_grad()
        logps, ent, _ = method(trainer, trainer.model, ids, mask, cmask.size(1), compute_entropy=True)
        ((logps * cmask).sum() + (ent * cmask).sum()).backward()
        return logps.detach() * cmask, ent.detach() * cmask, [p.grad.clone() for p in lora]

    mine = run(type(trainer)._get_per_token_logps_and_entropies)
    trls = run(GRPOTrainer._get_per_token_logps_and_entropies)
    assert torch.allclose(mine[0], trls[0], atol=1e-4) and torch.allclose(mine[1], trls[1], atol=1e-4)
    assert all(torch.allclose(a, b, atol=1e-4, rtol=1e-3) for a, b in zip(mine[2], trls[2], strict=True))
    assert any(float(g.abs().max()) > 0 for g in mine[2])
    assert float(mine[0].abs().sum()) > 0


def test_one_prompt_per_batch_is_one_prefix_pass(tmp_path, policy_dir, monkeypatch):
    cfg = config()
    model, tok = load_policy(policy_weights(policy_dir), bf16=False)
    ds = Dataset.from_list([{"prompt": [{"role": "user", "content": "hi"}]}] * 4)
    trainer = shared_prompt_trainer()(
        model=model,
        reward_funcs=count_b,
        args=grpo_args(cfg, tmp_path, progress=False),
        train_dataset=ds,
        processing_class=tok,
        peft_config=lora_config(cfg),
    )
    ids, mask, cmask = batch(tok)
    seen = []
    real = shared_prompt._group_logps
    monkeypatch.setattr(shared_prompt, "_group_logps", lambda t, m, i, *a: seen.append(i.size(0)) or real(t, m, i, *a))
    with torch.no_grad():
        trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, cmask.size(1))
    assert seen == [2, 2]  # two distinct prompts, each read once for its two plans
