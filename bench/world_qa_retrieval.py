"""Does BM25 over world_qa's corpus find the documents each kind of question needs? No LLM.

For every held-out world_qa question (metadata["docs"] lists the documents its answer needs), three
retrieval-only readings at k = 2:
- `named@2`: each entity the question names, searched by its name alone: its own document in the top 2
  (what a search agent's first hop gets when it queries the names);
- `needed@2`: each needed document, searched by its entity's name (for a bridge's second hop, the name the
  first document gives): the fraction found in the top 2, and `all_needed@2`, the questions with every one;
- `question@2`: the whole question as one query: the fraction of its needed documents in the top 2 (one
  search cannot cover a fan-out's four to six documents, so this falls with the documents a kind needs).

    python bench/world_qa_retrieval.py [--questions 245]

Writes bench/results/world_qa_retrieval.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections import defaultdict
from pathlib import Path
from statistics import fmean

from orchrm import load_task
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

RESULTS = Path(__file__).parent / "results" / "world_qa_retrieval.json"
K = 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=245, help="held-out questions (the first 245: 49 per kind)")
    args = parser.parse_args()
    start = time.perf_counter()
    task = load_task("world_qa")  # every kind, world seed 0
    questions = task.questions(args.questions, split="test")

    def top(query: str) -> list[str]:
        return [doc_id for doc_id, _ in task.corpus.search(query, K)]

    rows: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    misses: set[str] = set()  # documents their own name does not bring into the top 2
    for q in questions:
        r = rows[q.metadata["kind"]]
        needed = q.metadata["docs"]
        named = [d for d in needed if d.split(":", 1)[1] in q.metadata["entities"]]
        r["docs_needed"].append(len(needed))
        r["named@2"] += [float(d in top(d.split(":", 1)[1])) for d in named]
        found = [d in top(d.split(":", 1)[1]) for d in needed]
        misses.update(d for d, f in zip(needed, found, strict=True) if not f)
        r["needed@2"] += [float(f) for f in found]
        r["all_needed@2"].append(float(all(found)))
        r["question@2"].append(len(set(needed) & set(top(q.question))) / len(needed))
    by_kind = {
        kind: {"questions": len(rows[kind]["docs_needed"])} | {m: round(fmean(v), 3) for m, v in rows[kind].items()}
        for kind in task.kinds
        if kind in rows
    }
    out = {
        "task": "world_qa",
        "split": "test",
        "k": K,
        "questions": len(questions),
        "by_kind": by_kind,
        "missed_by_name": {d: top(d.split(":", 1)[1]) for d in sorted(misses)},
        "seconds": round(time.perf_counter() - start, 1),
        "python": platform.python_version(),
        "command": "python bench/world_qa_retrieval.py"
        + (f" --questions {args.questions}" if args.questions != 245 else ""),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({**out, "stamp": stamp()}, indent=2) + "\n")
    cols = ["questions", "docs_needed", "named@2", "needed@2", "all_needed@2", "question@2"]
    print(f"{'kind':<11}" + "".join(f"{c:>14}" for c in cols))
    for kind, row in by_kind.items():
        print(f"{kind:<11}" + "".join(f"{row[c]:>14}" for c in cols))
    for d, got in out["missed_by_name"].items():
        print(f"missed by its name: {d} (top {K}: {', '.join(got)})")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
