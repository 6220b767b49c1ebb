"""The shipped skills judging real model output with the embedded model, offline (kept to a few calls)."""

import pytest

from orchrm.evidence import EvaluatorConfig, SkillEvaluator
from orchrm.llm import LLM, LocalBackend
from orchrm.llm.server import ServerConfig

pytestmark = pytest.mark.real_model

Q = "What is 17 + 25 - 8?"


@pytest.fixture(scope="module")
def qwen():
    llm = LLM(LocalBackend("qwen2.5-coder-0.5b", server=ServerConfig(parallel=2, ctx_per_slot=4096)))
    yield llm
    llm.close()


def test_reference_free_pointwise_on_a_real_answer(qwen):
    answer = qwen.generate(f"{Q} End with 'Answer: <number>'.", category="execute", max_tokens=96)[0].text
    ev = SkillEvaluator(qwen, config=EvaluatorConfig(use_references=False, max_steps=3, max_tokens=160))
    j = ev.pointwise(Q, answer, kind="math")
    # Whatever the small model decides, the loop ends in a recorded state: a score or an error, never silence.
    assert j.status == "ok" or j.errors or j.flags
    assert not j.llm_skipped or j.score is not None
    if not j.llm_skipped:
        assert j.llm_calls >= 1 and j.prompt_tokens > 0
        assert qwen.ledger.totals()["verify"].calls == j.llm_calls
    if j.status == "ok":
        assert 0.0 <= j.score <= 1.0


def test_reference_decides_without_the_llm(qwen):
    ev = SkillEvaluator(qwen)
    before = qwen.ledger.total().calls
    j = ev.pairwise(Q, "42 - 8 = 36. Answer: 36", "42 - 8 = 34. Answer: 34", kind="math", reference="34")
    assert j.verdict == "B" and j.llm_skipped and qwen.ledger.total().calls == before
