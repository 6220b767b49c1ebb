"""Type-contrast pairs: one question's wording with entities of another kind, the plan whose lookups fit them
over the plan whose lookups do not (issue #47, a pair source tried after reading why the RM misses).

The positive control's RMs take a lookup's attribute from the question's wording: the held-out "How many more
people live in X than in Y?" gets `employees of X`, since every "how many more people" question in training is
about companies. Nothing in training shows one wording with entities of both kinds. This makes that text from
the training plans themselves, labelled by execution alone: a correct tool plan's question and plan get each
question entity replaced by a name of the other kind (company <-> city, consistently, seeded); the swapped plan,
attributes kept, fails on the records (`employees of Kaeford`: a city has no employees), and the same plan with
each failing attribute replaced by the one attribute of the new kind with the same kind of value (a number or a
name) executes. The pair is (executes, fails) under the edited question; the edited question may read oddly
("How many people do Kaeford and Drastead employ together?"), and the label says only that a plan whose lookups
fit its entities beats one whose lookups cannot run. Swaps with no single counterpart (a city's population ->
a company's employees or founding year) are skipped, not guessed.

    from kind_contrast import kind_contrast_pairs   # bench/content_variants.py's `content-kind` variant
"""

from __future__ import annotations

import asyncio
import random
import re
from typing import Any

from orchrm.mas import execute_plan
from orchrm.pairs import RENDER_VERSION, PairRow, render_plan, render_question

#: The attributes the lookup tool knows for a company and a city, by the kind of value they hold (the bench's own
#: copy of the records' table: the table itself is internal to orchrm).
ATTRIBUTES: dict[str, dict[str, tuple[str, ...]]] = {
    "company": {"number": ("employees", "founding year"), "name": ("headquarters city",)},
    "city": {"number": ("population",), "name": ("country",)},
}
KINDS = ("company", "city")
_LOOKUP = re.compile(r"^\s*(?P<attribute>.+?)\s+of\s+(?P<entity>.+?)\s*$", re.DOTALL)


def _word(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)")


def _counterpart(attribute: str, kind: str) -> str | None:
    """The one attribute of `kind` holding the same kind of value as `attribute` (of the other kind), else None."""
    other = next(k for k in KINDS if k != kind)
    value = next((v for v, names in ATTRIBUTES[other].items() if attribute in names), None)
    names = ATTRIBUTES[kind].get(value, ()) if value else ()
    return names[0] if len(names) == 1 else None


def kind_contrast_pairs(
    traces: list[Any], world: Any, records: Any, questions: set[str], render_version: int = RENDER_VERSION
) -> list[PairRow]:
    """The type-contrast pairs of the correct tool plans among `traces` whose question is in `questions`, their
    plans in rendering `render_version`."""
    names = {"company": sorted(world.companies), "city": sorted(world.cities)}
    kind_of = {n: k for k, ns in names.items() for n in ns}
    return asyncio.run(_pairs(traces, names, kind_of, records, questions, render_version))


async def _pairs(
    traces: list[Any],
    names: dict[str, list[str]],
    kind_of: dict[str, str],
    records: Any,
    questions: set[str],
    render_version: int,
) -> list[PairRow]:
    rows = []
    for t in traces:
        plan = t.plan
        if t.question_id not in questions or plan is None or not (t.score and t.score.correct):
            continue
        if any(a.type not in ("lookup", "calc") for a in plan.agents):
            continue  # a plan with LLM agents would need a model to execute; tool plans run on the records alone
        own = [n for n in kind_of if _word(n).search(t.question)]
        if not own or len({kind_of[n] for n in own}) != 1:
            continue
        new_kind = next(k for k in KINDS if k != kind_of[own[0]])
        swap = dict(zip(own, random.Random(f"{t.question_id}:{t.plan_index}").sample(names[new_kind], len(own))))

        def swapped(text: str, swap: dict[str, str] = swap) -> str:
            for old, new in swap.items():
                text = _word(old).sub(new, text)
            return text

        question = swapped(t.question)
        wrong = plan.model_copy(
            update={"agents": [a.model_copy(update={"input": swapped(a.input)}) for a in plan.agents]}
        )
        right = _fitted(wrong, kind_of)
        if right is None:
            continue
        # tool plans make no model call, so no model is passed (one that tried would fail, not fake an answer)
        bad = await execute_plan(wrong, question, None, retriever=records)  # type: ignore[arg-type]
        good = await execute_plan(right, question, None, retriever=records)  # type: ignore[arg-type]
        if not bad.errors or good.errors or good.final_answer is None:
            continue
        rows.append(
            PairRow(
                prompt=render_question(question),
                chosen=render_plan(right, version=render_version),
                rejected=render_plan(wrong, version=render_version),
                source="counterfactual",
                question_id=t.question_id,
                task=t.task,
                metadata={"edit": "kind-contrast", "swap": swap, "plan_indices": [t.plan_index, t.plan_index]},
            )
        )
    return rows


def _fitted(plan: Any, kind_of: dict[str, str]) -> Any | None:
    """`plan` with each lookup's attribute that its entity's kind lacks replaced by that kind's counterpart; None
    when one has no single counterpart or nothing needed replacing."""
    agents, changed = [], False
    for a in plan.agents:
        m = _LOOKUP.match(a.input.strip().rstrip(".?"))
        if a.type == "lookup" and m and m["entity"].strip() in kind_of:
            attribute, kind = " ".join(m["attribute"].split()).lower(), kind_of[m["entity"].strip()]
            if not any(attribute in v for v in ATTRIBUTES[kind].values()):
                new = _counterpart(attribute, kind)
                if new is None:
                    return None
                a = a.model_copy(update={"input": f"{new} of {m['entity'].strip()}"})
                changed = True
        agents.append(a)
    return plan.model_copy(update={"agents": agents}) if changed else None
