import re
from collections import Counter

import pytest

from orchrm.errors import ConfigError
from orchrm.tasks import load_task, split_of
from orchrm.tasks.base import Question
from orchrm.tasks.world_qa import ALL_KINDS, KINDS, WorldQATask, compare_options

# An independent reader of the corpus: facts parsed from the documents' text, never from the world's dicts.
CITY = re.compile(r"^(.+) is a city in (\w+)\. \1 has a population of ([\d,]+)\.$")
COMPANY = re.compile(
    r"^(.+) is a company headquartered in (\w+)\. It was founded in (\d+) and employs ([\d,]+) people\.$"
)
PERSON = re.compile(r"^(.+) is an? (\w+) who works for (.+)\. \1 was born in (\w+)\.$")


def num(s):
    return int(s.replace(",", ""))


@pytest.fixture(scope="module")
def task():
    return WorldQATask()


@pytest.fixture(scope="module")
def facts(task):
    out = {}
    for d in task.documents:
        for pattern, kind in ((CITY, "city"), (COMPANY, "company"), (PERSON, "person")):
            m = pattern.match(d.text)
            if m:
                out[m.group(1)] = (kind, m.groups()[1:], d.id)
    assert len(out) == len(task.documents)  # every document parsed
    return out


def names(s):
    return re.split(r", | and ", s)


def solve(question, facts):
    """(answer, ids of the documents read) for a world_qa question, from the documents' text alone."""
    used = []

    def get(name):
        kind, values, doc_id = facts[name]
        used.append(doc_id)
        return values

    # Most specific first: "the company that X works for" would also read as a company's name.
    rules = [
        (
            r"What is the population of the city where the company that (.+) works for is headquartered\?",
            lambda a: num(get(get(get(a)[1])[0])[1]),
        ),
        (r"In which country is the company that (.+) works for headquartered\?", lambda a: get(get(get(a)[1])[0])[0]),
        (r"In which country was (.+) born\?", lambda a: get(get(a)[2])[0]),
        (r"In what year was the company that (.+) works for founded\?", lambda a: get(get(a)[1])[1]),
        (r"In which city is the headquarters of the company (.+) works for\?", lambda a: get(get(a)[1])[0]),
        (r"What is the population of the city where (.+) is headquartered\?", lambda a: num(get(get(a)[0])[1])),
        (
            r"What is the total population of the cities where (.+) were born\?",
            lambda a: sum(num(get(get(p)[2])[1]) for p in names(a)),
        ),
        (r"How many people do (.+) employ together\?", lambda a: sum(num(get(c)[2]) for c in names(a))),
        (r"What is the total population of (.+)\?", lambda a: sum(num(get(c)[1]) for c in names(a))),
        (r"Which was founded first, (.+) or (.+)\?", lambda a, b: a if int(get(a)[1]) < int(get(b)[1]) else b),
        (
            r"Which company employs more people, (.+) or (.+)\?",
            lambda a, b: a if num(get(a)[2]) > num(get(b)[2]) else b,
        ),
        (
            r"Which city has the larger population, (.+) or (.+)\?",
            lambda a, b: a if num(get(a)[1]) > num(get(b)[1]) else b,
        ),
        (r"How many years after (.+) was (.+) founded\?", lambda a, b: int(get(b)[1]) - int(get(a)[1])),
        (r"How many more people does (.+) employ than (.+)\?", lambda a, b: num(get(a)[2]) - num(get(b)[2])),
        (r"How many more people live in (.+) than in (.+)\?", lambda a, b: num(get(a)[1]) - num(get(b)[1])),
        (r"Which company does (.+) work for\?", lambda a: get(a)[1]),
        (r"In which city was (.+) born\?", lambda a: get(a)[2]),
        (r"In what year was (.+) founded\?", lambda a: get(a)[1]),
        (r"How many people does (.+) employ\?", lambda a: num(get(a)[2])),
        (r"What is the population of (.+)\?", lambda a: num(get(a)[1])),
    ]
    for pattern, rule in rules:
        m = re.fullmatch(pattern, question)
        if m:
            return str(rule(*m.groups())), used
    raise AssertionError(f"no rule reads {question!r}")


