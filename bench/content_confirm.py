"""A confirmation of `content-kind` on the positive control: templates and questions fixed before it ran.

    python bench/content_confirm.py rollout [--until HH:MM]   # fresh held-out plans (~90 min here), resumable
    python bench/content_confirm.py rm --arms content-kind --seeds 0,1,2   # train and measure (~6 min a seed)
    python bench/content_confirm.py tables                     # summaries from the committed rows

The plan, its endpoints and what would count as confirmed are in bench/results/content_confirm/PLAN.md,
committed before any plan here was sampled. In short: three more templates are held out of the first run's
training traces (`NEW`, beside the first run's `OLD`); the held-out questions are the first `QUESTIONS` of the
test split of `TASK` that the first run never sampled a plan for (`FreshQuestions`); the method is
bench/content_variants.py's `content-kind`, unchanged, trained on the filtered traces; every content-blind selector
is fitted on the same filtered traces. Each (arm, RM seed) is a row of bench/results/content_confirm/rows.json,
appended as it finishes (a rerun skips the rows there); the RMs stay under bench/results/content_confirm/rm/ (not
committed). The executed edits come from the first run's folder (bench/content_variants.py's docstring gives the
`orchrm counterfactual` command that remakes them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import clock
from content_rm import load_run
from content_variants import BLIND, SAME_SHAPE, _by_kind, _contrast, _subset
from files import write_text_atomic
from orchrm import PairConfig, RewardModel, RunConfig, arollout, build_pairs, load_task, train_reward_model
from orchrm.bon import (
    HYBRID,
    METHODS,
    ContentBlind,
    Context,
    RunInfo,
    across_runs,
    build_cases,
    compute_results,
    question_same_shape_auc,
    score_plans,
)
from orchrm.llm import DEFAULT_MODEL, open_llm
from orchrm.mas import first_plans, locate_traces, read_run_config, read_traces, run_questions
from orchrm.pairs import RENDER_VERSION, load_counterfactual
from orchrm.tasks import Question, Task
from stamp import stamp

HERE = Path(__file__).parent
FIRST = HERE / "results" / "content_decides"
CF = FIRST / "counterfactual"
OUT = HERE / "results" / "content_confirm"
HELDOUT = OUT / "heldout"
ROWS = OUT / "rows.json"
RMS = OUT / "rm"
OLD = ("bridge.employer_city", "arithmetic.population_gap", "fanout.population")
NEW = ("arithmetic.employees_gap", "compare.population", "bridge.employer_founded")
TASK = f"world_qa:tools=exact;unseen={'+'.join(OLD + NEW)}"
#: Held-out questions rolled out (the plan's 200) and measured: the first 150, cut for time before any RM ran (PLAN.md)
ROLLOUT_QUESTIONS = 200
QUESTIONS = 150
#: arm -> whether its training pairs get the type-contrast pairs (the rest is `content`'s recipe)
ARMS = {"content-kind": True, "content": False}


class FreshQuestions(Task):
    """A task's questions less those in `exclude` (ids): the split and scoring stay the task's own."""

    def __init__(self, task: Task, exclude: set[str]) -> None:
        self.task, self.exclude = task, frozenset(exclude)
        self.name, self.domain, self.corpus, self.agent_types = task.name, task.domain, task.corpus, task.agent_types

    def __getattr__(self, name: str) -> Any:  # the inner task's own attributes (its world, its records)
        return getattr(self.__dict__["task"], name)

    def questions(self, n: int, *, split: str = "train", seed: int = 0) -> list[Question]:
        out = [
            q for q in self.task.questions(n + len(self.exclude), split=split, seed=seed) if q.id not in self.exclude
        ]
        return out[:n]

    def split(self, question: Question) -> str:
        return self.task.split(question)

    def score(self, prediction: str | None, question: Question) -> float:
        return self.task.score(prediction, question)


def sampled_before() -> set[str]:
    """Every question id the first run sampled a plan for, in training or held out."""
    return {t.question_id for d in ("train", "bon/heldout") for t in read_traces(locate_traces(FIRST / d))}


def fresh_task() -> FreshQuestions:
    return FreshQuestions(load_task(TASK), sampled_before())


def _held_out(t: Any) -> bool:
    return t.question_template in NEW  # a trace's template is already `kind.template`


def training() -> list[Any]:
    """The first run's training traces (its questions' first N plans) less every question of a `NEW` template."""
    return [t for t in load_run(FIRST)[1] if not _held_out(t)]


def heldout_config() -> RunConfig:
    """The first run's held-out settings on the fresh questions."""
    first = read_run_config(FIRST / "bon" / "heldout")
    return first.model_copy(update={"task": TASK, "n_questions": ROLLOUT_QUESTIONS, "skip_questions": 0})


