"""From rollout traces to win-lose plan pairs, with no human labels.

Sources (each pair is tagged with one):
- `correct-over-incorrect`: the plan's execution reached a verified-correct answer, the other's did not;
- `specialized-over-base`: a plan sampled by the run labelled specialized vs one from the run labelled base;
- `artifact`: a valid plan over an invalid one; a plan whose agents all completed over one with failures;
- `consensus` (questions without a gold answer): plans whose answer agrees with a strong majority of that
  question's executions over plans that disagree or gave none;
- `counterfactual`: an executed plan and an edit of it (`pairs/counterfactual.py`), paired by outcome alone: the
  correct one over the incorrect one; an edit that keeps the outcome gives no pair. An edit that made the plan
  invalid gives at most a validity pair, source `artifact` (reason `valid-over-invalid-edit`, and only when
  `artifact` is a source too). Edited plans are paired with their source plan only, never with its siblings.
  Metadata: the edit's kind, description and index, and which side (`edited`) is the edit.

Identical plans are merged, a plan pair gets at most one source (the first in `PairConfig.sources` order;
pairs whose sources disagree on the winner are dropped and counted), pairs per question are capped
(counterfactual pairs under a cap of their own), sources are balanced, and the split is by question. Everything
left out is counted in the stats.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import product

from ..mas.plans import plan_shape
from ..mas.traces import Trace
from ..tasks.scoring import answer_key
from .config import PairConfig
from .counterfactual import Counterfactual, plan_digest
from .render import render_plan, render_question
from .rows import PairRow
from .stats import EditCount, PairStats, SourceCount


@dataclass
class PairSet:
    train: list[PairRow]
    val: list[PairRow]
    stats: PairStats = field(default_factory=PairStats)


def _all_agents_ok(t: Trace) -> bool:
    return t.executed and bool(t.agents) and all(a.status == "ok" for a in t.agents)


def _candidates(plans: list[Trace], cfg: PairConfig, stats: PairStats) -> list[tuple[Trace, Trace, str, dict]]:
    """Every (winner, loser, source, metadata) the sources support for one question's distinct plans."""
    out: list[tuple[Trace, Trace, str, dict]] = []
    for source in cfg.sources:
        if source == "correct-over-incorrect":
            right = [t for t in plans if t.executed and t.score and t.score.error is None and t.score.correct is True]
            wrong = [t for t in plans if t.executed and t.score and t.score.error is None and t.score.correct is False]
            out += [
                (w, lo, source, {"answers": [w.final_answer, lo.final_answer]})
                for w, lo in product(right, wrong)
                if not cfg.same_shape or _same_shape(w, lo)
            ]
        elif source == "specialized-over-base" and cfg.specialized is not None:
            spec = [t for t in plans if t.orchestrator.checkpoint == cfg.specialized]
            base = [t for t in plans if t.orchestrator.checkpoint == cfg.base]
            out += [(w, lo, source, {"checkpoints": [cfg.specialized, cfg.base]}) for w, lo in product(spec, base)]
        elif source == "artifact":
            valid = [t for t in plans if t.valid]
            invalid = [t for t in plans if not t.valid]
            out += [(w, lo, source, {"reason": "valid-over-invalid"}) for w, lo in product(valid, invalid)]
            clean = [t for t in valid if _all_agents_ok(t)]
            failed = [t for t in valid if t.executed and any(a.status == "failed" for a in t.agents)]
            out += [(w, lo, source, {"reason": "completed-over-failed"}) for w, lo in product(clean, failed)]
        elif source == "consensus":
            out += _consensus(plans, cfg)
    return out


def _same_shape(a: Trace, b: Trace) -> bool:
    return a.plan is not None and b.plan is not None and plan_shape(a.plan) == plan_shape(b.plan)


def _consensus(plans: list[Trace], cfg: PairConfig) -> list[tuple[Trace, Trace, str, dict]]:
    if any(t.gold for t in plans):
        return []  # a gold answer exists: correct-over-incorrect is the better label
    executed = [t for t in plans if t.executed]
    keys = {id(t): answer_key(t.final_answer) for t in executed}
    votes = Counter(k for k in keys.values() if k is not None)
    if not votes:
        return []
    (top, top_n), *rest = votes.most_common()
    runner_up = rest[0][1] if rest else 0
    if top_n / sum(votes.values()) < cfg.min_agreement or top_n - runner_up < cfg.min_margin:
        return []
    agree = [t for t in executed if keys[id(t)] == top]
    disagree = [t for t in executed if keys[id(t)] != top]
    meta = {"majority": top, "agreement": round(top_n / sum(votes.values()), 3)}
    return [(w, lo, "consensus", meta) for w, lo in product(agree, disagree)]


