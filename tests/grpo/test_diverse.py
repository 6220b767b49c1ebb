"""A diverse group (issue #24's from-scratch remedy): of `draws` times the group, the first plan of every valid
shape is kept, then the earliest others; what was drawn and dropped is billed and written down."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_grpo_sampler import ScriptedEngine, eos_of, run
from test_grpo_train import config, count_b

from mas_fakes import make_task
from orchrm.errors import ConfigError
from orchrm.grpo import open_run, policy_weights, train_orchestrator
from orchrm.grpo.diverse import DRAWS_FILE, INVALID, DiverseDraws, diverse_pick, read_draws
from orchrm.mas.rollout import agent_types_for
from synthetic_traces import plan_text


@given(st.lists(st.sampled_from(["cot", "python", "search", INVALID]), min_size=2, max_size=24), st.data())
def test_every_valid_shape_drawn_is_kept_while_the_group_has_room(shapes, data):
    keep = data.draw(st.integers(1, len(shapes)))
    pick = diverse_pick(shapes, keep)
    assert len(pick) == keep and pick == sorted(set(pick))
    firsts = {s: shapes.index(s) for s in set(shapes) if s != INVALID}
    kept = {shapes[i] for i in pick if shapes[i] != INVALID}
    assert kept == set(firsts) if len(firsts) <= keep else len(kept) == keep
    # the rest of the room goes to the earliest draws: with one valid shape or none, that is plain sampling
    fillers = [i for i in pick if i not in firsts.values()]
    assert all(i < j for i in fillers for j in set(range(len(shapes))) - set(pick))


def test_a_collapsed_group_keeps_the_one_other_shape_the_policy_still_writes():
    shapes = ["search"] * 7 + [INVALID] * 4 + ["python"] + ["search"] * 4
    assert diverse_pick(shapes, 8) == [0, 1, 2, 3, 4, 5, 6, 11]
    with pytest.raises(ValueError, match="cannot keep"):
        diverse_pick(shapes[:3], 4)


class Texts:
    """A tokenizer stand-in: token id i decodes to texts[i]."""

    def __init__(self, texts):
        self.texts = texts

    def decode(self, ids, skip_special_tokens=True):
        return "".join(self.texts[i] for i in ids)


def test_draws_are_seeded_past_the_plain_group_and_the_dropped_ones_are_written_down(tmp_path):
    texts = [plan_text("debate"), plan_text("python"), "not a plan", plan_text("cot")]
    drawn = [[0], [0], [2], [0], [1], [0], [3], [0]]  # 2 draws of a group of 4: debate x5, invalid, python, cot
    calls = []

    def complete(ids, seeds):
        calls.append((ids, seeds))
        return drawn

    task = make_task(tmp_path)
    diverse = DiverseDraws(2, Texts(texts), degree="dag", agent_types=agent_types_for(task), log=tmp_path / DRAWS_FILE)
    kept, unkept = diverse.sample([[7, 7]] * 4, [100, 102, 104, 106], complete, step=3)
    [(ids, seeds)] = calls
    assert ids == [[7, 7]] * 8 and seeds == list(range(100, 108))  # the plain group's seeds first, then the extra
    assert kept == [[0], [0], [1], [3]]  # draws 0, 1, 4, 6: debate, debate, python, cot
    assert unkept == [[1, 1, 1, 1], [], [], []]
    [record] = [json.loads(x) for x in (tmp_path / DRAWS_FILE).read_text().splitlines()]
    assert record == {
        "step": 3,
        "shapes": ["debate", "debate", INVALID, "debate", "python", "debate", "cot", "debate"],
        "kept": [0, 1, 4, 6],
        "attempt": 0,
    }


def test_a_resumed_run_s_redrawn_step_supersedes_the_draws_a_kill_cut_short(tmp_path):
    task = make_task(tmp_path)
    texts = [plan_text("cot"), plan_text("python")]

    def draw(step, drawn):
        diverse = DiverseDraws(
            2, Texts(texts), degree="dag", agent_types=agent_types_for(task), log=tmp_path / DRAWS_FILE
        )
        diverse.sample([[7]] * 2, [1, 2], lambda ids, seeds: drawn, step=step)
        return diverse.attempt

    assert draw(0, [[0], [0], [0], [0]]) == 0
    assert draw(1, [[0], [0], [0], [0]]) == 1  # a second start of the run: step 1 cut short by a kill ...
    assert draw(1, [[1], [0], [0], [0]]) == 2  # ... and drawn again after the resume
    assert [(r.step, r.attempt, r.shapes[0]) for r in read_draws(tmp_path)] == [(0, 0, "cot"), (1, 2, "python")]


def test_a_diverse_run_pays_for_every_draw(tmp_path, policy_dir):
    out = tmp_path / "run"
    engine = ScriptedEngine(eos_of(policy_dir))
    run(tmp_path, policy_dir, out, engine, max_steps=2, diverse_draws=2)
    assert [len(ids) for ids, _ in engine.calls] == [8, 8]  # a group of 4, drawn twice, per step
    tokens = json.loads((out / "tokens.json").read_text())["categories"]
    assert tokens["plan"]["calls"] == 16
    assert tokens["plan"]["completion_tokens"] == sum(len(c) for c in engine.sampled)  # the dropped draws too
    records = [json.loads(x) for x in (out / DRAWS_FILE).read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 1] and all(
        len(r["shapes"]) == 8 and len(r["kept"]) == 4 for r in records
    )


def test_a_diverse_group_needs_the_server_sampler(tmp_path, policy_dir):
    cfg = config(sampler="trl", diverse_draws=2)
    ledger = open_run(tmp_path / "run", cfg)
    try:
        with pytest.raises(ConfigError, match="server sampler"):
            train_orchestrator(
                cfg, make_task(tmp_path), policy_weights(policy_dir), tmp_path / "run", ledger=ledger, reward=count_b
            )
    finally:
        ledger.close()
