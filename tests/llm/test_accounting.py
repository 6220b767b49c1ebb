from orchrm.llm.accounting import TokenLedger
from orchrm.llm.types import Completion, Usage


def _c(p, c, cached=False):
    return Completion(text="", finish_reason="stop", usage=Usage(prompt_tokens=p, completion_tokens=c), cached=cached)


def test_totals_per_category_in_pipeline_order():
    ledger = TokenLedger()
    ledger.record("verify", "local", "m", [_c(10, 1)])
    ledger.record("plan", "local", "m", [_c(100, 20), _c(100, 30, cached=True)])
    ledger.record("custom", "local", "m", [_c(1, 1)])
    totals = ledger.totals()
    assert list(totals) == ["plan", "verify", "custom"]
    plan = totals["plan"]
    assert (plan.calls, plan.cached_calls) == (2, 1)
    assert (plan.prompt_tokens, plan.completion_tokens) == (200, 50)
    assert (plan.spent_prompt_tokens, plan.spent_completion_tokens) == (100, 20)
    assert ledger.total().total_tokens == 200 + 50 + 11 + 2
    assert ledger.total().spent_tokens == 120 + 11 + 2