def holds(text, answer):
    if answer.isdigit():
        return any(num(n) == int(answer) for n in re.findall(r"\d[\d,]*", text))
    return re.search(rf"\b{re.escape(answer)}\b", text) is not None


def test_every_gold_answer_is_read_from_the_documents(task, facts):
    qs = task.questions(150, split="test") + task.questions(100)
    assert {q.metadata["kind"] for q in qs} == set(KINDS)
    for q in qs:
        answer, used = solve(q.question, facts)
        assert answer == q.answer, q
        assert sorted(set(used)) == sorted(set(q.metadata["docs"])), q
        assert len(set(used)) == 1 if q.metadata["kind"] == "lookup" else len(set(used)) >= 2, q


def test_multi_hop_kinds_are_not_one_hop(task):
    texts = {d.id: d.text for d in task.documents}
    for q in task.questions(150, split="test"):
        kind = q.metadata["kind"]
        if kind == "lookup":
            continue
        assert len(set(q.metadata["docs"])) >= 2
        named = [i for i in texts if i.split(":", 1)[1] in q.question]
        assert named
        if kind == "compare":
            # The answer is named in the question; what no single document holds is both values.
            assert set(named) == set(q.metadata["docs"]) and len(named) == 2
            continue
        # Bridges: no page the question names holds the answer. Sums/differences: no page at all it needs.
        pages = named if kind == "bridge" else named + q.metadata["docs"]
        assert not any(holds(texts[i], q.answer) for i in pages), q


def test_split_sizes_balance_and_determinism(task):
    test = task.questions(150, split="test")
    train = task.questions(100)
    assert all(split_of(q.question) == "test" for q in test) and all(split_of(q.question) == "train" for q in train)
    assert not {q.id for q in test} & {q.id for q in train}
    # Kinds take turns within each split: the first 150 held-out questions are 30 of each kind.
    assert Counter(q.metadata["kind"] for q in test) == {kind: 30 for kind in KINDS}
    assert all({q.metadata["kind"] for q in train[i : i + 5]} == set(KINDS) for i in range(0, 100, 5))
    assert len(task.questions(240, split="test")) == 240
    assert [q.id for q in test] == [q.id for q in WorldQATask().questions(150, split="test")]
    other = task.questions(150, split="test", seed=1)
    assert [q.id for q in other] != [q.id for q in test]
    # The seed orders one fixed set of candidates.
    assert {q.id for q in task.questions(200, split="test", seed=1)} <= {q.id for q in task._pool(0)}
    assert load_task("world_qa").name == "world_qa"


def test_no_ties_and_distinct_birth_cities(task):
    for q in task._pool(0):
        if q.metadata["kind"] == "arithmetic":
            assert int(q.answer) > 0
        if q.metadata["template"] == "birth_population":
            cities = [d for d in q.metadata["docs"] if d.startswith("city:")]
            assert len(cities) == len(set(cities)) == len(q.metadata["entities"])


def first(task, kind, template=None):
    return next(
        q for q in task.questions(100) if q.metadata["kind"] == kind and template in (None, q.metadata["template"])
    )


def test_numbers_by_value(task):
    q = first(task, "fanout")
    n = int(q.answer)
    for good in (f"{n:,}", str(n), f"{n}.0", f"{n:,} people", f"{n} residents."):
        assert task.correct(good, q)[1], good
    for bad in (str(n + 1), f"about {n}", "", None):
        assert task.correct(bad, q) == (0.0, False), bad
    gap = first(task, "arithmetic", "founded_gap")
    assert task.correct(f"{gap.answer} years", gap)[1] and not task.correct(f"-{gap.answer}", gap)[1]


def test_names_by_normalised_exact_match(task):
    q = first(task, "lookup", "employer")
    assert task.correct(q.answer.lower() + ".", q)[1] and task.correct(f"the {q.answer}", q)[1]
    assert not task.correct(q.answer.split()[0], q)[1]


