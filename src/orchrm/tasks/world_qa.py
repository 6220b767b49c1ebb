"""world_qa: a pool of question kinds over the search_qa world, where the right plan depends on the question.

Five kinds by default, each in `metadata["kind"]` so results can be broken down by kind:
- `lookup`: one fact of one named entity (one search);
- `bridge`: two hops, like search_qa's (a person's employer, then its founding year);
- `fanout`: the same fact for 2-3 entities, then a sum (parallel searches, then arithmetic);
- `compare`: which of two entities has the larger/earlier value (answer: an entity name, never a tie);
- `arithmetic`: the difference of two retrieved numbers.
A sixth, `chain` (three hops: a person's employer, its headquarters city, then that city's population or
country), is chosen by name: `world_qa:kinds=bridge+chain+fanout+arithmetic`. The names are invented, so
nothing is answerable closed-book. Every multi-hop question is checked to need more than one document: no
single document it names or needs holds its answer. The candidate questions are fixed by the world seed; the
pool's order (kinds interleaved) by the question seed.

`tools=exact` is the positive control where content decides: the orchestrator is offered only the exact tools
(`lookup` reads one fact from the world's records, `calc` computes), so a plan's outcome is a deterministic
function of what it says; all six kinds are in its pool unless `kinds=` names others
(`world_qa:tools=exact;unseen=chain`).

`unseen=NAME+NAME` holds templates out of training: each NAME is a kind (all its templates) or
`kind.template`; their questions are all in the test split, marked `metadata["unseen"]`, so a model trained
on the train split never saw them (`world_qa:kinds=bridge+chain;unseen=bridge.employer_city+chain`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator

from ..errors import ConfigError
from .base import Question, Split, Task, short_hash, split_of
from .corpus import Corpus, Document
from .scoring import (
    exact_match,
    normalize_text,
    numeric_match,
    parse_number,
    result_matches,
    states_result,
)
from .search_qa import World, build_world, world_documents

# The question-kind generators moved to world_qa_kinds; the `as` imports re-export them so code written
# against this module still imports them from here.
from .world_qa_kinds import Item as Item
from .world_qa_kinds import _bridges as _bridges
from .world_qa_kinds import _chains as _chains
from .world_qa_kinds import _fanout as _fanout
from .world_qa_kinds import _item as _item
from .world_qa_kinds import _join as _join
from .world_qa_kinds import _lookups as _lookups
from .world_qa_kinds import _pair as _pair
from .world_records import WorldRecords

#: The default pool's kinds. `chain` is asked for by name, so the default pool (and every committed run drawn
#: from it) keeps its questions.
KINDS = ("lookup", "bridge", "fanout", "compare", "arithmetic")
ALL_KINDS = (*KINDS, "chain")
#: `tools=NAME`: the agent types its orchestrator is offered.
TOOL_PRESETS: dict[str, tuple[str, ...]] = {"exact": ("lookup", "calc")}
#: Candidates per kind: about a fifth of each kind's 300 (by question hash) is held out, so the test split
#: holds about 60 of each kind and its first 250 questions are balanced.
PER_KIND = 300

# The compare templates, recognised from the question text alone so a replayed trace (which keeps no
# metadata) is still scored as a comparison.
_COMPARE = re.compile(
    r"^Which (?:was founded first|city has the larger population|company employs more people), (.+) or (.+)\?$"
)
# A number followed by its unit ("12 years") is still that number.
_UNITS = re.compile(r"\s+(?:years?|people|persons|employees|residents|inhabitants)\.?$", re.IGNORECASE)
_NUMBER_IN_TEXT = re.compile(r"\d[\d,]*")


def _sampled(make: Callable[[], Item], n: int, keep: Callable[[Item], bool]) -> list[Item]:
    out: dict[str, Item] = {}
    for _ in range(n * 50):
        item = make()
        if item and item["question"] not in out and keep(item):
            out[item["question"]] = item
            if len(out) == n:
                break
    return list(out.values())


def candidates(
    world: World, texts: dict[str, str], world_seed: int = 0, per_kind: int = PER_KIND
) -> dict[str, list[Item]]:
    """Each kind's candidate questions (at most `per_kind`), fixed by the world and its seed."""
    rng = random.Random(f"world_qa-candidates-{world_seed}")

    def keep(item: Item) -> bool:
        return item["kind"] == "lookup" or not answer_in_one_document(item, texts)

    lookups, bridges = _lookups(world), [b for b in _bridges(world) if keep(b)]
    out = {
        "lookup": rng.sample(lookups, min(per_kind, len(lookups))),
        "bridge": rng.sample(bridges, min(per_kind, len(bridges))),
        "fanout": _sampled(lambda: _fanout(world, rng), per_kind, keep),
        "compare": _sampled(lambda: _pair(world, rng, "compare"), per_kind, keep),
        "arithmetic": _sampled(lambda: _pair(world, rng, "arithmetic"), per_kind, keep),
    }
    # Its own generator, after the others: adding `chain` leaves the five default kinds' candidates as they were.
    chains = [c for c in _chains(world) if keep(c)]
    out["chain"] = random.Random(f"world_qa-chain-{world_seed}").sample(chains, min(per_kind, len(chains)))
    return out


