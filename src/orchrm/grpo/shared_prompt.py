"""A GRPO group's shared prompt read once in the update, not once per plan.

TRL scores every sampled sequence (prompt + completion) with a full forward and backward pass. In a group
all plans share one prompt, and the orchestrator's prompt (rules and worked examples) is longer than most plans,
so on a CPU most of the update went into reading the same prompt once per plan. Here each distinct prompt runs once
(all but its last token, with the KV cache kept and repeated for every row of the group), then each row's
last prompt token and completion run on top of it through TRL's own fused log-prob head. The result is the
same per-token log-probabilities and entropies, with gradients flowing through the shared prompt (the LoRA
weights shape its keys and values), at a fraction of the compute. It needs the KV cache, which gradient
checkpointing drops, so runs train without checkpointing (memory then grows with prompt + G x plan tokens,
not G x (prompt + plan)). Anything unusual (images, MoE aux loss, checkpointing on) goes to TRL's own
method unchanged. The method is private and written against TRL 1.16: pyproject.toml pins `trl<1.17`, and
`tests/grpo/test_trl_pin.py` fails when its signature changes shape.
"""

from __future__ import annotations

import inspect
from typing import Any


def cache_argument(model: Any) -> str:
    """The forward's name for a KV cache: `cache` where the model declares it (transformers 5 renamed
    `past_key_values`, which then warns and goes in 5.40), else `past_key_values`."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # under a peft adapter
    return "cache" if "cache" in inspect.signature(type(base).forward).parameters else "past_key_values"


def shared_prompt_trainer() -> type:
    """`GRPOTrainer` with `_get_per_token_logps_and_entropies` reading each distinct prompt once."""
    from trl import GRPOTrainer

    class SharedPromptGRPOTrainer(GRPOTrainer):  # type: ignore[misc]
        def _get_per_token_logps_and_entropies(
            self,
            model: Any,
            input_ids: Any,
            attention_mask: Any,
            logits_to_keep: int,
            batch_size: int | None = None,
            compute_entropy: bool = False,
            compute_aux_loss: bool = False,
            **extra: Any,
        ) -> Any:
            shared = input_ids.size(1) - logits_to_keep - 1  # columns every row of a group has in common
            # Gradient checkpointing drops the KV cache the shared pass keeps: train.py turns it off.
            if (
                shared < 1
                or compute_aux_loss
                or any(v is not None for v in extra.values())
                or self.args.gradient_checkpointing
            ):
                return super()._get_per_token_logps_and_entropies(
                    model,
                    input_ids,
                    attention_mask,
                    logits_to_keep,
                    batch_size=batch_size,
                    compute_entropy=compute_entropy,
                    compute_aux_loss=compute_aux_loss,
                    **extra,
                )
            return _shared_logps(self, model, input_ids, attention_mask, logits_to_keep, shared, compute_entropy)

    return SharedPromptGRPOTrainer


def _shared_logps(
    trainer: Any,
    model: Any,
    input_ids: Any,
    attention_mask: Any,
    logits_to_keep: int,
    shared: int,
    compute_entropy: bool,
) -> tuple[Any, Any, None]:
    """The batch's rows grouped by their first `shared` columns, each group read by `_group_logps`, and the
    log-probabilities (and entropies) put back in the rows' order, as TRL's method returns them."""
    import torch

    groups: dict[tuple, list[int]] = {}
    for i in range(input_ids.size(0)):
        key = (tuple(input_ids[i, :shared].tolist()), tuple(attention_mask[i, :shared].tolist()))
        groups.setdefault(key, []).append(i)
    logps, entropies, order = [], [], []
    for rows in groups.values():
        lp, ent = _group_logps(
            trainer, model, input_ids[rows], attention_mask[rows], logits_to_keep, shared, compute_entropy
        )
        logps.append(lp)
        entropies.append(ent)
        order.extend(rows)
    back = torch.empty(len(order), dtype=torch.long, device=input_ids.device)
    back[torch.tensor(order, device=input_ids.device)] = torch.arange(len(order), device=input_ids.device)
    logps_all = torch.cat(logps)[back]
    entropies_all = torch.cat(entropies)[back] if compute_entropy else None
    return logps_all, entropies_all, None


def _group_logps(
    trainer: Any, model: Any, ids: Any, mask: Any, logits_to_keep: int, shared: int, compute_entropy: bool
) -> tuple[Any, Any]:
    """One group's shared prompt run once with its KV cache kept and repeated for every row, then each row's
    last prompt token and completion on top of it through TRL's fused log-prob head."""
    with trainer.accelerator.autocast():
        prefix = model(input_ids=ids[:1, :shared], attention_mask=mask[:1, :shared], use_cache=True, logits_to_keep=1)
    cache = prefix.past_key_values
    cache.batch_repeat_interleave(ids.size(0))  # differentiable: every row's keys and values come from one pass
    suffix = ids[:, shared:]
    labels = suffix.masked_fill(mask[:, shared:] == 0, -100)
    labels[:, :-logits_to_keep] = -100  # the last prompt token only predicts the first completion token
    with trainer.accelerator.autocast():
        out = model(
            input_ids=suffix,
            attention_mask=mask,
            labels=labels,
            fused_lm_head=True,
            **{cache_argument(trainer.accelerator.unwrap_model(model)): cache},
        )
    entropy = out.entropy[:, -logits_to_keep:] if compute_entropy else None
    return out.log_probs[:, -logits_to_keep:], entropy
