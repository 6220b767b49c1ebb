"""What an RM prefers among held-out plans of one shape: every same-shape (right, wrong) pair of the positive
control, sorted by what makes the wrong plan wrong, with the share the RM orders right; and 20 pairs to read.

    python bench/same_shape_read.py                                  # the loop's own RM (content_decides/rm)
    python bench/same_shape_read.py --rm bench/results/content_variants/cf-0 --name cf-0

Reads bench/results/content_decides/ (its held-out plans at N = 8) and writes
bench/results/content_decides/same_shape_read-<name>.md: per category, the pairs and the RM's share ordered right
(ties 1/2); then 20 pairs drawn with a fixed seed, each plan as the RM reads it (`render_plan`) with its score.
A wrong plan's category comes from what executing it recorded, against the right plan of its pair: an unknown
fact (an attribute the entity's kind lacks, an unknown entity), a lookup input that is not `ATTRIBUTE of
ENTITY`, a calc error, other lookups than the right plan's, or the same lookups with another calc expression.
"""

from __future__ import annotations

import argparse
import random
from collections import defaultdict
from pathlib import Path

from content_rm import load_run
from files import write_text_atomic
from orchrm import RewardModel
from orchrm.bon import plan_signature
from orchrm.pairs import render_plan
from stamp import stamp

HERE = Path(__file__).parent
RUN = HERE / "results" / "content_decides"
SHOWN = 20


def category(right, wrong) -> str:  # noqa: ANN001 - two traces
    errors = " ".join(wrong.errors)
    if "UnknownFact" in errors:
        return "unknown fact (attribute or entity)"
    if "BadLookup" in errors:
        return "lookup input malformed"
    if "CalcError" in errors:
        return "calc error"
    lookups = lambda t: [a.input for a in t.plan.agents if a.type == "lookup"]  # noqa: E731
    if lookups(right) != lookups(wrong):
        return "other lookups (entity, attribute or order)"
    return "same lookups, another calc expression"


def pairs(grouped: dict) -> list[tuple]:
    out = []
    for traces in grouped.values():
        shapes = defaultdict(list)
        for t in traces:
            if t.valid and t.plan is not None:
                shapes[plan_signature(t.plan, "shape")].append(t)
        for group in shapes.values():
            right = [t for t in group if t.score and t.score.correct]
            wrong = [t for t in group if not (t.score and t.score.correct)]
            seen = set()
            for r in right:
                for w in wrong:
                    key = (r.plan.to_json(), w.plan.to_json())
                    if key not in seen:  # identical plans sampled twice are one pair
                        seen.add(key)
                        out.append((r, w))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rm", type=Path, default=RUN / "rm")
    p.add_argument("--name", default="loop")
    args = p.parse_args()
    rm = RewardModel.load(args.rm)
    _, _, grouped, _ = load_run(RUN)
    all_pairs = pairs(grouped)
    scores = {}
    for r, w in all_pairs:
        for t in (r, w):
            key = (t.question_id, t.plan.to_json())
            if key not in scores:
                scores[key] = rm.score(t.question, [t.plan])[0]
    score = lambda t: scores[(t.question_id, t.plan.to_json())]  # noqa: E731
    by = defaultdict(list)
    for r, w in all_pairs:
        by[category(r, w)].append(1.0 if score(r) > score(w) else 0.5 if score(r) == score(w) else 0.0)
    lines = [
        f"# Same-shape pairs of the positive control: what `{args.name}` prefers",
        "",
        f"`.venv/bin/python bench/same_shape_read.py --rm {args.rm} --name {args.name}`; stamp {stamp()}",
        "",
        f"{len(all_pairs)} distinct (right, wrong) pairs of one question and one shape among the held-out plans "
        "(examples' copies included, unlike `bon`'s clean pairs).",
        "",
        "| what makes the wrong plan wrong | pairs | rm orders right |",
        "|---|---|---|",
    ]
    for name, hits in sorted(by.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"| {name} | {len(hits)} | {sum(hits) / len(hits):.2f} |")
    lines += ["", f"## {SHOWN} pairs (seed 0)", ""]
    rng = random.Random(0)
    for r, w in rng.sample(all_pairs, min(SHOWN, len(all_pairs))):
        mark = "right" if score(r) > score(w) else "WRONG"
        lines += [
            f"**{r.question}** (gold {r.gold}; rm orders it {mark}; {category(r, w)})",
            "",
            "```",
            f"right plan, reward {score(r):+.3f}",
            render_plan(r.plan),
            f"wrong plan, reward {score(w):+.3f}: answered {w.final_answer!r} {'; '.join(w.errors)[:160]}",
            render_plan(w.plan),
            "```",
            "",
        ]
    out = RUN / f"same_shape_read-{args.name}.md"
    write_text_atomic(out, "\n".join(lines))
    print("\n".join(lines[:20]))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
