"""Reward-guided vs trajectory-level GRPO on the orchestrator: held-out accuracy against steps and tokens.

    python bench/train_orchestrator.py                       # both arms to --steps, evaluated at --eval-every
    python bench/train_orchestrator.py --until 16:40         # stop at a checkpoint after 16:40 (resume later)
    python bench/train_orchestrator.py --tables-only         # rewrite the summary from what is on disk
    python bench/train_orchestrator.py --arms prior.2 --eval-every 4        # a second run of an arm, same settings
    python bench/train_orchestrator.py --arms rm-decoder --eval-plans 4 --eval-steps 8,16   # grow evaluations

From one base orchestrator (the embedded 0.5B, its GGUF dequantised for training; plans sampled by
llama-server with the current adapter), on issue #13's mixed pool (`mix:world_qa,chain_sum`), with the same
steps, group size, learning rate and seed, two arms:

- `rm`: the orchestration RM (trained on issue #13's committed pairs) scores every sampled plan; nothing runs;
- `execute`: every sampled plan is executed by the sub-agents and graded (trajectory-level RL);
- `prior`: the plan-shape prior fitted on the same traces the RM's pairs came from (`bon.prior.ShapePrior`,
  issue #13's training rollouts): the cheapest reward that could fake the RM's;
- `scratch`: the RM reward again, from the bare prompt (no worked example plans): training from scratch,
  compared with the base orchestrator on that same bare prompt (`base-bare`);
- `router`: the content-blind router (`bon.router.Router`: question words × plan shape, logistic regression)
  fitted on those same traces — best-of-N's strongest selector that never reads a plan (issue #24);
- `valid`: 1 for any valid plan, the penalty otherwise: what learning to write valid plans alone gives;
- `rm-decoder`: the RM reward from the decoder backbone (the embedded Qwen, LoRA + value head) trained on the
  same pairs by `bench/rm_backbones.py` (its folder is reused; trained here the same way when missing).

Each arm's checkpoints are evaluated on held-out questions the way a user would (`orchrm rollout
--orchestrator-adapter`): `--eval-plans` sampled plans per question, unconstrained as in training, executed and
graded; the base orchestrator is evaluated the same way on the same questions (paired bootstrap intervals).
Tokens per arm come from the run's ledger (the seal of each checkpoint holds the cumulative count), and the
RM arm is also stated with the tokens that collecting its training pairs cost (issue #13's training rollouts).

Everything resumes: GRPO from its last sealed checkpoint, evaluations trace by trace (an evaluation grows in
place with more --eval-questions or --eval-plans). Committed under bench/results/train_orchestrator/<task>/:
each arm's run.json, samples.jsonl, steps.jsonl, tokens.json, the evaluation traces with each evaluated
checkpoint's step and tokens (checkpoint.json), results.json; and bench/results/train_orchestrator.md, which
`--tables-only` rebuilds from those alone. Not committed (see .gitignore): the checkpoints, adapters, the RM
(retrained from the committed pairs when missing) and the response cache. A run of an arm does not reproduce
bit for bit (the first step's plans do; the update's float sums differ between runs on 2 threads and every
later sample follows), so an arm whose checkpoints are gone cannot be evaluated again: train a repeat
(`<arm>.2`) instead, which also shows how far two runs of one arm differ. The committed traces are gzipped;
`--tables-only` reads them as they are, but an evaluation that resumes into an evals folder appends, so run
`python bench/traces.py unpack bench/results/train_orchestrator` first (a writer refuses a .gz).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import math
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import clock
from files import write_text_atomic
from orchrm import RewardModel, RMConfig, RunConfig, Trace, arollout, read_traces
from orchrm.bon import Bootstrap, Router, ShapePrior, across_runs, compare
from orchrm.grpo import (
    SEAL_FILE,
    ExecuteScorer,
    GRPORunConfig,
    PriorScorer,
    RMScorer,
    RouterScorer,
    ValidScorer,
    checkpoints,
    latest_attempts,
    open_run,
    policy_weights,
    read_draws,
    read_samples,
    read_steps,
    read_training_config,
    resolve_sampler,
    served_adapter,
)
from orchrm.grpo import train_orchestrator as train
from orchrm.llm import DEFAULT_MODEL, TOKENS_FILE, TokenLedger, close_llms, open_llm, open_llms, read_totals
from orchrm.loop import read_loop_config
from orchrm.mas import (
    RUN_FILE,
    PlanError,
    agent_fields,
    executor_config,
    find_traces,
    locate_traces,
    parse_plan,
    plan_shape,
)
from orchrm.tasks import load_task
from stamp import stamp  # bench/stamp.py: the commit and machine a result measured

HERE = Path(__file__).parent
TASK = "mix:world_qa,chain_sum"
PAIRS_FROM = HERE / "results" / "orchestration" / "mix_world_qa+chain_sum"  # issue #13's committed run
DECODER_RM = HERE / "results" / "rm_backbones" / "qwen2.5-coder-0.5b"  # bench/rm_backbones.py's decoder RM
ARMS = (
    "rm",
    "execute",
    "scratch",
    "prior",
    "rm-decoder",
    "router",
    "valid",
    "scratch-kl",
    "scratch-entropy",
    "scratch-diverse",
)
BASE_OF = {
    "rm": "base",
    "execute": "base",
    "scratch": "base-bare",
    "prior": "base",
    "rm-decoder": "base",
    "router": "base",
    "valid": "base",
    "scratch-kl": "base-bare",
    "scratch-entropy": "base-bare",
    "scratch-diverse": "base-bare",
}  # the evaluation each arm starts from
REWARD_OF = {
    "rm": "rm",
    "execute": "execute",
    "scratch": "rm",
    "prior": "prior",
    "rm-decoder": "rm",
    "router": "router",
    "valid": "valid",
    "scratch-kl": "rm",
    "scratch-entropy": "rm",
    "scratch-diverse": "rm",
}
# The from-scratch remedies (issue #24 item 4): `scratch` again with a KL term to the base policy (TRL's old
# default coefficient), with an entropy bonus in the loss, or with a group kept diverse out of twice as many
# draws (grpo/diverse.py). Everything else as `scratch`.
REMEDY_OF: dict[str, dict[str, float | int]] = {
    "scratch-kl": {"beta": 0.04},
    "scratch-entropy": {"entropy_coef": 0.05},
    "scratch-diverse": {"diverse_draws": 2},
}


def kind(arm: str) -> str:
    """An arm's name is `<kind>[.<repeat>][@<training seed>]`: `prior.2` is a second run of `prior` (same
    settings and seed, its own folder), `router@1` a run of `router` with training seed 1. How far runs of
    one kind differ is what a difference between kinds must be read against."""
    return arm.split("@")[0].split(".")[0]


def training_seed(arm: str, default: int) -> int:
    return int(arm.split("@")[1]) if "@" in arm else default


def bare(arm: str) -> bool:
    """Arms trained (and evaluated) on the bare prompt, without worked example plans."""
    return kind(arm).startswith("scratch")


def arms_on_disk(root: Path) -> list[str]:
    found = {p.parent.name for p in root.glob(f"arms/*/{RUN_FILE}") if kind(p.parent.name) in ARMS}
    return sorted(found, key=lambda a: (ARMS.index(kind(a)), a))


# Paired on the same held-out questions at every step both arms evaluated (results.json "paired"; the last
# such step also as "<a>_minus_<b>"). `prior.2` against `prior`: two runs of one arm, what noise alone gives.
PAIRED = (
    ("rm", "execute"),
    ("rm", "prior"),
    ("rm-decoder", "prior"),
    ("rm-decoder", "prior.2"),
    ("rm-decoder", "rm"),
    ("rm-decoder", "execute"),
    ("prior.2", "prior"),
    ("rm", "router"),
    ("rm", "valid"),
    ("rm-decoder", "router"),
    ("rm-decoder", "valid"),
)


def slug(task: str) -> str:
    return task.replace(":", "_").replace(",", "+")


def eval_config(  # noqa: ANN001
    args: argparse.Namespace, label: str, llm, agent_llm, examples: bool = True
) -> RunConfig:
    return RunConfig(
        prompt_examples=examples,
        task=args.task,
        split="test",
        n_questions=args.eval_questions,
        skip_questions=args.eval_skip,
        n_plans=args.eval_plans,
        seed=args.seed,
        execute="all",
        degree="dag",
        temperature=args.temperature,
        top_p=0.95,
        plan_max_tokens=args.plan_max_tokens,
        constrained=False,
        checkpoint=label,
        agent_max_tokens=args.agent_max_tokens,
        agent_max_samples=3,
        agent_max_rounds=1,
        model_id=llm.backend.model_id,
        **agent_fields(llm, agent_llm),
    )


def ensure_rm(root: Path, arm: str) -> RewardModel:
    """The arm's RM, trained on issue #13's committed pairs when its folder is missing: the MiniLM with that
    bench's own settings, or the decoder with its defaults (what bench/rm_backbones.py trains, ~1 h here)."""
    from orchrm.rm import train_from_folder

    folder, config = root / "rm", read_loop_config(PAIRS_FROM).rm
    if arm == "rm-decoder":
        folder, config = DECODER_RM, RMConfig(backbone="qwen2.5-coder-0.5b")
    if not folder.is_dir():  # saved whole (swapped in), so a folder that exists is complete
        print(f"training the {config.backbone} RM on {PAIRS_FROM / 'pairs'} ...", flush=True)
        train_from_folder(PAIRS_FROM / "pairs", folder, config, progress=False)
    return RewardModel.load(folder)


