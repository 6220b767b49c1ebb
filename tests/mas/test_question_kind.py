import asyncio
import json

from mas_fakes import by_prompt, make_task, replies, run_config, scripted_llm
from orchrm.mas.rollout import arollout, replay
from orchrm.mas.traces import Trace, read_traces
from orchrm.tasks.user import JsonlTask


class KindedTask(JsonlTask):
    """The fake jsonl task, with a kind per question (even/odd item) as world_qa and mix tasks give."""

    def _pool(self, seed: int):
        for q in super()._pool(seed):
            yield q.model_copy(update={"metadata": {"kind": "even" if int(q.id[1:]) % 2 == 0 else "odd"}})


def test_traces_carry_the_question_kind_and_replay_keeps_it(tmp_path):
    plain = make_task(tmp_path)
    task = KindedTask(tmp_path / "qs.jsonl")
    asyncio.run(arollout(task, scripted_llm(replies()), tmp_path / "r", run_config()))
    traces = read_traces(tmp_path / "r" / "traces.jsonl")
    kinds = {q.id: q.metadata["kind"] for q in task.questions(3)}
    assert traces and all(t.question_kind == kinds[t.question_id] for t in traces)
    [good, *_] = [t for t in traces if t.valid]
    again = asyncio.run(replay(good, task, scripted_llm(by_prompt({}, default="Answer: 1"))))
    assert again.question_kind == good.question_kind
    # A task without kinds leaves the field empty.
    asyncio.run(arollout(plain, scripted_llm(replies()), tmp_path / "p", run_config()))
    assert all(t.question_kind is None for t in read_traces(tmp_path / "p" / "traces.jsonl"))


def test_old_traces_without_a_kind_still_load(tmp_path):
    task = make_task(tmp_path)
    asyncio.run(arollout(task, scripted_llm(replies()), tmp_path / "r", run_config(n_questions=1)))
    path = tmp_path / "r" / "traces.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        row.pop("question_kind")  # as written before the field existed
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    back = read_traces(path)
    assert len(back) == len(rows) and all(isinstance(t, Trace) and t.question_kind is None for t in back)
