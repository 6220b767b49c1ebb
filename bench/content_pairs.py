"""What differs between two plans of one shape when one is right and one wrong? The committed run's same-shape
pairs, each put in one class by a fixed rule list, under the committed grades and under today's scorers.

    .venv/bin/python bench/content_pairs.py

A same-shape pair is `orchrm.bon.content.same_shape_pairs` on the run's held-out cases (all pairs, copies of the
prompt's worked examples included): a right and a wrong plan of one question whose `plan_shape` is the same.
Each pair is compared as the orchestrator wrote it, agent ids renamed by topological order and whitespace
collapsed, and takes the first class whose rule holds (`RULES` holds every rule's text, written to the result):

- `equal plan`: the same plan; only the sub-agents' sampling can have made the difference;
- `options only`: the same texts and edges, different agent options (samples, rounds, steps, top_k);
- `content: ...`: the texts differ; which rule first holds says how (`classify`).

Values are numbers (commas dropped) and capitalised words found at least once inside a sentence (not opening it;
instruction words like "Answer" left out); "the gold" is the gold answer's own values. The held-out traces are re-graded
by today's task scorers (`regrade.py`, no LLM call), the plans that flip listed, and the pairs classified again.
Writes bench/results/content_pairs.json; prints a table and a few examples of each class.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from files import write_text_atomic
from orchrm import Plan, Trace, read_traces
from orchrm.bon import build_cases, copies_examples, read_per_question, same_shape_pairs
from orchrm.loop import LOOP_FILE, read_loop_config
from orchrm.mas import first_plans, locate_traces, run_questions, topological_order
from orchrm.tasks import load_task
from regrade import regrade
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

RUN = Path(__file__).parent / "results" / "orchestration" / "mix_world_qa+chain_sum"
OUT = Path(__file__).parent / "results" / "content_pairs.json"
COMMAND = ".venv/bin/python bench/content_pairs.py"

EQUAL, OPTIONS = "equal plan", "options only"
RULES: dict[str, str] = {
    EQUAL: "the plans are the same after renaming agent ids and collapsing whitespace: texts, edges and options",
    OPTIONS: "the same texts and edges; only agent options differ",
    "content: copies a worked example": "the wrong plan's inputs hold a worked example's entity or number the "
    "question does not (`orchrm.bon.content.copies_examples`) and the right plan's do not",
    "content: states a wrong number": "the gold is a number and the wrong plan holds a number that neither the "
    "question, the right plan nor the gold holds (a wrong stated sum or result)",
    "content: states another value": "the wrong plan holds a value that neither the question, the right plan nor "
    "the gold holds (an invented fact, another entity, another year)",
    "content: asks a number question for a name": "the gold is a number and the wrong plan says 'its name' (the "
    "worked examples' 'Answer with its name.') where the right plan does not",
    "content: leaves out a value of the question": "a value that the question and the right plan hold is missing "
    "from the wrong plan",
    "content: right plan states more": "the right plan holds a value that neither the question nor the wrong plan "
    "holds (the answer itself, or facts it supplied)",
    "content: other signs": "both plans write sums over the same values and their signed terms differ "
    "(920 + 923 - 998 against 920 - 923 + 998; 5 + 1 and 1 + 5 are the same)",
    "content: asks about another attribute": "the plans differ in which of the world's attributes they name "
    "(city, country, year, founded, born, population, people, employ, company, headquarters, work)",
    "content: same values, other wording": "none of the above: the same values and attributes, worded otherwise "
    "(a paraphrase, a claim added, an instruction dropped)",
}
CONTENT = [k for k in RULES if k.startswith("content:")]
# Which scorers graded each committed run (traces hold no scorer version; from `git log` of the run folders and of
# src/orchrm/tasks): stated results ("825 - 515 = 310", "5 + 0 equals 5") are graded since 306b334 and c031610
# (2026-11-24 21:57-21:59 UTC), the last change to grading; every committed run was written before them.
GRADED_WITH = {
    "orchestration/mix_world_qa+chain_sum": "the scorers before 306b334: traces committed aa1614f..90325ea "
    "(2026-11-23 11:21 to 2026-11-24 01:00 UTC)",
    "tts/chain_sum": "the scorers before 306b334: traces committed 4a98bc1..662d53a (2026-11-22)",
    "tts/search_qa": "the scorers before 306b334: traces committed 7a29f06..82ea329 (2026-11-22)",
    "today": "the scorers since c031610 (stated results graded); `regrade.py` applies them in memory",
}

_NUMBER = re.compile(r"\d+(?:[,.]\d+)*")
_WORD = re.compile(r"\b[A-Z][a-z]+\b")
# Capitalised instruction words a plan writes mid-sentence ("6 + 1 Answer with its name."): never a value.
_NOT_VALUES = {"Answer", "Which", "What", "Who", "Where", "When", "How", "In", "The", "Add", "Compute", "State", "Sum"}
_OPENER = re.compile(r"(?:^|[.?!:]\s+)$")
_SUM = re.compile(r"-?\d+(?:\s*[-+]\s*\d+)+")
_TERM = re.compile(r"([-+]?)\s*(\d+)")
_ATTRIBUTE = re.compile(r"\b(city|countr|year|found|born|population|people|employ|compan|headquarter|work)", re.I)


def values(text: str) -> set[str]:
    """Numbers (commas dropped) and capitalised words that do not only open sentences."""
    text = re.sub(r"\$\{[^}]*\}", "", text)  # references are not values
    mid = {m.group() for m in _WORD.finditer(text) if not _OPENER.search(text[: m.start()])} - _NOT_VALUES
    return {n.replace(",", "") for n in _NUMBER.findall(text)} | mid


def sums(text: str) -> set[frozenset[tuple[str, int]]]:
    """Each sum the text writes ("6 + 1 - 2") as its signed terms, counted: order does not matter."""
    out = set()
    for m in _SUM.finditer(text):
        terms = Counter(("-" if sign == "-" else "+", n) for sign, n in _TERM.findall(m.group()))
        out.add(frozenset(terms.items()))
    return out


def canonical(plan: Plan) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[str], str]:
    """(type, input) per agent, edges and options, with ids renamed by topological order; the answer field."""
    order = topological_order(plan, cycles="append")
    name = {a: f"n{i}" for i, a in enumerate(dict.fromkeys(order))}
    rename = lambda s: re.sub(r"\$\{([^}]+)\}", lambda m: "${" + name.get(m[1], m[1]) + "}", s)  # noqa: E731
    agents = sorted(plan.agents, key=lambda a: order.index(a.id))
    texts = [(a.type, rename(" ".join(a.input.split()))) for a in agents]
    edges = sorted((name.get(e.src, e.src), name.get(e.dst, e.dst)) for e in plan.edges)
    options = [json.dumps(a.options, sort_keys=True) for a in agents]
    return texts, edges, options, " ".join((plan.answer or "").split())


def classify(question: str, gold: str | None, right: Plan, wrong: Plan) -> str:
    """The first class of `RULES` whose rule holds for this (right, wrong) pair of one question."""
    (rt, re_, ro, ra), (wt, we, wo, wa) = canonical(right), canonical(wrong)
    if (rt, re_, ra) == (wt, we, wa):
        return EQUAL if ro == wo else OPTIONS
    r_text, w_text = "\n".join(t for _, t in rt), "\n".join(t for _, t in wt)
    q, r, w, g = values(question), values(r_text), values(w_text), values(gold or "")
    if copies_examples([w_text], question) and not copies_examples([r_text], question):
        return "content: copies a worked example"
    numeric = bool(gold and _NUMBER.fullmatch(gold.strip().lstrip("-")))
    if extra := w - q - r - g:
        return (
            "content: states a wrong number"
            if numeric and any(_NUMBER.fullmatch(v) for v in extra)
            else ("content: states another value")
        )
    if numeric and "its name" in w_text and "its name" not in r_text:
        return "content: asks a number question for a name"
    if (q & r) - w:
        return "content: leaves out a value of the question"
    if r - q - w:
        return "content: right plan states more"
    if (r_sums := sums(r_text)) and (w_sums := sums(w_text)) and r_sums != w_sums:
        return "content: other signs"
    if {m.lower() for m in _ATTRIBUTE.findall(r_text)} != {m.lower() for m in _ATTRIBUTE.findall(w_text)}:
        return "content: asks about another attribute"
    return "content: same values, other wording"


def pairs(held: list[Trace], qids: list[str], n: int) -> list[tuple[Trace, Trace]]:
    """The (right, wrong) same-shape pairs of the run's first N plans per question, as `orchrm.bon.content` counts
    them (`clean=False`: copies of the worked examples included)."""
    grouped = first_plans(held, qids, n)
    by_key = {t.key: t for plans in grouped.values() for t in plans}
    cases = build_cases(grouped, {q: [0.0] * len(g) for q, g in grouped.items()}, {})
    return [
        (by_key[(c.question_id, r.index)], by_key[(c.question_id, w.index)])
        for c in cases
        for r, w in same_shape_pairs(c, clean=False)
    ]


def pair_id(r: Trace, w: Trace) -> str:
    return f"{r.question_id}:p{r.plan_index}>p{w.plan_index}"


def example(r: Trace, w: Trace) -> dict[str, Any]:
    inputs = lambda t: [f"{a.type}{a.options or ''}: {a.input}" for a in t.plan.agents]  # noqa: E731
    return {
        "pair": pair_id(r, w),
        "question": r.question,
        "gold": r.gold,
        "right": {"inputs": inputs(r), "answer": r.final_answer},
        "wrong": {"inputs": inputs(w), "answer": w.final_answer},
    }


def spread(found: list[tuple[Trace, Trace]], k: int) -> list[tuple[Trace, Trace]]:
    """Up to k pairs, the first of each question before a second of any, so examples span questions."""
    rank = Counter[str]()
    keyed = []
    for i, (r, w) in enumerate(found):
        rank[r.question_id] += 1
        keyed.append((rank[r.question_id], i, (r, w)))
    return [p for *_, p in sorted(keyed, key=lambda x: x[:2])[:k]]


def tally(found: list[tuple[Trace, Trace]], examples: int) -> dict[str, Any]:
    """Counts per class (pairs, questions, distinct wrong plans), every pair id, and the first few examples."""
    by_class: dict[str, list[tuple[Trace, Trace]]] = defaultdict(list)
    for r, w in found:
        by_class[classify(r.question, r.gold, r.plan, w.plan)].append((r, w))
    classes = {
        k: {
            "pairs": len(ps := by_class.get(k, [])),
            "questions": len({r.question_id for r, _ in ps}),
            "wrong_plans": len({w.key for _, w in ps}),
            "pair_ids": [pair_id(r, w) for r, w in ps],
            "examples": [example(r, w) for r, w in spread(ps, examples)],
        }
        for k in RULES
    }
    content = [p for k in CONTENT for p in by_class.get(k, [])]
    return {
        "pairs": len(found),
        "questions": len({r.question_id for r, _ in found}),
        "classes": classes,
        "content": {"pairs": len(content), "questions": len({r.question_id for r, _ in content})},
        "wrong_answer_holds_gold": sum(holds_gold(w) for _, w in found),
    }


def holds_gold(t: Trace) -> bool:
    """Whether the answer holds the gold as a whole word or number ('Fagul Works employs more people than ...')."""
    return bool(t.gold and re.search(rf"(?<![\w,.]){re.escape(t.gold)}(?![\w]|[,.]\d)", t.final_answer or ""))


def flipped(old: list[Trace], new: list[Trace]) -> list[dict[str, Any]]:
    """The plans whose grade today's scorers change (`regrade` keeps the traces' order)."""
    return [
        {
            "plan": f"{a.question_id}:p{a.plan_index}",
            "split": a.split,
            "answer": a.final_answer,
            "gold": a.gold,
            "committed": a.score.correct,
            "today": b.score.correct,
        }
        for a, b in zip(old, new, strict=True)
        if a.score and b.score and a.score.correct != b.score.correct
    ]


def measure(folder: Path, examples: int) -> dict[str, Any]:
    config = read_loop_config(folder)
    rows = read_per_question(folder / "bon")
    qids = [r["question_id"] for r in rows]
    held = read_traces(locate_traces(folder / "bon" / "heldout"))
    train = read_traces(locate_traces(folder / "train"))
    task = load_task(config.task)
    today = regrade(held, task, run_questions(task, config.test_questions, "test", config.seed)).traces
    train_today = regrade(train, task, run_questions(task, config.train_questions, "train", config.seed)).traces
    return {
        "run": str(folder.relative_to(Path(__file__).parent.parent)),
        "task": config.task,
        "n": config.n_plans,
        "committed": tally(pairs(held, qids, config.n_plans), examples),
        "today": tally(pairs(today, qids, config.n_plans), examples),
        "heldout_flips": flipped(held, today),
        "train_flips": flipped(train, train_today),
    }


def show(label: str, t: dict[str, Any]) -> str:
    lines = [
        f"{label}: {t['pairs']} same-shape pairs on {t['questions']} questions "
        f"({t['wrong_answer_holds_gold']} with the gold inside the wrong answer)",
        f"{'class':<46} {'pairs':>5} {'share':>6} {'questions':>9} {'wrong plans':>11}",
    ]
    for k, c in t["classes"].items():
        share = 100 * c["pairs"] / max(t["pairs"], 1)
        lines.append(f"{k:<46} {c['pairs']:>5} {share:>5.1f}% {c['questions']:>9} {c['wrong_plans']:>11}")
    lines.append(f"{'all orchestrator content':<46} {t['content']['pairs']:>5}")
    return "\n".join(lines)


def show_examples(t: dict[str, Any], k: int) -> str:
    lines = []
    for name, c in t["classes"].items():
        lines.append(f"\n## {name}: {RULES[name]}")
        for e in c["examples"][:k]:
            lines.append(f"- {e['pair']}  Q: {e['question']}  gold {e['gold']!r}")
            for side in ("right", "wrong"):
                lines.append(f"    {side}: {' || '.join(e[side]['inputs'])}  -> {e[side]['answer']!r}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", type=Path, default=RUN, help=f"A committed loop folder ({LOOP_FILE}, bon/heldout).")
    ap.add_argument("--examples", type=int, default=5, help="Example pairs kept per class.")
    args = ap.parse_args(argv)
    r = measure(args.run, args.examples)
    out = {"command": COMMAND, "rules": RULES, "graded_with": GRADED_WITH, **r, "stamp": stamp()}
    write_text_atomic(OUT, json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"# {r['run']} ({r['task']}, N = {r['n']})\n")
    print(show("committed grades", r["committed"]) + "\n\n" + show("today's scorers", r["today"]))
    flips = Counter(f"{'wrong→right' if f['today'] else 'right→wrong'}" for f in r["heldout_flips"])
    print(
        f"\nplans whose grade today's scorers change: {len(r['heldout_flips'])} held-out {dict(flips)}, "
        f"{len(r['train_flips'])} training"
    )
    for f in r["heldout_flips"] + r["train_flips"]:
        print(f"  {f['split']} {f['plan']}: {f['answer']!r} vs gold {f['gold']!r}, {f['committed']} -> {f['today']}")
    print(show_examples(r["committed"], args.examples))
    print(f"\nwrote {OUT}")


if __name__ == "__main__":
    main()