def pair_collection_tokens() -> int:
    """Tokens issue #13's training rollouts spent (plans sampled, executed, verified): what the RM's pairs cost."""
    return sum(c.total_tokens for t in read_traces(locate_traces(PAIRS_FROM / "train")) for c in t.tokens.values())


def deadline_callback(deadline: float | None, save_steps: int):  # noqa: ANN201
    """Stops training at the first checkpoint step after the deadline (the checkpoint is still saved)."""
    from transformers import TrainerCallback

    class Deadline(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args, state, control, **kw):  # noqa: ANN001, ANN201
            if deadline is not None and time.time() > deadline and state.global_step % save_steps == 0:
                control.should_training_stop = True
                control.should_save = True

    return Deadline()


def gone(root: Path, arm: str) -> bool:
    """A finished run (it wrote tokens.json) with no sealed checkpoint here: nothing to resume or evaluate, and
    training it again would start a second run over its records."""
    if not (root / "arms" / arm / TOKENS_FILE).is_file() or eval_points(root / "arms" / arm):
        return False
    print(
        f"{arm}: finished, and its checkpoints are not on this machine: not trained again; train a repeat "
        f"({arm}.2) or a seed ({kind(arm)}@N)",
        flush=True,
    )
    return True


def train_arm(arm: str, args: argparse.Namespace, root: Path, deadline: float | None) -> None:
    task = load_task(args.task)
    weights = policy_weights(DEFAULT_MODEL)
    out = root / "arms" / arm
    reward = REWARD_OF[kind(arm)]
    rm = ensure_rm(root, kind(arm)) if reward == "rm" else None
    agent_llm = open_llm("local", cache=root / "responses.sqlite") if reward == "execute" else None
    config = GRPORunConfig(
        task=args.task,
        policy=DEFAULT_MODEL,
        policy_sha256=weights.sha256,
        reward=reward,  # type: ignore[arg-type]
        rm_sha256=rm.card.weights_sha256 if rm else "",
        agent_model_id=agent_llm.backend.model_id if agent_llm else "",
        group_size=args.group,
        n_questions=args.train_questions,
        max_steps=args.steps,
        save_steps=args.eval_every,
        learning_rate=args.lr,
        plan_max_tokens=args.plan_max_tokens,
        temperature=args.temperature,
        seed=training_seed(arm, args.seed),
        sampler=resolve_sampler("auto", weights),
        prompt_examples=not bare(arm),
        **REMEDY_OF.get(kind(arm), {}),
    )
    ledger = open_run(out, config)
    try:
        if rm is not None:
            scorer = RMScorer(rm, ledger)
        elif reward == "prior":
            scorer = PriorScorer(ShapePrior.from_file(PAIRS_FROM / "train"))
        elif reward == "router":  # the best content-blind selector of best-of-N, fitted on the same traces
            traces = read_traces(locate_traces(PAIRS_FROM / "train"))
            scorer = RouterScorer(Router.fit(traces, prior=ShapePrior.fit(traces)))
        elif reward == "valid":
            scorer = ValidScorer()
        else:
            assert agent_llm is not None
            agent_llm.ledger = ledger
            scorer = ExecuteScorer(task, agent_llm, executor_config(eval_config(args, "x", agent_llm, agent_llm)))
        result = train(
            config,
            task,
            weights,
            out,
            ledger=ledger,
            scorer=scorer,
            callbacks=[deadline_callback(deadline, args.eval_every)],
        )
        print(f"{arm}: {result.steps} steps, tokens {result.tokens['total']['total_tokens']:,}", flush=True)
    finally:
        ledger.close()
        if agent_llm is not None:
            agent_llm.close()


