import io
import json
import time

from orchrm.cli.progress import Mode, Reporter, Stage, choose_mode, format_line, trainer_progress
from timed_log import Timed, gaps, slow_training


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_mode_bars_only_on_a_terminal_and_flags_win():
    assert choose_mode(stream=Tty()) is Mode.bars
    assert choose_mode(stream=io.StringIO()) is Mode.lines
    assert choose_mode(as_json=True, stream=Tty()) is Mode.json
    assert choose_mode(quiet=True, as_json=True, stream=io.StringIO()) is Mode.quiet


def _run(mode: Mode, steps: int = 4) -> str:
    out = io.StringIO()
    with Reporter(mode, interval_s=0.05, stream=out) as progress:
        for i in range(1, steps + 1):
            progress.update("rollout plans", done=i, total=10, tokens=100 * i, info="2/5 questions")
            time.sleep(0.04)
        progress.note("training the reward model")
        time.sleep(0.12)
    return out.getvalue()


def test_lines_mode_beats_with_rate_eta_and_tokens_while_nothing_finishes():
    text = _run(Mode.lines)
    beats = [line for line in text.splitlines() if "rollout plans" in line]
    assert len(beats) >= 2  # the heartbeat runs even while no update arrives (the note and the sleep after it)
    last = beats[-1]
    assert "rollout plans 4/10 (40%)" in last and "/min" in last and "ETA" in last and "400 tok" in last
    assert "2/5 questions" in last
    assert any(line.endswith("training the reward model") for line in text.splitlines())


def test_a_finished_stage_prints_once_and_stops_beating():
    out = io.StringIO()
    with Reporter(Mode.lines, interval_s=0.05, stream=out) as progress:
        progress.update("judge", done=3, total=3, tokens=9)
        progress.update("judge", done=3, total=3, tokens=9)
        time.sleep(0.2)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and "judge 3/3 (100%) · done · 9 tok" in lines[0]


def test_json_mode_is_one_object_per_line():
    text = _run(Mode.json)
    rows = [json.loads(line) for line in text.splitlines()]
    stages = [r for r in rows if r.get("stage") == "rollout plans"]
    assert stages and stages[-1]["done"] == 4 and stages[-1]["total"] == 10 and stages[-1]["tokens"] == 400
    assert stages[-1]["rate_per_min"] > 0 and stages[-1]["eta_s"] is not None
    assert {"time", "note"} <= set(next(r for r in rows if "note" in r))


def test_quiet_writes_nothing():
    assert _run(Mode.quiet) == ""


def test_rate_counts_only_this_sittings_work():
    stage = Stage("rollout", total=100, base=90, done=95, started=time.monotonic() - 60)
    assert round(stage.rate_per_min(stage.started + 60)) == 5  # 5 new plans in a minute, not 95
    assert round(stage.eta_s(stage.started + 60)) == 60


def test_format_line_without_total_or_rate():
    snap = Stage("train rollouts").snapshot(time.monotonic())
    assert format_line(snap) == "train rollouts 0 · starting · 0 tok · 0s elapsed"


def test_a_closed_log_does_not_stop_the_run():
    out = io.StringIO()
    with Reporter(Mode.lines, interval_s=0.01, stream=out) as progress:
        out.close()
        progress.update("rollout", done=1, total=1)
        progress.note("still fine")


def test_results_written_to_a_log_are_not_cut_at_80_columns(monkeypatch):
    from orchrm.cli.progress import LOG_WIDTH, result_console

    monkeypatch.delenv("COLUMNS", raising=False)
    assert result_console(False).width == LOG_WIDTH  # pytest's stdout is not a terminal
    monkeypatch.setenv("COLUMNS", "100")
    assert result_console(False).width == 100


INTERVAL = 0.2  # stands for `--log-every`'s 30 s: first line within a third of it, then no gap longer than it
DELAY = 0.3  # a heartbeat thread's wake-up on a busy machine: a fixed lateness, not a share of the interval


def test_a_long_command_is_never_silent_loading_starting_or_inside_one_long_step():
    out = Timed()
    start = time.monotonic()
    with Reporter(Mode.lines, interval_s=INTERVAL, stream=out) as progress:
        progress.note("loading the backbone")
        time.sleep(3 * INTERVAL)  # a model loads: the note is repeated, with the time since
        progress.update("training RM", done=0, total=2, tokens=0)
        time.sleep(4 * INTERVAL)  # one step four heartbeats long: no update arrives
        progress.update("training RM", done=2, total=2, tokens=100)
        time.sleep(2 * INTERVAL)  # finished and nothing after: the stale note is not repeated
    end = time.monotonic()
    steps = gaps(start, out, end)
    assert steps[0] < INTERVAL / 3 + DELAY and max(steps[:-1]) <= INTERVAL + DELAY, steps
    text = out.text()
    assert sum("loading the backbone" in line and "elapsed" in line for line in text) >= 2, text
    started = text.index(next(line for line in text if "training RM 0/2" in line))
    assert "starting" in text[started] and all("loading" not in line for line in text[started:])
    assert sum("training RM 0/2" in line for line in text) >= 3  # its start line, then heartbeats in the step
    assert "training RM 2/2 (100%) · done · 100 tok" in text[-1]


def test_a_meter_is_read_at_every_line():
    out, spent = Timed(), [0]
    with Reporter(Mode.lines, interval_s=INTERVAL, stream=out) as progress:
        progress.update("judge (listwise)", done=0, total=2, tokens=lambda: spent[0])
        for _ in range(3):
            spent[0] += 250
            time.sleep(INTERVAL * 1.1)
        progress.update("judge (listwise)", done=2, total=2, tokens=lambda: spent[0])
    text = out.text()
    assert "0 tok" in text[0] and "750 tok" in text[-1]
    assert any(f" {n} tok" in line for line in text[1:-1] for n in (250, 500)), text  # mid-stage heartbeats


def test_the_other_processes_of_a_launch_are_quiet(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    assert choose_mode(stream=io.StringIO()) is Mode.quiet
    monkeypatch.setenv("RANK", "0")
    assert choose_mode(stream=io.StringIO()) is Mode.lines


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

    from orchrm.cli.progress import stop_reason

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