def _edits_by_question(
    edits: Sequence[Counterfactual], stats: PairStats
) -> dict[tuple[str, str], list[Counterfactual]]:
    by_question: dict[tuple[str, str], list[Counterfactual]] = defaultdict(list)
    for cf in edits:
        by_question[(cf.edit.task, cf.edit.question_id)].append(cf)
        stats.edits.setdefault(cf.edit.kind, EditCount()).tried += 1
    return by_question


def _counterfactual(
    group: list[Trace], edits: list[Counterfactual], cfg: PairConfig, stats: PairStats
) -> list[tuple[Trace, Trace, str, dict]]:
    """(winner, loser, source, metadata) of each edit against its own source plan, by outcome alone."""
    sources = {(t.plan_index, plan_digest(t.plan)): t for t in group if t.plan is not None}
    out: list[tuple[Trace, Trace, str, dict]] = []
    for cf in edits:
        e, edited, count = cf.edit, cf.trace, stats.edits[cf.edit.kind]
        source = sources.get((e.source_index, e.source_plan))
        if source is None:
            stats.edits_without_source += 1
            continue
        meta = {
            "edit": e.kind,
            "description": e.description,
            "edit_index": e.edit_index,
            "source_index": e.source_index,
        }
        if not e.valid or (edited is not None and not edited.valid):
            count.invalid += 1
            if "artifact" in cfg.sources and edited is not None:
                out.append((source, edited, "artifact", {"reason": "valid-over-invalid-edit", **meta}))
            continue
        if edited is None or not edited.executed:
            count.unfinished += 1
            continue
        count.executed += 1
        was, now = _outcome(source), _outcome(edited)
        if was is None or now is None:
            count.unscored += 1
        elif was == now:
            count.same_outcome += 1
        else:
            w, lo = (source, edited) if was else (edited, source)
            meta |= {"edited": "rejected" if was else "chosen", "answers": [w.final_answer, lo.final_answer]}
            out.append((w, lo, "counterfactual", meta))
    return out


def _outcome(t: Trace) -> bool | None:
    """Whether an execution was verified correct; None when it has no usable score."""
    return t.score.correct if t.score is not None and t.score.error is None else None