CHECKPOINT_FILE = "checkpoint.json"  # in an evaluation folder: the step and cumulative tokens of what it evaluated


def evals_dir(root: Path, skip: int) -> Path:
    """Where evaluations on one held-out set live: `evals/` for the first test questions (among those
    best-of-N chose its RMs on), `evals-skip<N>/` for questions after the first N (never used to choose)."""
    return root / ("evals" if not skip else f"evals-skip{skip}")


def results_name(skip: int) -> str:
    return "results.json" if not skip else f"results-skip{skip}.json"


def evaluate(label: str, adapter: Path | None, args: argparse.Namespace, root: Path, examples: bool = True) -> None:
    """`--eval-plans` plans per held-out question from the base or an adapter, executed and graded. A
    checkpoint's step and tokens (from its seal) are kept beside its traces: the checkpoints themselves stay
    local, and the summary must be rebuilt from what is committed."""
    task = load_task(args.task)
    evals = evals_dir(root, args.eval_skip)
    if adapter is not None:
        seal = json.loads((adapter / SEAL_FILE).read_text())
        (evals / label).mkdir(parents=True, exist_ok=True)
        write_text_atomic(
            evals / label / CHECKPOINT_FILE,
            json.dumps({"step": seal["step"], "tokens": seal["tokens"]}, indent=2) + "\n",
        )
    served = served_adapter(adapter, DEFAULT_MODEL) if adapter is not None else None
    llm, agent_llm = open_llms(
        "local", orchestrator_adapter=served, cache=root / "responses.sqlite", ledger=TokenLedger()
    )
    try:
        cfg = eval_config(args, label, llm, agent_llm, examples)
        asyncio.run(arollout(task, llm, evals / label, cfg, agent_llm=agent_llm, parallel_questions=2))
    finally:
        close_llms(llm, agent_llm)


def eval_points(arm_dir: Path) -> list[tuple[int, Path]]:
    return [(s, p) for s, p in checkpoints(arm_dir / "checkpoints") if (p / SEAL_FILE).is_file()]


def evaluated(evals: Path, arm: str) -> list[tuple[int, Path, dict]]:
    """The arm's evaluated checkpoints, by step: (step, evaluation folder, what `evaluate` kept of the seal)."""
    found = []
    for folder in evals.glob(f"{arm}:step-*"):
        if (folder / CHECKPOINT_FILE).is_file() and find_traces(folder):
            info = json.loads((folder / CHECKPOINT_FILE).read_text())
            found.append((info["step"], folder, info))
    return sorted(found, key=lambda x: x[0])


def per_question(traces: list[Trace], first_only: bool = False) -> dict[str, float]:
    """Mean correctness of each question's plans (an invalid or failed plan counts as wrong); `first_only`:
    of plan 0 alone, what an evaluation with one plan a question measures, so evaluations of different
    sizes compare on one footing."""
    got: dict[str, list[float]] = defaultdict(list)
    for t in traces:
        if not first_only or t.plan_index == 0:
            got[t.question_id].append(1.0 if t.score is not None and t.score.correct else 0.0)
    return {q: statistics.fmean(v) for q, v in got.items()}


def by_index(traces: list[Trace]) -> dict[str, list[int]]:
    """Correct and invalid plans per plan index. In a version-1 run plan i of every question is drawn with
    seed + i, so the i-th plans share one random stream: a seed that derails many plans shows here."""
    n = max((t.plan_index for t in traces), default=-1) + 1
    return {
        "correct": [sum(bool(t.plan_index == i and t.score and t.score.correct) for t in traces) for i in range(n)],
        "invalid": [sum(t.plan_index == i and not t.valid for t in traces) for i in range(n)],
    }


def shapes(traces: list[Trace], most: int = 6) -> dict[str, int]:
    return dict(Counter(plan_shape(t.plan if t.valid else None) for t in traces).most_common(most))


def by_kind(traces: list[Trace]) -> dict[str, dict]:
    """Per question kind (the pool member a question came from): correct plans, plans, and their shapes; what
    an accuracy change is made of."""
    cells: dict[str, list[Trace]] = defaultdict(list)
    for t in traces:
        cells[t.question_kind or t.question_id.split("/")[0]].append(t)
    return {
        k: {"correct": sum(bool(t.score and t.score.correct) for t in ts), "plans": len(ts), "shapes": shapes(ts, 4)}
        for k, ts in sorted(cells.items())
    }