async def rollout(
    until: str | None, slots: int | None, task: Task | None = None, folder: Path = HELDOUT, n: int = ROLLOUT_QUESTIONS
) -> None:
    """Sample the first run's held-out settings' plans for the first `n` questions of `task` (the fresh questions)."""
    deadline = clock.at(until) if until else None
    config = heldout_config().model_copy(update={"n_questions": n})
    task = task or fresh_task()
    start = time.perf_counter()

    def progress(p: Any) -> None:
        if deadline is not None and time.time() > deadline:
            print(f"[{time.strftime('%H:%M:%S')}] --until {until} reached: stopping (rerun resumes)", flush=True)
            raise SystemExit(0)
        if p.plans_done and p.plans_done % 40 == 0:
            rate = 60 * p.plans_done / (time.perf_counter() - start)
            print(f"[{time.strftime('%H:%M:%S')}] {p.plans_done} plans, {p.questions_done} questions", flush=True)
            print(f"    {rate:.1f} plans/min this sitting", flush=True)

    options = {"concurrency": slots} if slots else {}  # llama-server's slots; default ServerConfig's
    async with open_llm("local", model=DEFAULT_MODEL, **options) as llm:
        await arollout(task, llm, folder, config, parallel_questions=2, on_progress=progress)


def heldout_plans(task: Task | None = None, folder: Path = HELDOUT, n: int = QUESTIONS) -> dict[str, list[Any]]:
    """The first `n` questions' plans of a held-out rollout (this confirmation's by default)."""
    config = read_run_config(folder)
    ids = [q.id for q in run_questions(task or fresh_task(), n, "test", config.seed)]
    grouped = first_plans(read_traces(locate_traces(folder)), ids, config.n_plans)
    short = [q for q, ts in grouped.items() if len(ts) < config.n_plans]
    if short:
        raise SystemExit(f"{len(short)} of {len(ids)} held-out questions lack plans: run `rollout` first")
    return grouped


def one(arm: str, seed: int) -> dict[str, Any]:
    """Train `arm` with RM seed `seed` on the filtered training traces and measure it on the fresh plans."""
    row = train(arm, seed, RMS / f"{arm}-{seed}")
    return row | measure(RewardModel.load(RMS / f"{arm}-{seed}"), training(), load_run(FIRST)[0].bon, heldout_plans())


def train(arm: str, seed: int, folder: Path, render_version: int = RENDER_VERSION) -> dict[str, Any]:
    """Train `arm` with RM seed `seed` on the filtered training traces, their plans in rendering `render_version`,
    into `folder`; what it trained on."""
    config = load_run(FIRST)[0]
    train = training()
    kept = {t.question_id for t in train}
    edits = tuple(e for e in load_counterfactual(CF) if e.edit.question_id in kept)
    pair_config = PairConfig(**{"seed": config.seed, **SAME_SHAPE, "render_version": render_version})
    pairs = build_pairs(train, pair_config, counterfactual=edits)
    stats = json.loads(pairs.stats.model_dump_json())
    contrast = _contrast(config, train, pairs.val, render_version) if ARMS[arm] else []
    train_pairs = [*pairs.train, *contrast]
    rm_config = config.rm.model_copy(update={"seed": seed})
    start = time.perf_counter()
    result = train_reward_model(
        train_pairs, pairs.val, rm_config, pair_stats=stats, progress=False, render_version=render_version
    )
    train_s = round(time.perf_counter() - start, 1)
    result.model.save(folder)
    return {
        "arm": arm,
        "seed": seed,
        "training_questions": len(kept),
        "pairs": {s: c["train"] + c["val"] for s, c in stats["per_source"].items()},
        "train_pairs": len(train_pairs),
        "kind_contrast_pairs": len(contrast),
        "train_s": train_s,
    }


