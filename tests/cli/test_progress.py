import io
import json
import time

from orchrm.cli.progress import Mode, Reporter, Stage, choose_mode, format_line
from timed_log import DELAY, INTERVAL, Timed, gaps


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