def read_evaluation(folder: Path) -> dict | None:
    """An evaluation folder's traces, read once, as every table below needs them (None: not evaluated)."""
    traces_file = find_traces(folder)
    if traces_file is None:
        return None
    traces = list(read_traces(traces_file))
    return {
        "per_question": per_question(traces),
        "first": per_question(traces, first_only=True),
        "plans": len(traces),
        "by_index": by_index(traces),
        "shapes": shapes(traces),
        "by_kind": by_kind(traces),
    }


def described(e: dict, qs: list[str], boot: Bootstrap) -> dict:
    """What the tables show of an evaluation over the questions `qs` (in that order: the bootstrap's draw)."""
    return {
        "accuracy": boot.mean([e["per_question"][q] for q in qs]).model_dump(),
        "first_plan": boot.mean([e["first"][q] for q in qs]).model_dump(),
        **{k: e[k] for k in ("plans", "by_index", "shapes", "by_kind")},
    }


def arm_summary(
    arm_dir: Path, evals: Path, base: dict[str, float] | None, boot: Bootstrap, load: Callable[[Path], dict | None]
) -> dict:
    """An arm's training curve, step times, tokens, and each evaluated checkpoint paired with `base` (when the
    base was not evaluated on this set yet, `minus_base` is None and the checkpoint's own questions count)."""
    run = read_training_config(arm_dir).model_dump()
    tokens = read_totals(arm_dir).model_dump() if (arm_dir / TOKENS_FILE).is_file() else {}
    steps = [s.model_dump() for s in read_steps(arm_dir)]  # a resume's repeat of a step supersedes
    samples = [r.model_dump() for r in latest_attempts(read_samples(arm_dir))]  # a resume's repeat supersedes
    # Steps past the run's max_steps (a resume of a finished run trained one more before that was fixed) are
    # left out; evaluations and their token counts come from the sealed checkpoints anyway.
    steps = [s for s in steps if s["step"] <= run["max_steps"]]
    samples = [s for s in samples if s["step"] < run["max_steps"]]
    by_step: dict[int, list[dict]] = defaultdict(list)
    for s in samples:
        by_step[s["step"]].append(s)
    curve = [
        {
            "step": k,
            "valid": sum(s["valid"] for s in v) / len(v),
            "reward": statistics.fmean(s["reward"] for s in v if s["reward"] is not None),
        }
        for k, v in sorted(by_step.items())
    ]
    points = []
    for step, folder, info in evaluated(evals, arm_dir.name):
        e = load(folder)
        if (
            e is None
            or set(e["per_question"]) != set(base if base is not None else e["per_question"])
            or len(e["per_question"]) != boot.n
        ):
            continue
        qs = sorted(base if base is not None else e["per_question"])
        acc = e["per_question"]
        d = described(e, qs, boot)
        minus = boot.diff([acc[q] for q in qs], [base[q] for q in qs]).model_dump() if base is not None else None
        points.append(
            {
                "step": step,
                "accuracy": d.pop("accuracy"),
                "first_plan": d.pop("first_plan"),
                "minus_base": minus,
                "tokens": info["tokens"]["total"]["total_tokens"],
                **d,
            }
        )
    mean = lambda key: statistics.fmean(s[key] for s in steps) if steps else None  # noqa: E731
    return {
        "reward": run["reward"],
        "seed": run["seed"],
        "learning_rate": run["learning_rate"],
        "group_size": run["group_size"],
        "diverged": diverged(curve, samples, run["max_steps"]),
        "sampled_shapes": sampled_shapes(samples),
        "drawn_shapes": drawn_shapes(arm_dir, run["max_steps"]),
        "steps_done": max((s["step"] for s in steps), default=0),
        "tokens": tokens.get("categories", {}),
        "total_tokens": tokens.get("total", {}).get("total_tokens", 0),
        "curve": curve,
        "evals": points,
        "step_time": {k: mean(k) for k in ("generation_s", "sync_s", "reward_s", "update_s", "step_s")},
    }


def sample_shape(sample: dict) -> str:
    """A training sample's plan shape, "invalid" for one the validator rejected (as the evaluations count it)."""
    if not sample["valid"]:
        return "invalid"
    try:
        return plan_shape(parse_plan(sample["completion"]))
    except PlanError:
        return "invalid"


def shape_shares(shaped: list[tuple[int, str]]) -> dict:
    """Of (step, shape) pairs: the last step's shapes and the top one's share (issue #24's collapse mark: no
    shape above 80%), and the same over the last 4 steps."""
    last = max(step for step, _ in shaped)
    shapes_last = Counter(shape for step, shape in shaped if step == last)
    # One question a step: a last step of 8 `python` plans on an arithmetic question is no collapse, so the
    # last 4 steps (4 questions) are shown beside it.
    shapes_4 = Counter(shape for step, shape in shaped if step > last - 4)
    return {
        "last_step": last,
        "last": dict(shapes_last.most_common()),
        "top_share": max(shapes_last.values()) / sum(shapes_last.values()),
        "last_4": dict(shapes_4.most_common()),
        "top_share_4": max(shapes_4.values()) / sum(shapes_4.values()),
    }


def sampled_shapes(samples: list[dict]) -> dict:
    """What training sampled (and, under a diverse group, kept): `shape_shares`, and each (question kind,
    shape)'s plans and mean reward over the run (what the reward told the policy)."""
    if not samples:
        return {}
    shaped = [(s, sample_shape(s)) for s in samples]  # each completion parsed once
    cells: dict[str, list[float]] = defaultdict(list)
    for s, shape in shaped:
        if s["reward"] is not None:
            cells[f"{s['question_id'].split('/')[0]} · {shape}"].append(s["reward"])
    return {
        **shape_shares([(s["step"], shape) for s, shape in shaped]),
        "reward": {
            k: {"plans": len(v), "mean": statistics.fmean(v)}
            for k, v in sorted(cells.items(), key=lambda kv: -len(kv[1]))
        },
    }


