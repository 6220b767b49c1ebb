"""SkillEvaluator with a scripted LLM: cheap evidence first, both orders, aggregation, no silent defaults."""

import json

import pytest

from orchrm.evidence import EvaluatorConfig, SkillEvaluator
from orchrm.llm import LLM
from orchrm.llm.scripted import ScriptedBackend

Q = "What is 17 + 25 - 8?"
GOOD = "17 + 25 = 42. 42 - 8 = 34. Answer: 34"
BAD = "17 + 25 = 42. 42 - 8 = 36. Answer: 36"
BAD_NO_STEPS = "I think it is 36. Answer: 36"


def final(**kw):
    return json.dumps({"action": "final_answer", "reason": "r", "confidence": 0.8, **kw})


def evaluator(replies, **cfg):
    backend = ScriptedBackend(replies)
    return SkillEvaluator(LLM(backend), config=EvaluatorConfig(**cfg)), backend


def test_decisive_reference_evidence_skips_the_llm():
    ev, backend = evaluator([final(score=1.0)])
    j = ev.pointwise(Q, BAD, kind="math", reference="34")
    assert j.llm_skipped and backend.calls == []
    assert j.score < 0.5 and "math-answer/reference-equivalence" in j.used_resources
    j = ev.pairwise(Q, BAD, GOOD, kind="math", reference="34")
    assert j.verdict == "B" and j.llm_skipped and backend.calls == [] and j.tokens == 0


def test_skipping_is_configurable_and_strong_evidence_still_dominates():
    ev, backend = evaluator([final(score=1.0)], skip_llm_when_decisive=False)
    j = ev.pointwise(Q, BAD, kind="math", reference="34")
    assert not j.llm_skipped and len(backend.calls) == 1
    assert j.score < 0.5  # the LLM said 1.0; the strong reference check says 0


def test_reference_free_pairwise_judges_both_orders():
    # The model prefers whatever is shown first: the two orders disagree and cancel.
    ev, backend = evaluator([final(verdict="A")])
    j = ev.pairwise(Q, BAD_NO_STEPS, GOOD, kind="math")
    assert len(backend.calls) == 2
    shown = sorted(c[0][1].content.index(GOOD) < c[0][1].content.index("Response B") for c in backend.calls)
    assert shown == [False, True]  # GOOD was shown once as B and once as A
    assert any("position_bias" in f for f in j.flags)
    assert j.verdict in ("tie", "B")  # no rule evidence decides; bias cancelled to (near) tie


def test_consistent_llm_verdicts_across_orders_decide():
    def judge(messages, config):
        user = messages[1].content
        return final(verdict="A" if user.index(GOOD) < user.index("Response B") else "B", confidence=0.9)

    ev, backend = evaluator([judge])
    j = ev.pairwise(Q, BAD_NO_STEPS, GOOD, kind="math")
    assert j.verdict == "B" and not any("position_bias" in f for f in j.flags)
    assert j.prompt_tokens > 0 and j.llm_calls == 2


def test_without_llm_an_undecided_judgment_is_an_error_not_a_default():
    ev = SkillEvaluator(None)
    j = ev.pointwise(Q, BAD_NO_STEPS, kind="math")
    assert j.status == "error" and j.score is None and "no_llm" in j.flags
    j = ev.pointwise(Q, BAD, kind="math", reference="34")
    assert j.status == "ok" and j.score is not None


def test_agent_without_final_answer_falls_back_to_rule_evidence_with_flags():
    ev, _ = evaluator(["not json"], max_steps=2)
    j = ev.pointwise(Q, BAD, kind="math")  # arithmetic-consistency found the wrong step
    assert j.status == "ok" and j.score == 0.5 and "no_final_answer" in j.flags
    j = ev.pointwise(Q, "no numbers here, sorry", kind="qa")
    assert j.score == 0.0 and j.llm_skipped  # vetoed: no final answer at all


def test_listwise_picks_the_best():
    ev, backend = evaluator([final(score=0.5)])
    j = ev.listwise(Q, [BAD, GOOD, "no answer"], kind="math", reference="34")
    assert j.best == 1 and j.scores[1] > j.scores[0] and backend.calls == []
    with pytest.raises(Exception, match="at least two"):
        ev.listwise(Q, [GOOD])


def test_every_llm_call_is_recorded_under_verify():
    ev, _ = evaluator([final(score=0.9)])
    ev.pointwise(Q, BAD_NO_STEPS, kind="math")
    assert set(ev.llm.ledger.totals()) == {"verify"}


def test_a_final_answer_without_a_score_is_flagged_not_read_as_a_default(monkeypatch):
    from orchrm.evidence.agent import AgentOutcome, EvaluatorAgent

    async def no_score(self, task):
        return AgentOutcome({"reason": "looks fine", "confidence": 0.9}, {}, [], [], [])

    monkeypatch.setattr(EvaluatorAgent, "run", no_score)
    ev, backend = evaluator([final(score=1.0)])
    j = ev.pointwise(Q, BAD_NO_STEPS, kind="math")
    assert not j.llm_skipped and backend.calls == []
    assert any(f.startswith("final_without_score") for f in j.flags)
    assert "llm-judgment" not in j.used_resources  # no 0.5 stood in for the missing score
