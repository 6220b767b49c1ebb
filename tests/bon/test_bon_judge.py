"""The judge baseline's store: each judgment keeps the judge's reason, flags, errors and confidence beside
its pick, so the baseline can be audited after the run; records from before those fields still load."""

import asyncio

import pytest

from mas_fakes import GUESS, PLAN
from orchrm.bon.config import BonConfig, judge_by_default, resolve_judge
from orchrm.bon.judge import JUDGMENTS_FILE, JudgeRecord, judge_missing, judgeable, read_judgments
from orchrm.evidence import Judgment
from synthetic_traces import trace


class FakeEvaluator:
    """Stands in for SkillEvaluator.alistwise: picks the second response and says why, with a fallback flag."""

    def __init__(self):
        self.calls = 0

    async def alistwise(self, question, responses, *, kind):
        self.calls += 1
        return Judgment(
            mode="listwise",
            best=1,
            scores=[0.2, 0.9] + [0.1] * (len(responses) - 2),
            confidence=0.7,
            reason="response 1 cites the sum",
            flags=["response0: forced_finalization"],
            errors=["python: timeout"],
            prompt_tokens=50,
            completion_tokens=5,
        )


def grouped():
    plans = [
        trace("q", 0, PLAN, correct=True),
        trace("q", 1, "{ not a plan", invalid=True),
        trace("q", 2, GUESS, correct=False),
    ]
    return {"q": plans}


def test_a_judgment_keeps_the_judges_reason_flags_errors_and_confidence(tmp_path):
    path, ev = tmp_path / JUDGMENTS_FILE, FakeEvaluator()
    got = asyncio.run(judge_missing(ev, grouped(), BonConfig(), path))
    assert [t.plan_index for t in judgeable(grouped()["q"])] == [0, 2]
    (j,) = got
    assert (j.best, j.scores) == (2, {"0": 0.2, "2": 0.9})  # response 1 is plan 2: the invalid plan was never shown
    assert (j.reason, j.flags, j.errors, j.confidence) == (
        "response 1 cites the sum",
        ["response0: forced_finalization"],
        ["python: timeout"],
        0.7,
    )
    assert read_judgments(path) == got  # as written to disk, not only in memory
    assert asyncio.run(judge_missing(ev, grouped(), BonConfig(), path)) == got and ev.calls == 1  # resumed


def test_a_judgment_written_before_reasons_were_kept_still_loads(tmp_path):
    path = tmp_path / JUDGMENTS_FILE
    path.write_text('{"question_id":"q","n":4,"key":"k","best":2,"scores":{"0":0.5,"2":0.9},"status":"ok"}\n')
    (j,) = read_judgments(path)
    assert j == JudgeRecord(question_id="q", n=4, key="k", best=2, scores={"0": 0.5, "2": 0.9})
    assert (j.reason, j.flags, j.errors) == ("", [], [])


@pytest.mark.parametrize(
    ("agent_types", "judged"),
    [(None, True), ((), True), (("lookup", "calc"), False), (("calc",), False), (("lookup", "cot"), True)],
)
def test_the_judge_runs_by_default_unless_every_sub_agent_is_an_exact_tool(agent_types, judged):
    assert judge_by_default(agent_types) is judged


@pytest.mark.parametrize("given", [True, False])
def test_a_given_judge_flag_wins_over_the_tasks_default(given):
    assert resolve_judge(given, ("lookup", "calc")) is given and resolve_judge(given, None) is given
    assert resolve_judge(None, ("lookup", "calc")) is False and resolve_judge(None, None) is True
