"""world_qa's question kinds: one generator per kind over the search_qa world, each item with the documents
it needs. Kept apart from the task (candidate selection, splits, pool order, scoring) so either can be read and
changed alone; what they generate, and in what order, is what committed benchmark runs were drawn from.
"""

from __future__ import annotations

import random

from .search_qa import World

Item = dict  # kind, template, question, answer, entities, docs


def _join(names: list[str]) -> str:
    return " and ".join(names) if len(names) == 2 else ", ".join(names[:-1]) + f" and {names[-1]}"


def _lookups(w: World) -> list[Item]:
    out = []
    for name, p in w.people.items():
        doc = [f"person:{name}"]
        out.append(_item("lookup", "employer", f"Which company does {name} work for?", p["employer"], [name], doc))
        out.append(_item("lookup", "birth_city", f"In which city was {name} born?", p["born"], [name], doc))
    for name, c in w.companies.items():
        doc = [f"company:{name}"]
        out.append(_item("lookup", "founded", f"In what year was {name} founded?", c["founded"], [name], doc))
        out.append(_item("lookup", "employees", f"How many people does {name} employ?", c["employees"], [name], doc))
    for name, c in w.cities.items():
        q = f"What is the population of {name}?"
        out.append(_item("lookup", "population", q, c["population"], [name], [f"city:{name}"]))
    return out


def _bridges(w: World) -> list[Item]:
    # search_qa's four two-hop templates, with the documents each needs.
    out = []
    for name, p in w.people.items():
        born, employer = p["born"], p["employer"]
        company = w.companies[employer]
        via_city, via_company = [f"person:{name}", f"city:{born}"], [f"person:{name}", f"company:{employer}"]
        for template, question, answer, docs in (
            ("birth_country", f"In which country was {name} born?", w.cities[born]["country"], via_city),
            (
                "employer_founded",
                f"In what year was the company that {name} works for founded?",
                company["founded"],
                via_company,
            ),
            (
                "employer_city",
                f"In which city is the headquarters of the company {name} works for?",
                company["city"],
                via_company,
            ),
        ):
            out.append(_item("bridge", template, question, answer, [name], docs))
    for name, c in w.companies.items():
        q = f"What is the population of the city where {name} is headquartered?"
        docs = [f"company:{name}", f"city:{c['city']}"]
        out.append(_item("bridge", "hq_population", q, w.cities[c["city"]]["population"], [name], docs))
    return out


def _chains(w: World) -> list[Item]:
    # Three hops: person -> employer -> headquarters city -> a fact of that city.
    out = []
    for name, p in w.people.items():
        company = w.companies[p["employer"]]
        city = w.cities[company["city"]]
        docs = [f"person:{name}", f"company:{p['employer']}", f"city:{company['city']}"]
        for template, question, answer in (
            (
                "employer_hq_population",
                f"What is the population of the city where the company that {name} works for is headquartered?",
                city["population"],
            ),
            (
                "employer_hq_country",
                f"In which country is the company that {name} works for headquartered?",
                city["country"],
            ),
        ):
            out.append(_item("chain", template, question, answer, [name], docs))
    return out


def _fanout(w: World, rng: random.Random) -> Item:
    template = rng.choice(["birth_population", "employees", "population"])
    k = rng.choice([2, 3])
    if template == "birth_population":
        # Distinct birth cities: "the cities where A and B were born" must not double-count one city.
        people = rng.sample(sorted(w.people), k)
        cities = [w.people[p]["born"] for p in people]
        if len(set(cities)) < k:
            return {}
        total = sum(w.cities[c]["population"] for c in cities)
        q = f"What is the total population of the cities where {_join(people)} were born?"
        docs = [f"person:{p}" for p in people] + [f"city:{c}" for c in cities]
        return _item("fanout", template, q, total, people, docs)
    if template == "employees":
        names = rng.sample(sorted(w.companies), k)
        total = sum(w.companies[n]["employees"] for n in names)
        q = f"How many people do {_join(names)} employ together?"
        return _item("fanout", template, q, total, names, [f"company:{n}" for n in names])
    names = rng.sample(sorted(w.cities), k)
    total = sum(w.cities[n]["population"] for n in names)
    q = f"What is the total population of {_join(names)}?"
    return _item("fanout", template, q, total, names, [f"city:{n}" for n in names])


def _pair(w: World, rng: random.Random, kind: str) -> Item:
    template = rng.choice(["founded", "employees", "population"])
    if template == "population":
        a, b = rng.sample(sorted(w.cities), 2)
        va, vb, prefix = w.cities[a]["population"], w.cities[b]["population"], "city"
    else:
        a, b = rng.sample(sorted(w.companies), 2)
        va, vb, prefix = w.companies[a][template], w.companies[b][template], "company"
    if va == vb:
        return {}  # no ties: a comparison has one right entity, a difference is never zero
    if kind == "compare":
        first = a if va < vb else b  # the earlier founding, or (below) the larger count
        larger = a if va > vb else b
        question, answer = {
            "founded": (f"Which was founded first, {a} or {b}?", first),
            "employees": (f"Which company employs more people, {a} or {b}?", larger),
            "population": (f"Which city has the larger population, {a} or {b}?", larger),
        }[template]
        return _item(kind, template, question, answer, [a, b], [f"{prefix}:{a}", f"{prefix}:{b}"])
    # arithmetic: name the larger second (founding) or first (counts), so the answer is positive.
    lo, hi = (a, b) if va < vb else (b, a)
    if template == "founded":
        question, entities = f"How many years after {lo} was {hi} founded?", [lo, hi]
    elif template == "employees":
        question, entities = f"How many more people does {hi} employ than {lo}?", [hi, lo]
    else:
        question, entities = f"How many more people live in {hi} than in {lo}?", [hi, lo]
    docs = [f"{prefix}:{e}" for e in entities]
    return _item(kind, f"{template}_gap", question, abs(va - vb), entities, docs)


def _item(kind: str, template: str, question: str, answer: object, entities: list[str], docs: list[str]) -> Item:
    return {
        "kind": kind,
        "template": template,
        "question": question,
        "answer": str(answer),
        "entities": entities,
        "docs": docs,
    }