def test_compare_names_the_right_entity_and_not_the_other(task):
    q = first(task, "compare")
    a, b = compare_options(q.question)
    other = b if q.answer == a else a
    assert task.correct(q.answer, q)[1] and task.correct(f"{q.answer.upper()}.", q)[1]
    assert task.correct(f"It was {q.answer}", q)[1]
    assert not task.correct(other, q)[1]
    assert not task.correct(f"{q.answer} or {other}", q)[1]
    assert not task.correct(f"{q.answer}, not {other}", q)[1]  # names both: not a clear answer
    assert not task.correct("the first one", q)[1] and not task.correct(None, q)[1]
    # Scored as a comparison from the text alone (a question rebuilt from a trace has no metadata).
    bare = Question(id=q.id, question=q.question, answer=q.answer)
    assert task.correct(f"{q.answer} or {other}", bare)[1] is False and task.correct(q.answer, bare)[1]
    assert compare_options("What is the population of Dorford?") is None


CONTENT = "world_qa:kinds=bridge+chain+fanout+arithmetic;unseen=bridge.employer_city+chain.employer_hq_country"


def test_chain_questions_take_three_hops_and_are_read_from_the_documents(facts):
    task = load_task("world_qa:kinds=chain")
    qs = task.questions(60, split="test") + task.questions(60)
    assert {q.metadata["template"] for q in qs} == {"employer_hq_population", "employer_hq_country"}
    texts = {d.id: d.text for d in task.documents}
    for q in qs:
        answer, used = solve(q.question, facts)
        assert answer == q.answer and len(set(used)) == 3 == len(set(q.metadata["docs"])), q
        named = [i for i in texts if i.split(":", 1)[1] in q.question]
        assert not any(holds(texts[i], q.answer) for i in named), q  # the person's page alone does not answer


def test_chosen_kinds_and_the_default_pool_is_unchanged(task):
    mixed = load_task("world_qa:kinds=bridge+chain+fanout+arithmetic")
    test = mixed.questions(40, split="test")
    assert Counter(q.metadata["kind"] for q in test) == {k: 10 for k in ("bridge", "chain", "fanout", "arithmetic")}
    # `chain` has its own generator: the five default kinds' questions are what they were without it.
    assert [q.id for q in load_task("world_qa").questions(50, split="test")] == [
        q.id for q in task.questions(50, split="test")
    ]
    assert set(ALL_KINDS) - set(KINDS) == {"chain"}


def test_unseen_templates_are_never_in_the_train_split():
    task = load_task(CONTENT)
    train, test = task.questions(200), task.questions(200, split="test")
    held = {("bridge", "employer_city"), ("chain", "employer_hq_country")}
    assert not [q for q in train if (q.metadata["kind"], q.metadata["template"]) in held]
    unseen = [q for q in test if q.metadata["unseen"]]
    assert unseen and all((q.metadata["kind"], q.metadata["template"]) in held for q in unseen)
    assert all(task.split(q) == "test" for q in unseen) and all(task.split(q) == "train" for q in train)
    # A whole kind held out: none of it is trained on; a mix delegates the split to its member.
    whole = load_task("mix:world_qa:kinds=bridge+chain;unseen=chain,chain_sum")
    assert not [q for q in whole.questions(60) if q.metadata["kind"] == "chain"]
    assert all(whole.split(q) == "test" for q in whole.questions(60, split="test") if q.metadata["kind"] == "chain")


@pytest.mark.parametrize(
    "spec, words",
    [
        ("world_qa:kinds=bridge+chian", "unknown world_qa kinds ['chian']"),
        ("world_qa:kinds=bridge;unseen=chain", "unseen names nothing known: chain"),
        ("world_qa:unseen=bridge.nope", "unseen names nothing known: bridge.nope"),
        ("world_qa:holdout=chain", "bad world_qa option 'holdout=chain'"),
    ],
)
def test_bad_world_qa_specs_are_one_line_errors(spec, words):
    with pytest.raises(ConfigError) as err:
        load_task(spec)
    assert words in str(err.value) and "\n" not in str(err.value)
