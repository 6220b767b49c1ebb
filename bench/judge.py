"""Pairwise judging accuracy and tokens per judgment, on real answers from the embedded model.

Pairs: for reasoning-gym questions, the embedded model samples several answers; a question with at least
one correct and one incorrect answer (by reasoning-gym's own scorer) gives one pair, shown in a random
order. (Executed trajectories replace these answers once the MAS runtime exists.) Three judges:

  (a) rules    — rule verifiers of the shipped skills, with the reference answer, no LLM;
  (b) skill    — the SkillEvaluator agent, reference-free, both orders;
  (c) flat     — the same model with the skill text pasted into one prompt, no tools, both orders.

A tie or an error counts as a miss. Tokens are per judgment (both orders), from the evaluator's own
counts; every judgment call is also in the ledger under `verify`.

    python bench/judge.py [--questions 6] [--samples 3] [--max-pairs 4] [--max-steps 3]

Writes bench/results/judge.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import re
import time
from pathlib import Path
from statistics import fmean

import reasoning_gym

from orchrm.evidence import EvaluatorConfig, SkillEvaluator, flat_pairwise, load_skills
from orchrm.llm import open_llm
from orchrm.tasks import extract_answer
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

RESULTS = Path(__file__).parent / "results" / "judge.json"
ANSWER_PROMPT = "{question}\nWork it out step by step, briefly, then end with a line 'Answer: <number>'."


async def sample_pairs(llm, datasets: list[str], questions: int, samples: int, seed: int) -> list[dict]:
    per = max(1, questions // len(datasets))
    entries = [e for name in datasets for e in reasoning_gym.create_dataset(name, size=per, seed=seed)]

    async def answers(entry: dict) -> list[str]:
        cs = await llm.agenerate(
            ANSWER_PROMPT.format(question=entry["question"]),
            category="execute",
            n=samples,
            temperature=0.9,
            max_tokens=160,
            seed=seed,
        )
        return [c.text for c in cs]

    sampled = await asyncio.gather(*(answers(e) for e in entries))
    rng = random.Random(seed)
    pairs = []
    for entry, texts in zip(entries, sampled, strict=True):
        scorer = reasoning_gym.get_score_answer_fn(entry["metadata"]["source_dataset"])
        graded = [(t, float(scorer(extract_answer(t) or "", entry))) for t in texts]
        good = [t for t, s in graded if s >= 1.0]
        bad = [t for t, s in graded if s <= 0.0]
        if good and bad:
            flip = rng.random() < 0.5
            a, b = (bad[0], good[0]) if flip else (good[0], bad[0])
            pairs.append({"entry": entry, "a": a, "b": b, "better": "B" if flip else "A"})
    return pairs


def score(judgments: list, pairs: list[dict], wall_s: float) -> dict:
    hits = [j.verdict == p["better"] for j, p in zip(judgments, pairs, strict=True)]
    return {
        "accuracy": round(fmean(hits), 4) if hits else None,
        "correct": sum(hits),
        "ties": sum(j.verdict == "tie" for j in judgments),
        "errors": sum(j.status == "error" for j in judgments),
        "llm_skipped": sum(j.llm_skipped for j in judgments),
        "tokens_per_judgment": round(fmean(j.tokens for j in judgments), 1) if judgments else None,
        "prompt_tokens_per_judgment": round(fmean(j.prompt_tokens for j in judgments), 1) if judgments else None,
        "completion_tokens_per_judgment": round(fmean(j.completion_tokens for j in judgments), 1)
        if judgments
        else None,
        "llm_calls_per_judgment": round(fmean(j.llm_calls for j in judgments), 2) if judgments else None,
        "flags": _flag_counts(judgments),
        "wall_s": round(wall_s, 1),
        "verdicts": [j.verdict for j in judgments],
    }


def _flag_counts(judgments: list) -> dict[str, int]:
    """How many judgments raised each kind of flag ("order2: forced_finalization" counts as forced_finalization)."""
    counts: dict[str, int] = {}
    for j in judgments:
        for name in {re.sub(r"^order\d+: ", "", f).split(":")[0] for f in j.flags}:
            counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))


async def main_async(args: argparse.Namespace) -> dict:
    skills = load_skills()
    math_skills = [s for s in skills if s.name in ("math-answer", "pairwise-judge")]
    llm = open_llm("local", model=args.model)
    try:
        t0 = time.perf_counter()
        pairs = (await sample_pairs(llm, args.datasets, args.questions, args.samples, args.seed))[: args.max_pairs]
        sample_s = time.perf_counter() - t0
        print(
            f"{len(pairs)} pairs from {args.questions} questions x {args.samples} samples in {sample_s:.0f}s",
            flush=True,
        )
        rows = [(p["entry"]["question"], p["a"], p["b"]) for p in pairs]

        t = time.perf_counter()
        rules = SkillEvaluator(None, skills)
        ja = [
            await rules.apairwise(q, a, b, kind="math", reference=p["entry"]["answer"], entry=p["entry"])
            for (q, a, b), p in zip(rows, pairs, strict=True)
        ]
        res_a = score(ja, pairs, time.perf_counter() - t)
        print("rules:", res_a["accuracy"], flush=True)

        t = time.perf_counter()
        skill = SkillEvaluator(llm, skills, EvaluatorConfig(use_references=False, max_steps=args.max_steps))
        jb = await asyncio.gather(*(skill.apairwise(q, a, b, kind="math") for q, a, b in rows))
        res_b = score(jb, pairs, time.perf_counter() - t)
        print("skill:", res_b["accuracy"], res_b["tokens_per_judgment"], flush=True)

        t = time.perf_counter()
        jc = await asyncio.gather(*(flat_pairwise(llm, math_skills, q, a, b) for q, a, b in rows))
        res_c = score(jc, pairs, time.perf_counter() - t)
        print("flat:", res_c["accuracy"], res_c["tokens_per_judgment"])
        verify = llm.ledger.totals().get("verify")
    finally:  # inside a running loop: close the backend (and its llama-server) with await, not LLM.close()
        await llm.aclose()
        if llm.cache is not None:
            llm.cache.close()
    return {
        "benchmark": "pairwise judging of correct vs incorrect embedded-model answers to reasoning-gym questions",
        "model": args.model,
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "settings": {k: v for k, v in vars(args).items()},
        "pairs": len(pairs),
        "better_is_A": sum(p["better"] == "A" for p in pairs),
        "sampling_wall_s": round(sample_s, 1),
        "judges": {
            "a_rules_with_reference": res_a,
            "b_skill_evaluator_reference_free": res_b,
            "c_flat_prompt_reference_free": res_c,
        },
        "verify_ledger": verify.model_dump() if verify else None,
        "examples": [
            {
                "question": p["entry"]["question"],
                "reference": p["entry"]["answer"],
                "better": p["better"],
                "a": p["a"][-200:],
                "b": p["b"][-200:],
                "skill_reason": jb[i].reason[:300],
                "flat_reason": jc[i].reason[:300],
            }
            for i, p in enumerate(pairs[:3])
        ],
        "notes": "A tie or error counts as a miss. (a) uses the same reference the pairs were labelled with, so it "
        "measures the verifiers' agreement with reasoning-gym's scorer, not independent accuracy.",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--datasets", nargs="+", default=["chain_sum", "basic_arithmetic"])
    ap.add_argument("--questions", type=int, default=6)
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--max-pairs", type=int, default=4)
    ap.add_argument("--max-steps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    result = asyncio.run(main_async(args))
    result["settings"]["out"] = str(args.out)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({**result, "stamp": stamp()}, indent=2) + "\n")
    print(json.dumps(result["judges"], indent=2))


if __name__ == "__main__":
    main()