def _in_val(question_id: str, cfg: PairConfig) -> bool:
    digest = hashlib.sha256(f"{cfg.seed}:{question_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < cfg.val_fraction


def build_pairs(
    traces: list[Trace], cfg: PairConfig | None = None, counterfactual: Sequence[Counterfactual] = ()
) -> PairSet:
    """Pairs from `traces`, and (source `counterfactual`) from the edits of their plans in `counterfactual`."""
    cfg = cfg or PairConfig()
    stats = PairStats(traces=len(traces))
    by_question = _by_question(traces, stats)
    edits = _edits_by_question(counterfactual if "counterfactual" in cfg.sources else (), stats)
    rng = random.Random(cfg.seed)
    rows: list[PairRow] = []
    no_pair: Counter[str] = Counter()
    for (task, qid), group in sorted(by_question.items()):
        chosen = _question_pairs(group, cfg, stats, rng, edits.pop((task, qid), []))
        if isinstance(chosen, str):
            no_pair[chosen] += 1
            continue
        stats.questions_with_pairs += 1
        prompt = render_question(group[0].question)
        for w, lo, source, meta in chosen:
            rows.append(
                PairRow(
                    prompt=prompt,
                    chosen=render_plan(w.plan or w.plan_text, version=cfg.render_version),
                    rejected=render_plan(lo.plan or lo.plan_text, version=cfg.render_version),
                    source=source,  # type: ignore[arg-type]
                    question_id=qid,
                    task=task,
                    metadata={**meta, "plan_indices": [w.plan_index, lo.plan_index]},
                )
            )
    stats.questions_without_pairs = dict(no_pair)
    stats.edits_without_source += sum(len(e) for e in edits.values())
    rows = _balance(rows, cfg, stats, rng)
    for r in rows:
        if r.source == "counterfactual":
            stats.edits[r.metadata["edit"]].paired += 1
    train = [r for r in rows if not _in_val(r.question_id, cfg)]
    val = [r for r in rows if _in_val(r.question_id, cfg)]
    stats.train_questions = len({r.question_id for r in train})
    stats.val_questions = len({r.question_id for r in val})
    for split, part in (("train", train), ("val", val)):
        for r in part:
            count = stats.per_source.setdefault(r.source, SourceCount())
            setattr(count, split, getattr(count, split) + 1)
    return PairSet(train=train, val=val, stats=stats)


def _by_question(traces: list[Trace], stats: PairStats) -> dict[tuple[str, str], list[Trace]]:
    """The traces grouped by (task, question id), with the read counts put in `stats`."""
    by_question: dict[tuple[str, str], list[Trace]] = defaultdict(list)
    plan_models: Counter[str] = Counter()
    agent_models: Counter[str] = Counter()
    for t in traces:
        by_question[(t.task, t.question_id)].append(t)
        plan_models[t.orchestrator.model_id] += 1
        if t.executed:
            agent_models[t.agent_model] += 1
        if t.executed and t.score is None:
            stats.unscored_executions += 1
        if t.score is not None and t.score.error is not None:
            stats.scorer_errors += 1
    stats.questions = len(by_question)
    stats.orchestrator_models, stats.agent_models = (
        dict(sorted(plan_models.items())),
        dict(sorted(agent_models.items())),
    )
    return by_question


def _question_pairs(
    group: list[Trace], cfg: PairConfig, stats: PairStats, rng: random.Random, edits: list[Counterfactual]
) -> list[tuple[Trace, Trace, str, dict]] | str:
    """One question's pairs (identical plans merged, one source per plan pair, capped), or why it has none."""
    distinct: dict[str, Trace] = {}
    for t in sorted(group, key=lambda t: (t.orchestrator.checkpoint, t.plan_index)):
        distinct.setdefault(render_plan(t.plan or t.plan_text), t)
    stats.duplicate_plans_merged += len(group) - len(distinct)
    plans = list(distinct.values())
    cands = (_candidates(plans, cfg, stats) if len(plans) >= 2 else []) + _counterfactual(group, edits, cfg, stats)
    if len(plans) < 2 and not cands:
        return "fewer than two distinct plans"
    chosen = _resolve(cands, stats)
    if not chosen:
        return "no source separates its plans"
    edited = [c for c in chosen if c[2] == "counterfactual"]
    others = [c for c in chosen if c[2] != "counterfactual"]
    return _capped(others, cfg.max_pairs_per_question, stats, rng) + _capped(
        edited, cfg.max_counterfactual_per_question, stats, rng
    )


def _capped(cands: list, limit: int, stats: PairStats, rng: random.Random) -> list:
    if len(cands) <= limit:
        return cands
    stats.pairs_over_question_cap += len(cands) - limit
    return _round_robin(cands, limit, rng)


def _resolve(cands: list[tuple[Trace, Trace, str, dict]], stats: PairStats) -> list[tuple[Trace, Trace, str, dict]]:
    """One pair per unordered plan pair: the first source wins; opposite verdicts cancel out."""
    kept: dict[frozenset[int], tuple[Trace, Trace, str, dict]] = {}
    conflicted: set[frozenset[int]] = set()
    for cand in cands:
        w, lo = cand[0], cand[1]
        key = frozenset((id(w), id(lo)))
        if key in conflicted:
            continue
        if key not in kept:
            kept[key] = cand
        elif kept[key][0] is not w:
            conflicted.add(key)
            del kept[key]
            stats.conflicting_pairs_dropped += 1
    return list(kept.values())


def _round_robin(cands: list, limit: int, rng: random.Random) -> list:
    """`limit` pairs, alternating between sources so a plentiful source cannot crowd out a rare one."""
    by_source: dict[str, list] = defaultdict(list)
    for c in cands:
        by_source[c[2]].append(c)
    for group in by_source.values():
        rng.shuffle(group)
    out: list = []
    while len(out) < limit:
        for group in by_source.values():
            if group and len(out) < limit:
                out.append(group.pop())
    return out


def _balance(rows: list[PairRow], cfg: PairConfig, stats: PairStats, rng: random.Random) -> list[PairRow]:
    counts = Counter(r.source for r in rows)
    if len(counts) < 2 or cfg.max_source_share >= 1.0:
        return rows
    keep = set(range(len(rows)))
    for source, n in counts.items():
        others = sum(counts.values()) - n
        # Largest count k with k / (k + others) <= max_share.
        cap = int(cfg.max_source_share * others / (1 - cfg.max_source_share))
        if n > cap:
            idx = [i for i, r in enumerate(rows) if r.source == source]
            rng.shuffle(idx)
            drop = idx[: n - cap]
            keep -= set(drop)
            stats.pairs_dropped_to_balance[source] = len(drop)
    return [r for i, r in enumerate(rows) if i in keep]
