"""kept_plan_chars: how much of a rendered plan the RM reads at its max length (the embedded MiniLM tokenizer)."""

import pytest
from transformers import AutoTokenizer

from orchrm.rm.backbone import resolve_backbone
from orchrm.rm.encoding import encode, kept_plan_chars


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(resolve_backbone("all-minilm-l6-v2").path, local_files_only=True)


def test_a_short_plan_is_read_whole_and_a_long_one_loses_its_tail(tokenizer):
    prompt = "question: What is the population of the city where Norvex Foundry is headquartered?"
    short = "plan: 1 agents, final: a1\n- a1 [search]: Which city is Norvex Foundry headquartered in?"
    assert kept_plan_chars(tokenizer, prompt, short, 256) == len(short)
    long = (
        short
        + "\n"
        + "\n".join(f"- a{i} [cot] <- a1: Step {i} reads ${{a1}} and checks it again." for i in range(2, 40))
    )
    kept = kept_plan_chars(tokenizer, prompt, long, 128)
    assert 0 < kept < len(long) and long[:kept].startswith("plan: 1 agents")
    # What survives is exactly what `encode` keeps: re-encoding the kept prefix gives the same ids.
    assert encode(tokenizer, prompt, long, 128) == encode(tokenizer, prompt, long[:kept], 128)