def answer_in_one_document(item: Item, texts: dict[str, str]) -> bool:
    """Whether one document holds the answer of a multi-hop question (a one-hop shortcut): for a bridge or a
    chain, a document it names (its second hop holds the answer by design); for a sum or difference, any document
    it names or needs. A comparison's answer is a name it states itself; what it needs is both values, so
    it is one-hop only if both live in one document."""
    if item["kind"] == "compare":
        return len(set(item["docs"])) < 2
    named = [f"{kind}:{name}" for name in item["entities"] for kind in ("person", "company", "city")]
    hops = item["kind"] in ("bridge", "chain")  # the last hop holds the answer by design
    ids = {i for i in [*named, *([] if hops else item["docs"])] if i in texts}
    answer = item["answer"]
    for i in ids:
        if answer.isdigit():
            # By value, not substring: "12" is in "1912" but no document states the number 12 there.
            if any(int(m.replace(",", "")) == int(answer) for m in _NUMBER_IN_TEXT.findall(texts[i])):
                return True
        elif re.search(rf"\b{re.escape(answer)}\b", texts[i]):
            return True
    return False


class WorldQATask(Task):
    name = "world_qa"
    domain = "retrieval QA over a document collection (lookups, bridges, fan-outs, comparisons, arithmetic)"

    def __init__(
        self,
        world_seed: int = 0,
        kinds: tuple[str, ...] = KINDS,
        unseen: tuple[str, ...] = (),
        tools: str | None = None,
    ) -> None:
        self.world = build_world(world_seed)
        self.documents: list[Document] = world_documents(self.world)
        self.corpus: Corpus | WorldRecords = Corpus(self.documents)
        texts = {d.id: d.text for d in self.documents}
        self.candidates = candidates(self.world, texts, world_seed)
        if tools is not None:
            if tools not in TOOL_PRESETS:
                raise ConfigError(f"unknown world_qa tools {tools!r}", hint=f"use tools={'|'.join(TOOL_PRESETS)}")
            self.corpus = WorldRecords(self.world, self.corpus)
            self.agent_types = TOOL_PRESETS[tools]
            self.domain = "exact tools over structured records (lookups, arithmetic, comparisons)"
            # "the cities where A, B and C were born" needs 5-7 tool agents, above the plan schema's 4.
            self.candidates["fanout"] = [i for i in self.candidates["fanout"] if i["template"] != "birth_population"]
        self.kinds = _known_kinds(kinds)
        self.unseen = _unseen_templates(unseen, {k: self.candidates[k] for k in self.kinds})

    def _held_out(self, item: Item) -> bool:
        return item["kind"] in self.unseen or f"{item['kind']}.{item['template']}" in self.unseen

    def _split_of_item(self, item: Item) -> Split:
        return "test" if self._held_out(item) else split_of(item["question"])

    def split(self, question: Question) -> Split:
        kind, template = question.metadata.get("kind"), question.metadata.get("template")
        if kind is not None and template is not None:
            return self._split_of_item({"kind": kind, "template": template, "question": question.question})
        return split_of(question.question)

    def _pool(self, seed: int) -> Iterator[Question]:
        rng = random.Random(f"world_qa-questions-{seed}")
        lists = {kind: rng.sample(items, len(items)) for kind, items in self.candidates.items()}
        # Stratified interleave within each split (one of each kind in turn), so the first n questions of
        # either split are balanced by kind whatever each kind's share of the split; the two splits' turns
        # are then merged in proportion.
        turns = {
            split: _round_robin([[i for i in lists[k] if self._split_of_item(i) == split] for k in self.kinds])
            for split in ("test", "train")
        }
        merged = sorted(
            ((n / len(seq), split, item) for split, seq in turns.items() for n, item in enumerate(seq)),
            key=lambda t: (t[0], t[1]),
        )
        for _, _, item in merged:
            yield Question(
                id=f"world_qa-{short_hash(item['question'])}",
                question=item["question"],
                answer=item["answer"],
                metadata={k: item[k] for k in ("kind", "template", "entities", "docs")}
                | ({"unseen": self._held_out(item)} if self.unseen else {}),
            )

    def score(self, prediction: str | None, question: Question) -> float:
        if prediction is None or not prediction.strip():
            return 0.0
        options = compare_options(question.question)
        if options is not None:
            return 1.0 if names_only(prediction, question.answer, options) else 0.0
        text = _UNITS.sub("", prediction.strip())
        number = numeric_match(text, question.answer)
        if number is not None:
            return float(number)
        # "94,100 - 38,900 = 55,200": a computation's stated result decides. Only after "=" or "equals": a hedge ("about
        # 61,000") stays wrong, which plain extraction from text would forgive.
        if states_result(text) and parse_number(question.answer) is not None:
            return 1.0 if result_matches(text, question.answer) or exact_match(prediction, question.answer) else 0.0
        return 1.0 if exact_match(prediction, question.answer) else 0.0


