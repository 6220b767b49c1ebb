"""Training tokens counted as computed: a group's prompt once in the update (and in sampling where the
sampler shares it), the per-sample count kept beside it."""

import asyncio
import json

from orchrm.grpo.accounting import Accounted, LedgerLog, totals_json


def _call(tmp_path, shared_sampling):
    ledger = LedgerLog(tmp_path / "tokens.jsonl")
    acc = Accounted(
        lambda **kw: [1.0] * len(kw["completion_ids"]), ledger, "policy", 2, shared_sampling=shared_sampling
    )
    prompts = ["A?"] * 3 + ["B?"] * 2  # two groups
    out = asyncio.run(acc(prompts, ["x"] * 5, [[1, 2]] * 5, prompt_tokens=[100, 100, 100, 60, 60]))
    ledger.close()
    return out, json.loads(totals_json(ledger))


def test_the_update_reads_each_groups_prompt_once_per_pass(tmp_path):
    out, totals = _call(tmp_path, shared_sampling=False)
    assert out == [1.0] * 5
    train = totals["categories"]["train"]
    assert train["prompt_tokens"] == 2 * (100 + 60) and train["completion_tokens"] == 2 * 10
    assert train["per_sample_tokens"] == 2 * (3 * 100 + 2 * 60 + 10)
    plan = totals["categories"]["plan"]  # TRL's generate computes every row's prompt
    assert plan["prompt_tokens"] == plan["per_sample_tokens"] - plan["completion_tokens"] == 420


def test_a_sharing_sampler_reads_the_prompt_once_too(tmp_path):
    _, totals = _call(tmp_path, shared_sampling=True)
    plan = totals["categories"]["plan"]
    assert plan["prompt_tokens"] == 160 and plan["per_sample_tokens"] == 420 + 10
    assert totals["total"]["per_sample_tokens"] - totals["total"]["total_tokens"] == (420 - 160) * 3


def test_tokens_json_reads_back_through_its_owner_also_as_first_written(tmp_path):
    """`tokens.json` is declared by `orchrm.llm.accounting`: what the trainer writes reads back as written, and
    a file from before cached prompts and per-sample counts were recorded still reads (with neither)."""
    import pytest

    from orchrm.errors import RunFileError
    from orchrm.grpo.accounting import write_totals
    from orchrm.llm.accounting import TOKENS_FILE, read_totals

    _call(tmp_path, shared_sampling=False)
    written = write_totals(tmp_path)
    assert read_totals(tmp_path).model_dump() == written == json.loads((tmp_path / TOKENS_FILE).read_text())
    counts = {"calls": 2, "cached_calls": 0, "prompt_tokens": 30, "completion_tokens": 5}
    row = {**counts, "spent_prompt_tokens": 30, "spent_completion_tokens": 5, "total_tokens": 35, "spent_tokens": 35}
    (tmp_path / TOKENS_FILE).write_text(json.dumps({"categories": {"plan": row}, "total": row}))
    old = read_totals(tmp_path)
    assert old.total.total_tokens == 35 and old.total.per_sample_tokens is None
    assert old.model_dump()["categories"]["plan"] == row and old.total.cached_prompt_tokens == 0
    (tmp_path / TOKENS_FILE).write_text('{"categories": []}')
    with pytest.raises(RunFileError, match="not a token totals file"):
        read_totals(tmp_path)
