"""The reward functions GRPO calls: penalty for rejected plans, RM scores, executed-and-graded plans."""

import asyncio
import json
import math

import pytest

from mas_fakes import PLAN, make_task, replies, scripted_llm
from orchrm.grpo.rewards import ExecuteScorer, PlanReward, RMScorer
from orchrm.llm.accounting import TokenLedger
from orchrm.mas.rollout import agent_types_for
from orchrm.rm import RewardModel
from orchrm.samples import SampleRecord, latest_attempts, read_samples
from tiny_policy import tiny_rm

DIRECT = json.dumps({"answer": "4"})


def _msg(text):
    return [{"role": "assistant", "content": text}]


class Constant:
    name = "constant"

    def __init__(self):
        self.seen = []

    async def score(self, question, plans):
        from orchrm.grpo.rewards import Scored

        self.seen.append((question.id, plans))
        return [Scored(reward=0.5) for _ in plans]


def _call(reward, texts, qids):
    return asyncio.run(
        reward(
            prompts=[[]] * len(texts),
            completions=[_msg(t) for t in texts],
            completion_ids=[[1]] * len(texts),
            question_id=qids,
            trainer_state=None,
        )
    )


def test_invalid_plans_get_the_penalty_and_a_record_never_a_crash(tmp_path):
    task = make_task(tmp_path)
    qs = {q.id: q for q in task.questions(2)}
    q1, q2 = list(qs)
    scorer = Constant()
    reward = PlanReward(
        scorer,
        qs,
        degree="dag",
        agent_types=agent_types_for(task),
        penalty=-2.5,
        samples_path=tmp_path / "samples.jsonl",
    )
    cyclic = json.dumps(
        {"agents": [{"id": "a", "type": "cot", "input": "${b}"}, {"id": "b", "type": "cot", "input": "${a}"}]}
    )
    out = _call(reward, [PLAN, "{ not json", cyclic, "", PLAN], [q1, q1, q1, q2, q2])
    assert out == [0.5, -2.5, -2.5, -2.5, 0.5]
    assert [(q, len(p)) for q, p in scorer.seen] == [(q1, 1), (q2, 1)]  # one batch per question, valid plans only
    rows = [SampleRecord.model_validate_json(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()]
    assert [r.valid for r in rows] == [True, False, False, False, True]
    assert rows[1].rule == "parse" and rows[2].rule == "cycle" and rows[2].reward == -2.5


def test_a_resumed_run_s_repeat_of_a_step_supersedes_the_attempt_a_kill_cut_short(tmp_path):
    task = make_task(tmp_path)
    qs = {q.id: q for q in task.questions(1)}
    (q,) = qs

    def step(reward, n, texts):
        asyncio.run(
            reward(
                prompts=[[]] * 2,
                completions=[_msg(t) for t in texts],
                completion_ids=[[1]] * 2,
                question_id=[q, q],
                trainer_state=type("State", (), {"global_step": n})(),
            )
        )

    first = PlanReward(
        Constant(), qs, degree="dag", agent_types=agent_types_for(task), samples_path=tmp_path / "samples.jsonl"
    )
    step(first, 0, [PLAN, PLAN])
    step(first, 1, ["{ not json", PLAN])  # killed before step 1's checkpoint: the resume samples step 1 again
    again = PlanReward(
        Constant(), qs, degree="dag", agent_types=agent_types_for(task), samples_path=tmp_path / "samples.jsonl"
    )
    step(again, 1, [PLAN, PLAN])
    records = read_samples(tmp_path)
    assert [(r.step, r.attempt) for r in records] == [(0, 0), (0, 0), (1, 0), (1, 0), (1, 1), (1, 1)]  # every draw kept
    latest = latest_attempts(records)
    assert [(r.step, r.attempt, r.valid) for r in latest] == [(0, 0, True), (0, 0, True), (1, 1, True), (1, 1, True)]


def test_the_degree_decides_what_is_valid(tmp_path):
    task = make_task(tmp_path)
    qs = {q.id: q for q in task.questions(1)}
    [q] = qs
    direct = PlanReward(Constant(), qs, degree="direct", agent_types=agent_types_for(task))
    dag = PlanReward(Constant(), qs, degree="dag", agent_types=agent_types_for(task))
    assert _call(direct, [DIRECT, PLAN], [q, q]) == [0.5, -1.0]
    assert _call(dag, [DIRECT, PLAN], [q, q]) == [-1.0, 0.5]


def test_the_rm_reward_follows_the_rm_and_runs_no_agent(tmp_path):
    task = make_task(tmp_path)
    qs = {q.id: q for q in task.questions(1)}
    [q] = qs
    rm = RewardModel.load(tiny_rm(tmp_path / "rm", tasks=["jsonl"]))
    other = json.dumps({"agents": [{"id": "x", "type": "python", "input": "Compute it."}]})
    reward = PlanReward(
        RMScorer(rm), qs, degree="dag", agent_types=agent_types_for(task), samples_path=tmp_path / "s.jsonl"
    )
    out = _call(reward, [PLAN, other, "nope"], [q, q, q])
    raw = rm.score(qs[q].question, [PLAN, other])
    assert out[:2] == pytest.approx([1 / (1 + math.exp(-r)) for r in raw]) and out[2] == -1.0
    assert all(0 < r < 1 for r in out[:2])  # every valid plan above the penalty, whatever the RM's scale
    rows = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert rows[0]["detail"]["rm_score"] == pytest.approx(raw[0])


def test_the_execute_reward_runs_the_agents_and_grades_the_answer(tmp_path):
    task = make_task(tmp_path)
    qs = {q.id: q for q in task.questions(1)}
    [q] = qs
    ledger = TokenLedger()
    llm = scripted_llm(replies())
    llm.ledger = ledger
    reward = PlanReward(ExecuteScorer(task, llm), qs, degree="dag", agent_types=agent_types_for(task))
    single = json.dumps(
        {"agents": [{"id": "g", "type": "cot", "input": "Guess."}]}
    )  # the final agent sees the question
    out = _call(reward, [PLAN, "garbage", single], [q, q, q])
    assert out == [1.0, -1.0, 1.0]
    assert ledger.totals()["execute"].calls == len(llm.backend.calls) > 0  # every sub-agent call counted


def test_a_scorer_that_fails_records_an_error_not_a_zero(tmp_path):
    from orchrm.errors import ConfigError

    task = make_task(tmp_path)
    qs = {q.id: q for q in task.questions(1)}
    [q] = qs

    def broken(prediction, question):
        raise ConfigError("scorer is down")

    task.correct = broken
    reward = PlanReward(
        ExecuteScorer(task, scripted_llm(replies())),
        qs,
        degree="dag",
        agent_types=agent_types_for(task),
        samples_path=tmp_path / "s.jsonl",
    )
    assert _call(reward, [PLAN], [q]) == [None]
    [row] = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert row["reward"] is None and "scorer is down" in row["error"]


def test_the_prior_reward_is_the_shape_priors_rate_whatever_the_plan_says(tmp_path):
    from orchrm.bon.prior import ShapePrior
    from orchrm.grpo.rewards import PriorScorer
    from orchrm.mas.plans import Plan

    def plan(kind, text):
        return Plan.model_validate({"agents": [{"id": "a1", "type": kind, "input": text}]})

    prior = ShapePrior()
    for ok in (True, True, True, False):
        prior.add(plan("python", "add them"), ok)
    for ok in (False, False, True):
        prior.add(plan("cot", "think"), ok)
    task = make_task(tmp_path)
    [q] = task.questions(1)
    python_a, python_b, cot = asyncio.run(
        PriorScorer(prior).score(q, [plan("python", "x"), plan("python", "other words"), plan("cot", "y")])
    )
    assert python_a.reward == python_b.reward == prior.lookup(plan("python", "x")).value  # the text plays no part
    assert python_a.reward > cot.reward and python_a.detail == {"grain": "plan"}


def test_a_decoder_rms_reads_are_counted_under_verify_and_an_encoders_are_not(tmp_path):
    task = make_task(tmp_path)
    qs = {q.id: q for q in task.questions(1)}
    [q] = qs
    encoder = RewardModel.load(tiny_rm(tmp_path / "rm", tasks=["jsonl"]))
    # the same network carded as a decoder: what `RMScorer` reads to decide whether it is an LLM call
    decoder = RewardModel(
        encoder.model, encoder.tokenizer, encoder.card.model_copy(update={"backbone_kind": "decoder"})
    )
    other = json.dumps({"agents": [{"id": "x", "type": "python", "input": "Compute it."}]})
    for rm, calls in ((encoder, 0), (decoder, 2)):
        ledger = TokenLedger()
        reward = PlanReward(RMScorer(rm, ledger), qs, degree="dag", agent_types=agent_types_for(task))
        _call(reward, [PLAN, other, "nope"], [q, q, q])  # the invalid plan is never scored
        verify = ledger.totals().get("verify")
        assert (verify.calls if verify else 0) == calls
    assert verify.prompt_tokens == sum(decoder.token_counts(qs[q].question, [PLAN, other])) > 0
    assert verify.completion_tokens == 0 and set(ledger.totals()) == {"verify"}


def test_the_router_reward_reads_the_question_and_the_shape_and_says_when_it_fell_back(tmp_path):
    from orchrm.bon.prior import ShapePrior
    from orchrm.bon.router import Router
    from orchrm.grpo.rewards import RouterScorer
    from orchrm.mas.plans import Plan

    def plan(kind, text):
        return Plan.model_validate({"agents": [{"id": "a1", "type": kind, "input": text}]})

    task = make_task(tmp_path)
    [q] = task.questions(1)

    class Row:  # the fields Router.fit reads of a training trace
        def __init__(self, question, p, ok):
            self.question, self.plan, self.valid, self.executed = question, p, True, True
            self.question_id, self.score = question, type("S", (), {"correct": ok})()

    rows = [Row(q.question, plan("python", "x"), True), Row(q.question, plan("cot", "y"), False)] * 4
    prior = ShapePrior()
    for r in rows:
        prior.add(r.plan, r.score.correct)
    router = Router.fit(rows, prior=prior)
    a, b, unseen = asyncio.run(
        RouterScorer(router).score(q, [plan("python", "one"), plan("cot", "two"), plan("search", "three")])
    )
    assert a.reward > b.reward and a.detail == {"fallback": False}
    assert asyncio.run(RouterScorer(router).score(q, [plan("python", "other words")]))[0].reward == a.reward
    assert unseen.detail == {"fallback": True} and unseen.reward == prior.score(plan("search", "three"))


def test_the_valid_reward_is_one_for_a_valid_plan_and_the_penalty_for_an_invalid_one(tmp_path):
    from orchrm.grpo.rewards import ValidScorer

    task = make_task(tmp_path)
    qs = {q.id: q for q in task.questions(1)}
    [q] = qs
    reward = PlanReward(ValidScorer(), qs, degree="dag", agent_types=agent_types_for(task), penalty=-0.5)
    assert _call(reward, [PLAN, "not a plan"], [q, q]) == [1.0, -0.5]


def test_a_sub_agent_server_that_dies_stops_the_step_instead_of_rewarding_zero(tmp_path):
    from orchrm.errors import BackendUnreachable

    task = make_task(tmp_path)
    qs = {q.id: q for q in task.questions(1)}
    [q] = qs
    reward = PlanReward(
        ExecuteScorer(task, scripted_llm(BackendUnreachable("cannot reach http://x/v1"))),
        qs,
        degree="dag",
        agent_types=agent_types_for(task),
        samples_path=tmp_path / "s.jsonl",
    )
    with pytest.raises(BackendUnreachable, match="stopped answering.*cannot reach") as err:
        _call(reward, [PLAN], [q])
    assert "resumes from the last sealed checkpoint" in err.value.hint
    assert not (tmp_path / "s.jsonl").exists()  # nothing recorded for a step that did not happen