def drawn_shapes(arm_dir: Path, max_steps: int) -> dict:
    """Under a diverse group (`diverse_draws`), every plan the policy drew, kept or not (`draws.jsonl`): the
    collapse mark is read here, on the policy's own samples, not on the group chosen from them."""
    shaped = [(r.step, shape) for r in read_draws(arm_dir) if r.step < max_steps for shape in r.shapes]
    return shape_shares(shaped) if shaped else {}


def diverged(curve: list[dict], samples: list[dict], max_steps: int) -> str | None:
    """Why a run counts as diverged (it stays in every table, as what that seed gave), or None. A NaN loss
    shows here too: the policy it leaves writes no valid plan, or its rewards stop being numbers."""
    if any(s["reward"] is not None and not math.isfinite(s["reward"]) for s in samples):
        return "a non-finite reward"
    if curve and curve[-1]["step"] == max_steps - 1 and curve[-1]["valid"] == 0:
        return "every plan of the last step invalid"
    return None


# Kinds compared across training runs (issue #24's marks): the RM arms against each content-blind reward and
# against execution, and each from-scratch remedy against plain `scratch`.
KIND_PAIRS = (
    ("rm", "router"),
    ("rm", "prior"),
    ("rm", "valid"),
    ("rm", "execute"),
    ("rm-decoder", "router"),
    ("rm-decoder", "prior"),
    ("rm-decoder", "valid"),
    ("rm-decoder", "execute"),
    ("router", "prior"),
    ("router", "execute"),
    # what validity alone leaves: each other reward against `valid` (issue #47's claims)
    ("execute", "valid"),
    ("router", "valid"),
    ("prior", "valid"),
    ("scratch-kl", "scratch"),
    ("scratch-entropy", "scratch"),
    ("execute", "scratch"),
    ("scratch-kl", "execute"),
    ("scratch-entropy", "execute"),
    ("scratch-entropy", "scratch-kl"),
    ("scratch-diverse", "scratch"),
    ("scratch-diverse", "execute"),
    ("scratch-diverse", "scratch-entropy"),
)
CONTENT_BLIND = ("router", "prior", "valid")


def across_seeds(out: dict, evals: Path, load: Callable[[Path], dict | None]) -> tuple[dict, list[dict]]:
    """Each kind's runs (training seeds, repeats) at its final evaluated step, and the differences between
    kinds at a step both reached, with `orchrm.bon.stats.across_runs` intervals (a t interval whose unit is
    the training run, plus which questions were drawn; a difference paired by seed where both kinds ran at
    least 3 of the same seeds, Welch's otherwise) and, for a difference, its TOST against ±5 points and its
    reading. Runs with different plans per question are compared on their first plan alone (one footing)."""
    at: dict[str, dict[int, dict[str, dict]]] = defaultdict(lambda: defaultdict(dict))  # kind -> step -> run -> eval
    for arm in out["arms"]:
        for step, folder, _ in evaluated(evals, arm):
            if (e := load(folder)) is not None:
                at[kind(arm)][step][arm] = e

    def columns(evs: list[dict], first: bool, qs: list[str]) -> list[list[float]]:
        return [[e["first" if first else "per_question"][q] for q in qs] for e in evs]

    def footing(evs: list[dict]) -> bool:  # True: first plan only
        return len({e["plans"] / len(e["per_question"]) for e in evs}) > 1

    def seeds(evs: dict[str, dict]) -> list[int]:
        return [out["arms"][a]["seed"] for a in evs]

    kinds = {}
    for k, steps in at.items():
        step = max(steps)
        evs = list(steps[step].values())
        qs = sorted(set.intersection(*(set(e["per_question"]) for e in evs)))
        first = footing(evs)
        runs = [a for a in out["arms"] if kind(a) == k]
        kinds[k] = {
            "runs": runs,
            "seeds": [out["arms"][a]["seed"] for a in runs],
            "step": step,
            "evaluated": list(steps[step]),
            "evaluated_seeds": [out["arms"][a]["seed"] for a in steps[step]],
            "questions": len(qs),
            "footing": "first plan" if first else "all plans",
            "accuracy": across_runs(columns(evs, first, qs), seeds=seeds(steps[step])).model_dump(),
            "diverged": {a: out["arms"][a]["diverged"] for a in runs if out["arms"][a]["diverged"]},
        }
    diffs: dict[tuple[str, str], str] = {}  # (kind, minus) -> note; a pair is compared once, its first note kept
    blind = [k for k in CONTENT_BLIND if k in kinds]
    for one in ("rm", "rm-decoder"):  # the mark's reading: rm against the best content-blind kind at its step
        if one in kinds and blind:
            best = max(
                (k for k in blind if kinds[k]["step"] == kinds[one]["step"]),
                default=None,
                key=lambda k: kinds[k]["accuracy"]["value"],
            )
            if best is not None:
                diffs[(one, best)] = "best content-blind"
    for a, b in KIND_PAIRS:
        if a in kinds and b in kinds:
            diffs.setdefault((a, b), "")
    table = []
    for (a, b), note in diffs.items():
        step = min(kinds[a]["step"], kinds[b]["step"])
        if step not in at[a] or step not in at[b]:
            continue
        ea, eb = list(at[a][step].values()), list(at[b][step].values())
        qs = sorted(set.intersection(*(set(e["per_question"]) for e in ea + eb)))
        first = footing(ea + eb)
        c = compare(
            columns(ea, first, qs), columns(eb, first, qs), seeds=seeds(at[a][step]), seeds_minus=seeds(at[b][step])
        )
        table.append(
            {
                "kind": a,
                "minus": b,
                "note": note,
                "step": step,
                "runs": [len(ea), len(eb)],
                "seeds": [seeds(at[a][step]), seeds(at[b][step])],
                "questions": len(qs),
                "footing": "first plan" if first else "all plans",
                "points": c.interval.model_dump(),
                "equivalence": c.equivalence.model_dump(),
                "reading": c.reading,
            }
        )
        shared = sorted(set(seeds(at[a][step])) & set(seeds(at[b][step])))
        if not c.interval.paired and len(shared) >= 2:  # like with like: the seeds both kinds ran, paired
            sa = {out["arms"][r]["seed"]: e for r, e in at[a][step].items() if out["arms"][r]["seed"] in shared}
            sb = {out["arms"][r]["seed"]: e for r, e in at[b][step].items() if out["arms"][r]["seed"] in shared}
            c2 = compare(
                columns([sa[x] for x in shared], first, qs),
                columns([sb[x] for x in shared], first, qs),
                seeds=shared,
                seeds_minus=shared,
                min_pairs=2,
            )
            table.append(
                {
                    "kind": a,
                    "minus": b,
                    "note": "shared seeds only",
                    "step": step,
                    "runs": [len(shared)] * 2,
                    "seeds": [shared, shared],
                    "questions": len(qs),
                    "footing": "first plan" if first else "all plans",
                    "points": c2.interval.model_dump(),
                    "equivalence": c2.equivalence.model_dump(),
                    "reading": c2.reading,
                }
            )
    return kinds, table


