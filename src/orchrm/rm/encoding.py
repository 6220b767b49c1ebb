"""Token ids of (question, plan): one function, so training and scoring can never disagree."""

from __future__ import annotations

from typing import Any


def encode(tokenizer: Any, prompt: str, plan: str, max_length: int, *, decoder: bool = False) -> list[int]:
    """Question and plan as a sentence pair, truncated (longest side first) to `max_length`, never dropped.

    An encoder's tokenizer marks the pair itself ([CLS] question [SEP] plan [SEP]). A decoder's adds nothing
    between the two, so the question ends in a newline, and the sequence in the end-of-text token: the value
    head reads the last token, which then has seen the whole plan (TRL appends EOS the same way)."""
    if not decoder:
        return list(tokenizer(prompt, plan, truncation="longest_first", max_length=max_length)["input_ids"])
    ids = tokenizer(
        prompt + "\n", plan, truncation="longest_first", max_length=max_length - 1, add_special_tokens=False
    )
    return [*ids["input_ids"], tokenizer.eos_token_id]


def kept_plan_chars(tokenizer: Any, prompt: str, plan: str, max_length: int, *, decoder: bool = False) -> int:
    """How many leading characters of `plan` survive `encode`'s truncation (len(plan) when none is cut).

    Truncation drops the plan's tail first (the later agents: often the final one, with its references), which
    a reward model then never reads; this says how much, so a max length can be chosen on the data."""
    kwargs: dict[str, Any] = {"truncation": "longest_first", "return_offsets_mapping": True}
    if decoder:
        enc = tokenizer(prompt + "\n", plan, max_length=max_length - 1, add_special_tokens=False, **kwargs)
    else:
        enc = tokenizer(prompt, plan, max_length=max_length, **kwargs)
    full = tokenizer(plan, add_special_tokens=False)["input_ids"]
    ends = [end for (_, end), seq in zip(enc["offset_mapping"], enc.sequence_ids(), strict=True) if seq == 1]
    return len(plan) if len(ends) >= len(full) else max(ends, default=0)
