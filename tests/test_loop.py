"""The whole loop with a scripted LLM: rollouts -> pairs -> RM -> best-of-N -> report, then a cached rerun."""

import asyncio

from mas_fakes import bon_replies as replies
from mas_fakes import make_task, scripted_llm

from orchrm.bon.run import BonConfig
from orchrm.loop import LoopConfig, arun_loop
from orchrm.rm.config import RMConfig


def test_loop_end_to_end_then_rerun_reuses_everything(tmp_path):
    task = make_task(tmp_path)
    config = LoopConfig(
        task="jsonl", train_questions=6, test_questions=3, n=3, constrained=False,
        rm=RMConfig(epochs=1, max_length=96), bon=BonConfig(resamples=200),
    )  # fmt: skip
    assert config.bon.n == 3  # one N for training rollouts and best-of-N
    result = asyncio.run(arun_loop(task, scripted_llm(replies()), tmp_path / "demo", config))
    assert result.rm_trained and result.pair_stats.total > 0
    assert result.bon.results["questions"] == 3
    assert result.reports["md"].exists() and result.reports["html"].exists()
    assert not result.bon.warnings  # the RM was trained on this task

    llm = scripted_llm(replies())
    again = asyncio.run(arun_loop(task, llm, tmp_path / "demo", config))
    assert not again.rm_trained  # same pairs, same settings: the saved RM is reused
    assert llm.backend.calls == []  # every trace and judgment was on disk
    for method, m in again.bon.results["methods"].items():  # wall time includes the live RM scoring
        assert (m["accuracy"], m["tokens"]) == (result.bon.results["methods"][method]["accuracy"], result.bon.results["methods"][method]["tokens"])