def summarize(args: argparse.Namespace, root: Path) -> dict:
    load = functools.cache(read_evaluation)  # each folder read once per summary
    evals = evals_dir(root, args.eval_skip)
    starts = {label: e for label in sorted(set(BASE_OF.values())) if (e := load(evals / label))}
    out = {
        "task": args.task,
        "eval_questions": len(starts["base"]["per_question"]) if "base" in starts else args.eval_questions,
        "starts": {
            k: described(e, list(e["per_question"]), Bootstrap(len(e["per_question"]), seed=0))
            for k, e in starts.items()
        },
        "pair_collection_tokens": pair_collection_tokens(),
        "arms": {},
    }
    for arm in arms_on_disk(root):
        start = starts.get(BASE_OF[kind(arm)])
        base = start["per_question"] if start else None
        n = len(base) if base is not None else args.eval_questions
        out["arms"][arm] = {
            "start": BASE_OF[kind(arm)],
            **arm_summary(root / "arms" / arm, evals, base, Bootstrap(n, seed=0), load),
        }
    out["paired"] = []
    for one, other in PAIRED:  # arms on the same questions: paired intervals, not two separate ones
        steps = {a: {step: folder for step, folder, _ in evaluated(evals, a)} for a in (one, other)}
        common = sorted(set(steps[one]) & set(steps[other]))
        if one not in out["arms"] or other not in out["arms"] or not common:
            continue
        for step in common:
            a, b = (load(steps[arm][step])["per_question"] for arm in (one, other))
            qs = sorted(set(a) & set(b))
            diff = Bootstrap(len(qs), seed=0).diff([a[q] for q in qs], [b[q] for q in qs]).model_dump()
            out["paired"].append({"arm": one, "minus": other, "step": step, "questions": len(qs), "points": diff})
        out[f"{one}_minus_{other}"] = out["paired"][-1]["points"]  # at the last step both evaluated
    out["kinds"], out["across_runs"] = across_seeds(out, evals, load)
    (root / results_name(args.eval_skip)).write_text(json.dumps({**out, "stamp": stamp()}, indent=2) + "\n")
    return out


def _iv(d: dict | None, scale: float = 100) -> str:
    if not d or d.get("value") is None:
        return "—"
    if d.get("low") is None:  # one run: no interval across runs
        return f"{d['value'] * scale:.1f} (one run)"
    return f"{d['value'] * scale:.1f} [{d['low'] * scale:.1f}, {d['high'] * scale:.1f}]"


def _points(xs: list[float] | None, scale: float = 100) -> str:
    return "—" if not xs else " / ".join(f"{x * scale:+.1f}" for x in xs)


def _method(d: dict) -> str:
    return "—" if d.get("method") is None else f"{d['method']}, df {d['df']:.1f}"


def _tost(eq: dict) -> str:
    iv = eq["interval"]
    if iv.get("low") is None:
        return "—"
    verdict = "equivalent" if eq["equivalent"] else "not shown"
    return f"{verdict}: p={eq['p_value']:.3f}, 90% [{iv['low'] * 100:.1f}, {iv['high'] * 100:.1f}]"