def measure(rm: RewardModel, train: list[Any], bon: Any, grouped: dict[str, list[Any]]) -> dict[str, Any]:
    """Every selector on held-out plans (`grouped`) with this RM's rewards, as `orchrm bon` computes them."""
    rewards, rm_s, rm_tokens = score_plans(rm, grouped)
    blind = ContentBlind.fit(train, strength=bon.prior_strength, exclude=set(grouped))
    cases = build_cases(grouped, rewards, rm_s, blind, rm_tokens)
    results = compute_results(cases, bon, [], meta=RunInfo(task=TASK)).dump()
    pick = lambda case, m: METHODS[m].run(case, Context()).correct  # noqa: E731
    templates = {q: ts[0].question_template for q, ts in grouped.items()}
    return {
        "accuracy": {m: v["accuracy"] for m, v in results["methods"].items()},
        "marks": results["marks"],
        "content": results["content"],
        "columns": {m: [pick(c, m) for c in cases] for m in ("rm", "shape-mean", HYBRID, "oracle", *BLIND)},
        "rewards": [[round(p.reward, 4) if p.valid else None for p in c.candidates] for c in cases],
        "questions": len(cases),
        "question_ids": [c.question_id for c in cases],
        "templates": [templates[c.question_id] for c in cases],
        "kinds": [c.kind for c in cases],
        "same_shape_auc_by_question": {
            m: [question_same_shape_auc(METHODS[m].seen(c), METHODS[m].score) for c in cases]
            for m in ("rm", "shape-mean", *BLIND)
            if METHODS[m].score is not None
        },
        "stamp": stamp(),
    }


