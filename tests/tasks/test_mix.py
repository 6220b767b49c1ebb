from collections import Counter

import pytest

from orchrm.errors import ConfigError
from orchrm.tasks import load_task, split_of
from orchrm.tasks.base import Question, Task
from orchrm.tasks.corpus import Corpus, Document
from orchrm.tasks.mix import MixTask
from orchrm.tasks.world_qa import compare_options


@pytest.fixture(scope="module")
def mix():
    return load_task("mix:world_qa,chain_sum")


def test_ids_metadata_and_balance(mix):
    qs = mix.questions(40, split="test")
    assert mix.name == "mix:world_qa,chain_sum"
    assert Counter(q.metadata["task"] for q in qs) == {"world_qa": 20, "chain_sum": 20}
    assert [q.metadata["task"] for q in qs[:4]] == ["world_qa", "chain_sum", "world_qa", "chain_sum"]
    for q in qs:
        source = q.metadata["task"]
        assert q.id.startswith(f"{source}/{source}-") and split_of(q.question) == "test"
        assert (q.metadata["kind"] == "chain_sum") == (source == "chain_sum")  # no kinds of its own: its name
    assert {q.metadata["kind"] for q in qs if q.metadata["task"] == "world_qa"} >= {"lookup", "bridge", "fanout"}
    # The member's own questions, in the same split, under a prefixed id.
    own = {q.id for q in load_task("world_qa").questions(20, split="test")}
    assert {q.id.split("/", 1)[1] for q in qs if q.metadata["task"] == "world_qa"} == own


def test_splits_and_determinism(mix):
    train, test = mix.questions(30), mix.questions(30, split="test")
    assert all(split_of(q.question) == "train" for q in train) and not {q.id for q in train} & {q.id for q in test}
    assert [q.id for q in test] == [q.id for q in load_task("mix:world_qa,chain_sum").questions(30, split="test")]
    assert [q.id for q in mix.questions(30, split="test", seed=1)] != [q.id for q in test]
    with pytest.raises(ConfigError, match="unknown split"):
        mix.questions(1, split="dev")


def test_each_question_is_scored_by_its_source(mix):
    qs = mix.questions(40)
    for q in qs:
        assert mix.correct(q.answer, q) == (1.0, True), q
        assert mix.correct(None, q)[1] is False
    s = next(q for q in qs if q.metadata["task"] == "chain_sum")
    assert not mix.correct(str(int(s.answer) + 1), s)[1]
    c = next(q for q in qs if q.metadata["kind"] == "compare")
    a, b = compare_options(c.question)
    assert not mix.correct(f"{a} or {b}", c)[1]
    # A question rebuilt from a trace (id, text, gold; no metadata) still finds its scorer.
    bare = Question(id=c.id, question=c.question, answer=c.answer)
    assert mix.correct(c.answer, bare)[1] and not mix.correct(f"{a} or {b}", bare)[1]
    with pytest.raises(ConfigError, match="not from this mix"):
        mix.score("1", Question(id="gsm_symbolic/x", question="q", answer="1"))


def test_corpus_of_the_members(mix):
    world = load_task("world_qa")
    assert mix.corpus.documents == world.documents  # the one member with a corpus
    assert load_task("mix:chain_sum,basic_arithmetic").corpus is None
    # search_qa and world_qa share one world: one corpus, and search_qa's bridge questions are not drawn twice.
    both = load_task("mix:world_qa,search_qa")
    assert both.corpus is both.members["world_qa"].corpus
    texts = [q.question for q in both.questions(200)]
    assert len(texts) == len(set(texts))


class Docs(Task):
    def __init__(self, name, docs):
        self.name = name
        self.corpus = Corpus([Document(id=i, text=t) for i, t in docs])

    def _pool(self, seed):
        yield Question(id=f"{self.name}-1", question=f"Question of {self.name}?", answer="1")

    def score(self, prediction, question):
        return float(prediction == question.answer)


def test_several_corpora_join_and_conflicts_are_refused():
    apples = ("x", "apples grow on trees")
    joint = MixTask([Docs("a", [apples]), Docs("b", [("y", "bananas are yellow"), apples])])
    assert {d for d, _ in joint.corpus.search("apples bananas", 5)} == {"x", "y"}
    with pytest.raises(ConfigError, match="different documents with id 'x'"):
        MixTask([Docs("a", [("x", "apples")]), Docs("b", [("x", "pears")])])


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("mix:chain_sum", "at least two"),
        ("mix:chain_sum,chain_sum", "twice"),
        ("mix:chain_sum,mix:a,b", "cannot contain"),
        ("mix:chain_sum,no_such_task", "unknown task"),
    ],
)
def test_bad_mixes(spec, message):
    with pytest.raises(ConfigError, match=message):
        load_task(spec)