def marks(r: dict) -> list[str]:
    """Issue #15's marks as measured, for each RM-rewarded arm: the gain over the base, execute's accuracy and
    tokens at the last evaluated step of each (and at the RM arm's first step that reaches it), step time."""
    ex = r["arms"].get("execute", {})
    last = lambda a: a["evals"][-1] if a.get("evals") else None  # noqa: E731
    out = ["| mark (issue #15) | arm | target | measured |", "|---|---|---|---|"]
    for name in ("rm", "rm-decoder"):
        rm = r["arms"].get(name, {})
        if last(rm):
            out.append(
                f"| RM-guided − base, points (sampled plans, executed) | {name} | ≥ +10 | "
                f"{_iv(last(rm)['minus_base'])} |"
            )
        if last(rm) and last(ex):
            a, b = last(rm), last(ex)
            with_pairs = a["tokens"] + r["pair_collection_tokens"]
            out.append(
                f"| RM-guided reaches execute's accuracy | {name} | within the interval | "
                f"{name} {_iv(a['accuracy'])} vs execute "
                f"{_iv(b['accuracy'])}; paired {name} − execute {_iv(r.get(f'{name}_minus_execute'))} points |"
            )
            out.append(
                f"| execute's tokens / RM-guided's | {name} | ≥ 5× | "
                f"{b['tokens'] / a['tokens']:.2f}× ({b['tokens']:,} / {a['tokens']:,}); "
                f"with the RM's pair collection {b['tokens'] / with_pairs:.2f}× (/ {with_pairs:,}) |"
            )
            # The curve's reading of the mark: the first evaluated step at or above execute's final accuracy.
            first = next((p for p in rm["evals"] if p["accuracy"]["value"] >= b["accuracy"]["value"]), None)
            if first is not None and first is not a:
                out.append(
                    "| execute's tokens / RM-guided's, at the first step reaching execute's final accuracy "
                    f"| {name} | ≥ 5× | step {first['step']} ({_iv(first['accuracy'])}): "
                    f"{b['tokens'] / first['tokens']:.2f}× (/ {first['tokens']:,}); "
                    f"with pair collection {b['tokens'] / (first['tokens'] + r['pair_collection_tokens']):.2f}× |"
                )
        for prior in ("prior", "prior.2"):
            if r.get(f"{name}_minus_{prior}"):
                out.append(
                    f"| RM-guided − shape-prior-guided ({prior}; the cheapest reward that could fake it) "
                    f"| {name} | above 0 | "
                    f"{_iv(r[f'{name}_minus_{prior}'])} points |"
                )
        steps = rm.get("step_time", {})
        if steps.get("step_s") is not None:
            out.append(
                f"| RM-guided step, 1 question × {rm['group_size']} plans | {name} | ≤ 60 s | "
                f"mean {steps['step_s']:.1f} s over its steps |"
            )
    if r.get("rm-decoder_minus_rm"):
        out.append(
            "| decoder RM's reward − MiniLM RM's (paired, last steps) | rm-decoder | — | "
            f"{_iv(r['rm-decoder_minus_rm'])} points |"
        )
    return out


ACROSS_RUNS_NOTE = (
    "Across training runs (final evaluated step). 95% intervals from `orchrm.bon.stats.across_runs`: a t interval "
    "whose unit is the training run (runs − 1 degrees of freedom), plus the variance of which questions were drawn "
    "(Satterthwaite's df); a difference is paired by training seed when both kinds ran at least 3 of the same seeds "
    "(only those seeds used), Welch's t otherwise (unpaired). Coverage checked by simulation "
    "(tests/bon/test_stats_coverage.py). One run: no interval. TOST: two one-sided tests against ±5 points "
    "(equivalent when the 90% interval lies inside the margin)."
)


def across_runs_lines(r: dict) -> list[str]:
    """The two across-runs tables: each kind's accuracy, and each difference with its TOST and reading."""
    lines = [
        "",
        ACROSS_RUNS_NOTE,
        "",
        "| kind | runs (training seeds) | step | questions | footing "
        "| accuracy % [95% CI] | run means % | method | diverged |",
        "|---" * 9 + "|",
    ]
    for k, v in r.get("kinds", {}).items():
        seeds = ", ".join(map(str, v["evaluated_seeds"]))  # of the runs evaluated here
        acc, gone = v["accuracy"], "; ".join(f"{a}: {w}" for a, w in v["diverged"].items()) or "—"
        means = " / ".join(f"{x * 100:.1f}" for x in acc.get("run_means", []))
        lines.append(
            f"| {k} | {len(v['evaluated'])} of {len(v['runs'])} ({seeds}) | {v['step']} | {v['questions']} "
            f"| {v['footing']} | {_iv(acc)} | {means} | {_method(acc)} | {gone} |"
        )
    lines += [
        "",
        "| kind − kind | step | seeds used | questions | footing | points [95% CI] | method "
        "| per-seed differences | TOST ±5 | reading |",
        "|---" * 10 + "|",
    ]
    for d in r.get("across_runs", []):
        name = f"{d['kind']} − {d['minus']}" + (f" ({d['note']})" if d["note"] else "")
        pts = d["points"]
        used = (
            ", ".join(map(str, pts["seeds"]))
            if pts["paired"]
            else " vs ".join(", ".join(map(str, s)) for s in d["seeds"])
        )
        lines.append(
            f"| {name} | {d['step']} | {'paired ' if pts['paired'] else ''}{used} | {d['questions']} "
            f"| {d['footing']} | {_iv(pts)} | {_method(pts)} | {_points(pts.get('differences'))} "
            f"| {_tost(d['equivalence'])} | {d['reading']} |"
        )
    return lines