def mean_rewards(scored: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    """Per question, each plan's mean reward over several RMs' (`score_plans`' first part, each RM's)."""
    return {q: [statistics.fmean(x) for x in zip(*(s[q] for s in scored), strict=True)] for q in scored[0]}


def ensemble_results(folders: list[Path], train: list[Any], bon: Any, grouped: dict[str, list[Any]]) -> dict[str, Any]:
    """The RMs in `folders` as one (their mean reward per plan) on held-out plans `grouped`, every selector as
    `orchrm bon` computes it; its intervals are over questions only."""
    scored = [score_plans(RewardModel.load(f), grouped) for f in folders]
    blind = ContentBlind.fit(train, strength=bon.prior_strength, exclude=set(grouped))
    cases = build_cases(grouped, mean_rewards([s[0] for s in scored]), scored[0][1], blind, scored[0][2])
    return compute_results(cases, bon, [], meta=RunInfo(task=TASK)).dump()


def rows() -> list[dict[str, Any]]:
    return json.loads(ROWS.read_text())["rows"] if ROWS.exists() else []


def summary(all_rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per arm across its RM seeds: the primary endpoint (rm − best content-blind over all questions, paired by RM
    seed) and the secondary ones of PLAN.md."""
    out: dict[str, Any] = {}
    for arm in dict.fromkeys(r["arm"] for r in all_rows):
        runs = [r for r in all_rows if r["arm"] == arm]
        templates = runs[0]["templates"]
        subsets = {
            "all": list(range(len(templates))),
            "new_held_out_templates": [i for i, t in enumerate(templates) if t in NEW],
            "old_held_out_templates": [i for i, t in enumerate(templates) if t in OLD],
            "trained_templates": [i for i, t in enumerate(templates) if t not in NEW + OLD],
        }
        seeds = [r["seed"] for r in runs]
        paired = {"seeds": seeds, "seeds_minus": seeds, "min_pairs": 2}
        shape = across_runs([r["columns"]["rm"] for r in runs], [r["columns"]["shape-mean"] for r in runs], **paired)
        out[arm] = {
            "seeds": seeds,
            "accuracy": {m: statistics.fmean(runs[0]["columns"][m]) for m in ("oracle", *BLIND)},
            **{name: _subset(runs, keep) for name, keep in subsets.items() if len(keep) >= 2},
            "rm_minus_shape_mean": shape.model_dump(),
            "same_shape_auc_rm": [r["content"]["auc"]["rm"] for r in runs],
            "same_shape_auc_blind": {m: runs[0]["content"]["auc"].get(m) for m in BLIND},
            "same_shape_auc_rm_minus": {m: [r["content"]["rm_minus"].get(m) for r in runs] for m in BLIND},
            "same_shape_auc_rm_by_kind": _by_kind(runs),
        }
    if {"content", "content-kind"} <= set(out):
        out["content-kind_minus_content"] = _arm_minus(all_rows)
    return out


def _arm_minus(
    all_rows: list[dict[str, Any]], first: str = "content-kind", second: str = "content", column: str = "rm"
) -> dict[str, Any] | None:
    """`first` − `second` in a selector's accuracy, paired by RM seed where both arms have it."""
    by = {(r["arm"], r["seed"]): r["columns"][column] for r in all_rows}
    seeds = sorted(s for a, s in by if a == first and (second, s) in by)
    if len(seeds) < 2:
        return None
    a = [by[(first, s)] for s in seeds]
    b = [by[(second, s)] for s in seeds]
    return across_runs(a, b, seeds=seeds, seeds_minus=seeds, min_pairs=2).model_dump()


def write(all_rows: list[dict[str, Any]]) -> None:
    doc = {
        "plan": "bench/results/content_confirm/PLAN.md",
        "task": TASK,
        "rows": all_rows,
        "summary": summary(all_rows),
    }
    write_text_atomic(ROWS, json.dumps(doc, indent=1) + "\n")


def run_rows(
    done: list[dict[str, Any]],
    arms: str,
    seeds: str,
    until: str | None,
    make_row: Callable[[str, int], dict[str, Any] | None],
    save: Callable[[list[dict[str, Any]]], None],
) -> None:
    """A row for each (arm, seed) not in `done`, saved as it finishes (a rerun resumes); none is started after
    `until` (HH:MM). `make_row` may give None: nothing to add for that one."""
    deadline = clock.at(until) if until else None
    for arm in arms.split(","):
        for seed in (int(s) for s in seeds.split(",")):
            if any(r["arm"] == arm and r["seed"] == seed for r in done):
                continue
            if deadline is not None and time.time() > deadline:
                return
            row = make_row(arm, seed)
            if row is None:
                continue
            done.append(row)
            save(done)
            print(
                f"[{time.strftime('%H:%M:%S')}] {arm} seed {seed}: rm {statistics.fmean(row['columns']['rm']):.3f}, "
                f"{HYBRID} {statistics.fmean(row['columns'][HYBRID]):.3f}, "
                f"same-shape AUC {row['content']['auc']['rm']['value']:.3f}",
                flush=True,
            )


def parser(doc: str | None, what: tuple[str, ...], arms: str) -> argparse.ArgumentParser:
    """A confirmation bench's command line: what to do, which arms and RM seeds, the rollout's slots, `--until`."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=what)
    p.add_argument("--arms", default=arms)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--slots", type=int, help="rollout: llama-server's parallel slots (default: orchrm's)")
    p.add_argument("--until", help="HH:MM: stop starting new work after this time (a rerun resumes)")
    return p


def confirmation_main(
    doc: str | None,
    arms: str,
    fresh: Callable[[], Task],
    folder: Path,
    n: int,
    make_row: Callable[[str, int], dict[str, Any] | None],
    read: Callable[[], list[dict[str, Any]]],
    save: Callable[[list[dict[str, Any]]], None],
    summarize: Callable[[list[dict[str, Any]]], dict[str, Any]],
    more: dict[str, Callable[[], Any]] | None = None,
) -> None:
    """A later confirmation's command line: `rollout` of `n` fresh questions into `folder`, `rm` rows, `tables`,
    and any of `more` (name -> what it runs)."""
    more = more or {}
    args = parser(doc, ("rollout", "rm", "tables", *more), arms).parse_args()
    if args.what == "rollout":
        asyncio.run(rollout(args.until, args.slots, fresh(), folder, n))
        return
    if args.what in more:
        more[args.what]()
        return
    done = read()
    if args.what == "rm":
        run_rows(done, args.arms, args.seeds, args.until, make_row, save)
    save(done)
    print(json.dumps(summarize(done), indent=1)[:6000])


def main() -> None:
    confirmation_main(__doc__, "content-kind", fresh_task, HELDOUT, ROLLOUT_QUESTIONS, one, rows, write, summary)


if __name__ == "__main__":
    main()