def parse_world_qa(spec: str) -> WorldQATask:
    """`world_qa` or `world_qa:kinds=A+B;unseen=C+D.t;tools=exact` (any option alone) -> the task."""
    options: dict[str, tuple[str, ...]] = {}
    for part in filter(None, spec.removeprefix("world_qa").removeprefix(":").split(";")):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in ("kinds", "unseen", "tools"):
            raise ConfigError(
                f"bad world_qa option {part!r}", hint="world_qa:kinds=bridge+chain;unseen=chain;tools=exact"
            )
        options[key.strip()] = tuple(v.strip() for v in value.split("+") if v.strip())
    tools = "+".join(options["tools"]) if "tools" in options else None
    kinds = options.get("kinds", ALL_KINDS if tools else KINDS)
    return WorldQATask(kinds=kinds, unseen=options.get("unseen", ()), tools=tools)


def _known_kinds(kinds: tuple[str, ...]) -> tuple[str, ...]:
    unknown = [k for k in kinds if k not in ALL_KINDS]
    if unknown or not kinds:
        raise ConfigError(f"unknown world_qa kinds {unknown or '(none given)'}", hint=f"use {'+'.join(ALL_KINDS)}")
    return tuple(dict.fromkeys(kinds))


def _unseen_templates(names: tuple[str, ...], pools: dict[str, list[Item]]) -> frozenset[str]:
    """The held-out names, each a kind of the pool or one of its `kind.template`s; anything else is an error."""
    known = set(pools) | {f"{i['kind']}.{i['template']}" for items in pools.values() for i in items}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(
            f"unseen names nothing known: {', '.join(unknown)}",
            hint=f"use a kind or kind.template of: {', '.join(sorted(known))}",
        )
    return frozenset(names)


def _round_robin(lists: list[list[Item]]) -> list[Item]:
    return [lst[i] for i in range(max(map(len, lists))) for lst in lists if i < len(lst)]


def compare_options(question: str) -> tuple[str, str] | None:
    """The two entities a comparison question names, or None when it is not a comparison."""
    m = _COMPARE.match(question)
    return (m.group(1), m.group(2)) if m else None


def names_only(prediction: str, answer: str, options: tuple[str, str]) -> bool:
    """The prediction names the right entity (as whole words, normalised) and not the other one."""
    text = f" {normalize_text(prediction)} "
    other = options[1] if normalize_text(options[0]) == normalize_text(answer) else options[0]
    return f" {normalize_text(answer)} " in text and f" {normalize_text(other)} " not in text