def markdown(r: dict) -> str:
    lines = [
        f"## {r['task']}: {r['eval_questions']} held-out questions, sampled plans executed "
        "(accuracy: the mean over questions of each one's share of correct plans)",
        "",
        "| run | step | plans | accuracy % [95% CI] | first plan only % | − its start, points "
        "| tokens (cumulative) | plan shapes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, st in r["starts"].items():
        lines.append(
            f"| {label} (untrained) | 0 | {st['plans']} | {_iv(st['accuracy'])} | {_iv(st['first_plan'])} "
            f"| — | 0 | {st['shapes']} |"
        )
    for arm, a in r["arms"].items():
        for p in a["evals"]:
            lines.append(
                f"| {arm} (from {a['start']}) | {p['step']} | {p['plans']} | {_iv(p['accuracy'])} "
                f"| {_iv(p['first_plan'])} | "
                f"{_iv(p['minus_base'])} | {p['tokens']:,} | {p['shapes']} |"
            )
    lines += ["", "Per question kind (correct / plans · plan shapes):", ""]
    rows = [(f"{k} (untrained)", st["by_kind"]) for k, st in r["starts"].items()]
    rows += [(f"{arm} step {p['step']}", p["by_kind"]) for arm, a in r["arms"].items() for p in a["evals"]]
    for label, kinds in rows:
        lines.append(
            f"- {label}: " + "; ".join(f"{k} {c['correct']}/{c['plans']} {c['shapes']}" for k, c in kinds.items())
        )
    multi = [(f"{k} (untrained)", st["by_index"]) for k, st in r["starts"].items()]
    multi += [(f"{arm} step {p['step']}", p["by_index"]) for arm, a in r["arms"].items() for p in a["evals"]]
    lines += ["", "Correct / invalid plans by plan index (plan i of every question is drawn with seed + i):", ""]
    lines += [
        f"- {label}: correct {b['correct']}, invalid {b['invalid']}" for label, b in multi if len(b["correct"]) > 1
    ]
    lines += [
        "",
        "Paired differences (same questions, same step):",
        "",
        "| arm − arm | step | questions | points [95% CI] |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {p['arm']} − {p['minus']} | {p['step']} | {p['questions']} | {_iv(p['points'])} |"
        for p in r.get("paired", [])
    ]
    lines += [
        "",
        "| arm | steps | tokens by category | generation / sync / reward / update s per step |",
        "|---|---|---|---|",
    ]
    for arm, a in r["arms"].items():
        cats = ", ".join(f"{k} {v['total_tokens']:,}" for k, v in a["tokens"].items())
        t = a["step_time"]
        times = " / ".join(
            "—" if t[k] is None else f"{t[k]:.1f}" for k in ("generation_s", "sync_s", "reward_s", "update_s")
        )
        lines.append(f"| {arm} | {a['steps_done']} | {cats} | {times} |")
    lines += across_runs_lines(r)
    lines += ["", *marks(r)]
    lines += [
        "",
        "Sampled plan shapes at the last training step (top shape's share; the collapse mark: ≤ 80%) "
        "· over the last 4 steps:",
        "",
    ]
    lines += [
        f"- {arm}: {h['last']} ({h['top_share']:.0%}) · {h['last_4']} ({h['top_share_4']:.0%})"
        for arm, a in r["arms"].items()
        if (h := a.get("sampled_shapes"))
    ]
    drawn = [(arm, h) for arm, a in r["arms"].items() if (h := a.get("drawn_shapes"))]
    if drawn:  # a diverse group is chosen from the draws: the policy's own collapse shows in what it drew
        lines += ["", "Every plan drawn (diverse group: kept or not), last step · last 4 steps:", ""]
        lines += [
            f"- {arm}: {h['last']} ({h['top_share']:.0%}) · {h['last_4']} ({h['top_share_4']:.0%})" for arm, h in drawn
        ]
    lines += [
        "",
        f"Tokens issue #13's training rollouts spent collecting the RM's pairs: {r['pair_collection_tokens']:,}.",
        "",
        "Training curve (mean reward, valid-plan share per step):",
        "",
    ]
    for arm, a in r["arms"].items():
        lines.append(f"- {arm}: " + ", ".join(f"{c['step']}: {c['reward']:.2f}/{c['valid']:.2f}" for c in a["curve"]))
    return "\n".join(lines) + "\n"


def report_file(args: argparse.Namespace) -> Path:
    return (
        HERE
        / "results"
        / ("train_orchestrator.md" if not args.eval_skip else f"train_orchestrator-skip{args.eval_skip}.md")
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default=TASK)
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--eval-every", type=int, default=8, help="Checkpoint (and evaluation) every K steps.")
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--train-questions", type=int, default=64)
    ap.add_argument("--eval-questions", type=int, default=30)
    ap.add_argument(
        "--eval-skip",
        type=int,
        default=0,
        help="Held-out questions after the first N of the test split (150: never used to choose an RM); "
        "evaluations in evals-skip<N>/, tables in results-skip<N>.json and train_orchestrator-skip<N>.md.",
    )
    ap.add_argument("--eval-plans", type=int, default=1)
    ap.add_argument("--plan-max-tokens", type=int, default=320)
    ap.add_argument("--agent-max-tokens", type=int, default=192)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--until", help="HH:MM: stop at the first checkpoint after it, and start no evaluation after it.")
    ap.add_argument("--tables-only", action="store_true")
    ap.add_argument("--eval-steps", help="Evaluate only these checkpoint steps (comma-separated); default all.")
    ap.add_argument(
        "--no-base",
        action="store_true",
        help="Evaluate no base orchestrator before the arms (arm against arm needs none; run it later).",
    )
    ap.add_argument("--only-train", help=argparse.SUPPRESS)  # one arm's training, in a process of its own
    args = ap.parse_args()
    root = HERE / "results" / "train_orchestrator" / slug(args.task)
    root.mkdir(parents=True, exist_ok=True)
    deadline = clock.at(args.until) if args.until else None
    late = lambda: deadline is not None and time.time() > deadline  # noqa: E731
    if args.only_train:
        train_arm(args.only_train, args, root, deadline)
        return
    if not args.tables_only:
        wanted = {int(x) for x in args.eval_steps.split(",")} if args.eval_steps else None
        for arm in args.arms.split(","):
            examples = not bare(arm)
            if not late() and not args.no_base:
                evaluate(BASE_OF[kind(arm)], None, args, root, examples)
            if late():
                break
            if gone(root, arm):
                continue
            # Each arm trains in a process of its own: a finished trainer's memory (10+ GB here) is not all
            # given back, and the next arm would start beside it.
            subprocess.run([sys.executable, __file__, *sys.argv[1:], "--only-train", arm], check=True)
            for step, path in eval_points(root / "arms" / arm):
                if not late() and (wanted is None or step in wanted):
                    evaluate(f"{arm}:step-{step}", path, args, root, examples)
            report_file(args).write_text(markdown(summarize(args, root)))
    report = markdown(summarize(args, root))  # every trace read once more, so once
    report_file(args).write_text(report)
    print(report)


if __name__ == "__main__":
    main()
