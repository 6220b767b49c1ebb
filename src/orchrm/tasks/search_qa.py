"""search_qa: multi-hop questions over a generated world of fictional people, companies and cities.

Every fact lives in one document of the task's own corpus, and every question needs facts from two
documents (a bridge entity, then its attribute), so no model can answer it closed-book: the names are
invented. World and questions are deterministic in their seeds.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from .. import safejson
from .base import Question, Task, short_hash
from .corpus import Corpus, Document
from .scoring import exact_match, numeric_match

_ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "gl", "kr", "st", "th"]
_VOWELS = ["a", "e", "i", "o", "u", "ae", "io", "ou"]
_CODAS = ["", "n", "r", "l", "s", "th", "m", "x", "nd", "rk"]
_CITY_ENDS = ["ford", "bury", "haven", "mere", "wick", "stead", "port", "vale"]
_COMPANY_ENDS = ["Works", "Labs", "Foundry", "Holdings", "Textiles", "Robotics", "Mills", "Shipping"]
_JOBS = ["engineer", "chemist", "architect", "accountant", "pilot", "teacher", "designer", "surgeon"]


def _word(rng: random.Random, syllables: int) -> str:
    return "".join(
        rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables)
    ).capitalize()


@dataclass
class World:
    countries: list[str]
    cities: dict[str, dict]
    companies: dict[str, dict]
    people: dict[str, dict]


# Sized for at least 100 held-out questions: 3 per person and 1 per company, about a fifth of them in the test
# split (the first, smaller world fell well short of that).
def build_world(
    seed: int = 0, n_people: int = 200, n_companies: int = 64, n_cities: int = 40, n_countries: int = 8
) -> World:
    rng = random.Random(f"search_qa-world-{seed}")
    used: set[str] = set()

    def unique(make) -> str:  # noqa: ANN001
        while True:
            name = make()
            if name not in used:
                used.add(name)
                return name

    countries = [unique(lambda: _word(rng, 2) + "ia") for _ in range(n_countries)]
    cities = {
        unique(lambda: _word(rng, 1) + rng.choice(_CITY_ENDS)): {
            "country": rng.choice(countries),
            "population": rng.randrange(12, 950) * 100,
        }
        for _ in range(n_cities)
    }
    city_names = list(cities)
    companies = {
        unique(lambda: f"{_word(rng, 2)} {rng.choice(_COMPANY_ENDS)}"): {
            "city": rng.choice(city_names),
            "founded": rng.randrange(1890, 2015),
            "employees": rng.randrange(40, 9000),
        }
        for _ in range(n_companies)
    }
    company_names = list(companies)
    people = {
        unique(lambda: f"{_word(rng, 2)} {_word(rng, 2)}"): {
            "born": rng.choice(city_names),
            "employer": rng.choice(company_names),
            "job": rng.choice(_JOBS),
        }
        for _ in range(n_people)
    }
    return World(countries, cities, companies, people)


def world_documents(world: World) -> list[Document]:
    docs = [
        Document(
            id=f"city:{name}",
            text=f"{name} is a city in {c['country']}. {name} has a population of {c['population']:,}.",
        )
        for name, c in world.cities.items()
    ]
    docs += [
        Document(
            id=f"company:{name}",
            text=f"{name} is a company headquartered in {c['city']}. It was founded in {c['founded']} "
            f"and employs {c['employees']:,} people.",
        )
        for name, c in world.companies.items()
    ]
    docs += [
        Document(
            id=f"person:{name}",
            text=f"{name} is {_article(p['job'])} who works for {p['employer']}. {name} was born in {p['born']}.",
        )
        for name, p in world.people.items()
    ]
    return docs


def _questions(world: World) -> list[tuple[str, str, str]]:
    """(kind, question, answer) for every multi-hop question the world supports."""
    out: list[tuple[str, str, str]] = []
    for name, p in world.people.items():
        out.append(("birth_country", f"In which country was {name} born?", world.cities[p["born"]]["country"]))
        company = world.companies[p["employer"]]
        out.append(
            (
                "employer_founded",
                f"In what year was the company that {name} works for founded?",
                str(company["founded"]),
            )
        )
        out.append(
            ("employer_city", f"In which city is the headquarters of the company {name} works for?", company["city"])
        )
    for name, c in world.companies.items():
        city = world.cities[c["city"]]
        out.append(
            (
                "hq_population",
                f"What is the population of the city where {name} is headquartered?",
                str(city["population"]),
            )
        )
    return out


class SearchQATask(Task):
    name = "search_qa"
    domain = "retrieval QA over a document collection"

    def __init__(self, world_seed: int = 0) -> None:
        self.world = build_world(world_seed)
        self.documents = world_documents(self.world)
        self.corpus = Corpus(self.documents)

    def _pool(self, seed: int) -> Iterator[Question]:
        items = _questions(self.world)
        random.Random(f"search_qa-questions-{seed}").shuffle(items)
        docs = {d.id.split(":", 1)[1]: d.text for d in self.documents}
        for kind, question, answer in items:
            if _one_hop(question, answer, docs):
                continue  # by coincidence the named entity's own page holds the answer: not multi-hop
            yield Question(
                id=f"search_qa-{short_hash(question)}", question=question, answer=answer, metadata={"kind": kind}
            )

    def score(self, prediction: str | None, question: Question) -> float:
        if prediction is None:
            return 0.0
        number = numeric_match(prediction, question.answer)
        if number is not None:
            return float(number)
        return 1.0 if exact_match(prediction, question.answer) else 0.0


def answer_forms(answer: str) -> set[str]:
    number = safejson.bounded_int(answer, high=10**100)
    return {answer, f"{number:,}"} if number is not None else {answer}


def _one_hop(question: str, answer: str, docs: dict[str, str]) -> bool:
    named = [text for name, text in docs.items() if name in question]
    return any(form in text for text in named for form in answer_forms(answer))


def _article(noun: str) -> str:
    return ("an " if noun[0] in "aeiou" else "a ") + noun
