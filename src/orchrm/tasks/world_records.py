"""The search_qa world as structured records: what the exact `lookup` tool reads (`Records`), beside its corpus.

Each entity kind has a fixed set of attribute names; `fact` answers one attribute of one entity named exactly
(case and spacing aside). An unknown entity, an unknown attribute, or an attribute another kind of entity has
is an `UnknownFact` that says which, so a plan that names the wrong thing fails instead of being rescued.
"""

from __future__ import annotations

from .base import UnknownFact
from .corpus import Corpus
from .search_qa import World

#: Attribute name -> the world record's field, per entity kind (as the orchestrator's prompt lists them).
ATTRIBUTES: dict[str, dict[str, str]] = {
    "person": {"employer": "employer", "birth city": "born"},
    "company": {"headquarters city": "city", "founding year": "founded", "employees": "employees"},
    "city": {"country": "country", "population": "population"},
}


def _key(name: str) -> str:
    return " ".join(name.split()).casefold()


class WorldRecords:
    """A world's facts by entity and attribute, and its corpus's BM25 search (so it serves as a task's corpus)."""

    def __init__(self, world: World, corpus: Corpus) -> None:
        self.corpus = corpus
        tables = {"person": world.people, "company": world.companies, "city": world.cities}
        self._entities = {_key(name): (kind, name, row) for kind, rows in tables.items() for name, row in rows.items()}

    def search(self, query: str, k: int) -> list[tuple[str, str]]:
        return self.corpus.search(query, k)

    def fact(self, entity: str, attribute: str) -> str:
        found = self._entities.get(_key(entity))
        if found is None:
            raise UnknownFact(f"no entity named {entity[:80]!r} in the records")
        kind, name, row = found
        field = ATTRIBUTES[kind].get(_key(attribute))
        if field is None:
            known = ", ".join(ATTRIBUTES[kind])
            raise UnknownFact(f"{name} is a {kind}; its attributes are {known} (not {attribute[:40]!r})")
        return str(row[field])
