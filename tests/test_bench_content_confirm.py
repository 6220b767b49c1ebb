"""bench/content_confirm.py: held-out questions no plan was sampled for, training traces less the new templates."""

from types import SimpleNamespace

import pytest

from bench_module import load_bench
from orchrm.tasks import load_task


@pytest.fixture(scope="module")
def cc(request):
    return load_bench(request, "content_confirm.py")


def test_fresh_questions_skip_the_excluded_and_keep_the_split_and_scoring(cc):
    task = load_task(cc.TASK)
    first = task.questions(30, split="test", seed=0)
    excluded = {q.id for q in first[::3]}
    fresh = cc.FreshQuestions(task, excluded)
    got = fresh.questions(20, split="test", seed=0)
    assert len(got) == 20 and not {q.id for q in got} & excluded
    assert [q.id for q in got] == [q.id for q in first if q.id not in excluded][
        :20
    ]  # the task's order, less the excluded
    assert all(fresh.split(q) == "test" for q in got)
    q = got[0]
    assert fresh.score(q.answer, q) == task.score(q.answer, q) == 1.0
    assert fresh.world is task.world and fresh.agent_types == task.agent_types == ("lookup", "calc")


def test_the_new_templates_are_dropped_from_training_by_the_traces_template(cc):
    # a trace records its template as `kind.template` (the question's metadata holds the bare name)
    kept = SimpleNamespace(question_template="arithmetic.founded_gap")
    dropped = SimpleNamespace(question_template="arithmetic.employees_gap")
    assert not cc._held_out(kept) and cc._held_out(dropped)
    assert set(cc.NEW).isdisjoint(cc.OLD) and all(name in cc.TASK for name in cc.NEW + cc.OLD)


def test_rows_resume_skip_what_is_done_and_save_each_new_one(cc, capsys):
    row = lambda arm, seed: {  # noqa: E731
        "arm": arm,
        "seed": seed,
        "columns": {"rm": [1.0], cc.HYBRID: [0.0]},
        "content": {"auc": {"rm": {"value": 0.5}}},
    }
    done, saved = [row("a", 0)], []
    made = lambda arm, seed: None if arm == "b" else row(arm, seed)  # noqa: E731
    cc.run_rows(done, "a,b", "0,1", None, made, lambda rows: saved.append(len(rows)))
    assert [(r["arm"], r["seed"]) for r in done] == [("a", 0), ("a", 1)] and saved == [2]
    assert "a seed 1: rm 1.000" in capsys.readouterr().out
