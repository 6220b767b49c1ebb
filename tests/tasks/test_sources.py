import json

import pytest

from orchrm.errors import ConfigError
from orchrm.tasks import load_task, split_of
from orchrm.tasks.external import answer_leaves, loose_accuracy
from orchrm.tasks.search_qa import SearchQATask, answer_forms, build_world, world_documents


@pytest.mark.parametrize(
    "name", ["gsm_symbolic", "basic_arithmetic", "chain_sum", "family_relationships", "search_qa", "champ", "fanoutqa"]
)
def test_sources_are_deterministic_split_and_their_scorer_accepts_gold(name):
    task = load_task(name)
    train = task.questions(4, seed=1)
    assert [q.id for q in train] == [q.id for q in task.questions(4, seed=1)]
    test = task.questions(2, split="test", seed=1)
    assert not {q.id for q in train} & {q.id for q in test}
    assert all(split_of(q.question) == "train" for q in train)
    for q in train + test:
        assert task.correct(q.answer, q) == (1.0, True), q  # check the checker
        assert task.correct(None, q)[1] is False


def test_questions_are_distinct_even_when_the_generator_repeats_itself():
    # chain_sum's seed-0 pool repeats a test question within its first hundred.
    ids = [q.id for q in load_task("chain_sum").questions(100, split="test")]
    assert len(set(ids)) == 100


def test_search_qa_has_a_hundred_held_out_questions():
    assert len(SearchQATask().questions(100, split="test")) == 100


def test_gym_scorer_rejects_a_wrong_answer_and_accepts_numeric_forms():
    task = load_task("gsm_symbolic")
    q = task.questions(1)[0]
    assert task.correct(str(int(q.answer) + 1), q)[1] is False
    assert task.correct(f"{q.answer}.0", q)[1] is True


def test_any_reasoning_gym_generator_by_name_and_unknown_names():
    assert load_task("leg_counting").questions(1)
    with pytest.raises(ConfigError, match="unknown task"):
        load_task("no_such_generator")


def test_search_qa_world_is_deterministic_and_needs_two_documents():
    assert build_world(0) == build_world(0) and build_world(0) != build_world(1)
    task = SearchQATask()
    docs = {d.id: d.text for d in world_documents(task.world)}
    for q in task.questions(30):
        # The question names an entity whose document does not hold the answer: a second hop is needed.
        forms = answer_forms(q.answer)
        holders = [i for i, t in docs.items() if any(f in t for f in forms)]
        assert holders
        named = [i for i in docs if i.split(":", 1)[1] in q.question]
        assert named and all(not any(f in docs[i] for f in forms) for i in named)


def test_search_qa_corpus_retrieves_the_bridge_document():
    task = SearchQATask()
    hits_first = 0
    qs = task.questions(20)
    for q in qs:
        top = [doc_id for doc_id, _ in task.corpus.search(q.question, 2)]
        hits_first += any(doc_id.split(":", 1)[1] in q.question for doc_id in top)
    assert hits_first >= 18
    assert task.corpus.search("", 2) == []
    assert task.corpus.search("the of and", 2) == []


def test_search_qa_scorer():
    task = SearchQATask()
    q = next(q for q in task.questions(40) if q.metadata["kind"] == "hq_population")
    assert task.correct(f"{int(q.answer):,}", q)[1]
    assert not task.correct("12", q)[1]
    c = next(q for q in task.questions(40) if q.metadata["kind"] == "birth_country")
    assert task.correct(c.answer.lower() + ".", c)[1] and not task.correct("France", c)[1]


def test_fanoutqa_loose_accuracy():
    leaves = answer_leaves({"Pat Burrell": "Right", "JD Drew": "Left"})
    assert leaves == ["Pat Burrell", "Right", "JD Drew", "Left"]
    assert loose_accuracy("Pat Burrell bats right; JD Drew bats left", leaves) == 1.0
    assert loose_accuracy("Pat Burrell: right", leaves) == 0.5


def test_jsonl_task(tmp_path):
    path = tmp_path / "mine.jsonl"
    rows = [{"id": f"r{i}", "question": f"Question number {i}?", "answer": str(i)} for i in range(30)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    task = load_task(f"jsonl:{path}")
    qs = task.questions(5)
    assert all(split_of(q.question) == "train" for q in qs)
    assert task.correct(qs[0].answer, qs[0])[1] and not task.correct("nope", qs[0])[1]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": 1, "question": "q"}\n', "mine.jsonl:1"),
        ('{"id": 1, "question": "q", "answer": 1}\nnot json\n', "mine.jsonl:2"),
    ],
)
def test_jsonl_bad_lines_are_named(tmp_path, content, message):
    path = tmp_path / "mine.jsonl"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        load_task(f"jsonl:{path}")


def test_jsonl_duplicate_ids(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text('{"id": 1, "question": "a", "answer": 1}\n{"id": 1, "question": "b", "answer": 2}\n')
    with pytest.raises(ConfigError, match="duplicate id"):
        load_task(f"jsonl:{path}")


def test_datasets_from_local_files(tmp_path):
    csv = tmp_path / "data.csv"
    csv.write_text("question,answer\n" + "\n".join(f"What is {i} times 2?,{2 * i}" for i in range(20)) + "\n")
    task = load_task(f"hf:{csv}")
    qs = task.questions(3)
    assert task.correct(qs[0].answer, qs[0])[1]
    import datasets

    saved = tmp_path / "saved"
    datasets.Dataset.from_list(
        [{"id": f"x{i}", "question": f"Q{i} words here", "answer": "yes"} for i in range(20)]
    ).save_to_disk(str(saved))
    assert load_task(f"hf:{saved}").questions(2)[0].id.startswith("x")
    bad = tmp_path / "bad.csv"
    bad.write_text("prompt,target\na,b\n")
    with pytest.raises(ConfigError, match="no column 'question'"):
        load_task(f"hf:{bad}")
