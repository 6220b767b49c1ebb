"""A trainer's steps reported as a stage: the first line before the first step, heartbeats inside a long step,
and a last line that says why a trainer stopped early."""

import time

from test_progress import DELAY, INTERVAL

from orchrm.cli.progress import Mode, Reporter
from orchrm.cli.trainer_progress import stop_reason, trainer_progress
from timed_log import Timed, gaps, slow_training


def test_a_trainers_first_step_is_reported_before_it_ends_and_beats_while_it_runs():
    import transformers.trainer_callback  # noqa: F401 (imported before the clock starts: the import holds the GIL)

    out, spent = Timed(), [0]

    def meter() -> int:  # what the run has spent (GRPO: its ledger), growing inside the step
        spent[0] += 7
        return spent[0]

    with Reporter(Mode.lines, interval_s=INTERVAL, stream=out) as progress:
        start = time.monotonic()
        callback = trainer_progress(progress, "GRPO steps", tokens=meter)  # made before the trainer, as verbs do
        time.sleep(3 * INTERVAL)  # the trainer is made: the policy wrapped, the prompts tokenised
        slow_training([callback], steps=2, step_s=4 * INTERVAL)
        end = time.monotonic()
    steps = gaps(start, out, end)
    assert steps[0] < INTERVAL / 3 + DELAY and max(steps) <= INTERVAL + DELAY, steps
    text = out.text()
    assert text[0].endswith("GRPO steps: preparing the trainer (loading the model, tokenizing the data)")
    assert "preparing the trainer" in text[1] and "elapsed" in text[1]  # repeated while it is made
    begun = next(line for line in text if "GRPO steps 0/2" in line)
    assert "GRPO steps 0/2 (0%) · starting" in begun and "step 1 running" in begun
    first_step = [line for line in text if "GRPO steps 0/2" in line]
    assert len(first_step) >= 3 and len({line.split(" · ")[2] for line in first_step}) >= 2  # tokens move
    assert "GRPO steps 2/2 (100%) · done" in text[-1] and "loss 0.5000" in text[-1]


def test_a_trainers_own_token_count_is_shown_between_steps():
    out = Timed()
    with Reporter(Mode.lines, interval_s=INTERVAL, stream=out) as progress:
        slow_training([trainer_progress(progress, "training RM")], steps=2, step_s=2 * INTERVAL, tokens_per_step=300)
    text = out.text()
    assert "training RM 0/2" in text[1] and " 0 tok" in text[1]
    assert "training RM 2/2 (100%) · done · 600 tok" in text[-1]


def test_a_trainer_stopped_early_says_why_in_its_last_line():
    from types import SimpleNamespace

    args = SimpleNamespace(metric_for_best_model="pairwise_accuracy", greater_is_better=True, eval_strategy="epoch")
    evals = [
        {"eval_pairwise_accuracy": 0.75, "epoch": 1.0},
        {"loss": 0.6, "epoch": 1.5},
        {"eval_pairwise_accuracy": 0.70, "epoch": 2.0},
        {"eval_pairwise_accuracy": 0.75, "epoch": 3.0},  # equal is no gain, as for transformers' early stopping
    ]
    state = SimpleNamespace(max_steps=30, global_step=15, log_history=evals, is_world_process_zero=True)
    assert stop_reason(args, state) == (
        "stopped early at step 15 of 30: held-out pairwise accuracy did not improve for 2 epochs (best 0.750 at epoch 1)"
    )
    assert stop_reason(args, SimpleNamespace(max_steps=30, global_step=30, log_history=evals)) == ""  # ran them all
    assert stop_reason(None, state) == "stopped early at step 15 of 30"  # no metric: where, at least

    out = Timed()
    with Reporter(Mode.lines, interval_s=INTERVAL, stream=out) as progress:
        callback = trainer_progress(progress, "training RM")
        callback.on_train_begin(args, state, None)
        callback.on_train_end(args, state, None)
    assert "training RM 15/30 (50%) · done" in out.text()[-1]
    assert out.text()[-1].endswith("did not improve for 2 epochs (best 0.750 at epoch 1)")
