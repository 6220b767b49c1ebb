"""`orchrm demo`'s model options reach the LLMs it opens, embedded or served; the whole loop on a served model (the
loop itself is tested in tests/test_loop.py)."""

import asyncio
import re
import sys
import time
from contextlib import contextmanager, nullcontext
from types import SimpleNamespace

import pytest

from mas_fakes import PLAN, _sum_reply
from orchrm.cli.app import main
from orchrm.errors import ConfigError
from orchrm.llm import DEFAULT_MODEL


@pytest.fixture
def opened(monkeypatch):
    seen = []

    @contextmanager
    def fake_run_llms(backend, model, base_url, **options):
        seen.append((backend, model, base_url, options))
        raise ConfigError("stopped before any model loads")
        yield

    monkeypatch.setattr("orchrm.cli.llms.run_llms", fake_run_llms)
    return seen


@pytest.mark.parametrize(
    ("argv", "models"),
    [
        ([], (DEFAULT_MODEL, None)),
        (
            ["--orchestrator-model", "qwen2.5-coder-1.5b", "--agent-model", DEFAULT_MODEL],
            ("qwen2.5-coder-1.5b", DEFAULT_MODEL),
        ),
        (["--model", "smollm2-135m"], ("smollm2-135m", None)),
    ],
)
def test_demo_opens_the_orchestrator_and_agent_models_it_was_given(argv, models, opened, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["demo", "--out", str(tmp_path / "d"), *argv])
    assert info.value.code == 1 and "stopped before any model loads" in capsys.readouterr().err
    [(backend, model, base_url, options)] = opened
    assert (backend, model, base_url, options["agent_model"]) == ("local", *models[:1], None, models[1])


def test_demo_passes_a_served_models_options(opened, tmp_path, capsys):
    url = "http://127.0.0.1:1/v1"
    with pytest.raises(SystemExit):
        main(
            [
                "demo",
                "--out",
                str(tmp_path / "d"),
                "--backend",
                "openai",
                "--model",
                "m",
                "--base-url",
                url,
                "--agent-base-url",
                url + "2",
                "--concurrency",
                "3",
            ]
        )
    [(backend, model, base_url, options)] = opened
    assert (backend, model, base_url) == ("openai", "m", url)
    assert (options["agent_base_url"], options["concurrency"]) == (url + "2", 3)


class PlanServer:
    """A served model (the fake OpenAI server) that plays both roles: an orchestrator's group of plans gets a
    valid plan first and garbage after it, a sub-agent the question's sum."""

    def __init__(self):
        import threading

        from fake_openai import FakeOpenAI, Reply

        server, last = FakeOpenAI(model="served"), threading.local()

        def reply(request, index):
            messages = request["messages"]
            if "orchestrator" in messages[0]["content"]:
                return Reply(text=PLAN if index == 0 else "{ this is not a plan")
            return Reply(text=_sum_reply(messages[-1]["content"]))

        def next_reply(request):
            with server._lock:
                server.requests.append(request)
            last.request = request
            return reply(request, 0)

        server.next_reply = next_reply
        server.more_replies = lambda k: [reply(last.request, i) for i in range(1, k + 1)]
        self.server = server


def test_demo_runs_the_whole_loop_on_a_served_model(tmp_path, capsys):
    import json

    from mas_fakes import make_task

    make_task(tmp_path)
    served = PlanServer().server
    url = served.start()
    try:
        with pytest.raises(SystemExit) as info:
            main(
                [
                    "demo",
                    "--out",
                    str(tmp_path / "d"),
                    "--task",
                    f"jsonl:{tmp_path / 'qs.jsonl'}",
                    "--backend",
                    "openai",
                    "--base-url",
                    url,
                    "--api-key-env",
                    "HOME",
                    "--train-questions",
                    "4",
                    "--test-questions",
                    "2",
                    "--n",
                    "2",
                    "--epochs",
                    "1",
                    "--no-judge",
                    "--no-constrained",
                    "--json",
                ]
            )
    finally:
        served.stop()
    captured = capsys.readouterr()
    assert info.value.code in (None, 0), captured.err
    summary = json.loads(captured.out)
    progress = [json.loads(line) for line in captured.err.splitlines() if line.startswith("{")]
    rm_steps = [p for p in progress if p.get("stage") == "training RM"]  # the real trainer's own token count
    assert rm_steps[0]["done"] == 0 and rm_steps[-1]["finished"] and rm_steps[-1]["tokens"] > 0, rm_steps
    assert summary["rm_trained"] and summary["questions"] == 2 and "rm" in summary["methods"]
    assert summary["rm_metrics"]["train_pairs"] > 0 and summary["rm"]["backbone"]  # metrics beside the results' RM
    roles = {"orchestrator" in r["messages"][0]["content"] for r in served.requests}
    assert roles == {True, False}  # plans and sub-agents both on the served model
    for stage in ("train", "bon/heldout"):
        run = json.loads((tmp_path / "d" / stage / "run.json").read_text())
        assert (run["backend"], run["model_id"]) == ("openai", f"served@{url}")


LOG_EVERY = 1.0  # stands for the default 30 s: the first line within a third of it, no gap longer than it
# A heartbeat thread's wake-up and the first line's imports are late by a fixed delay on a busy machine, not by a
# share of the interval: at the default 30 s, a second late is nothing; at 1 s, x1.5 was flaky under load.
DELAY = 1.0


def test_demo_is_never_silent_through_a_slow_rm_training_and_a_slow_judge(tmp_path, monkeypatch, capsys):
    """The whole demo on a scripted model whose third judge call takes 2.5 heartbeats, with an RM trainer that
    takes 2.5 heartbeats to load and each of its two steps as long (the RM it returns is a tiny random one)."""
    import transformers.trainer_callback  # noqa: F401 (imported before the clock starts: the import holds the GIL)

    from mas_fakes import bon_replies, make_task, scripted_llm
    from orchrm.rm.model import RewardModel
    from timed_log import Timed, gaps, slow_training
    from tiny_policy import tiny_rm

    make_task(tmp_path)
    task, judged, script = f"jsonl:{tmp_path / 'qs.jsonl'}", [], bon_replies()

    async def complete(messages, config, seed):
        # An asynchronous wait: the judge's other calls finish and reach the ledger during it, whatever order the
        # event loop starts them in (a blocking sleep here once froze them unrecorded on a loaded machine).
        if "orchestrator" not in messages[0].content and (config.json_schema is not None or config.tools):
            judged.append(1)
            if len(judged) == 3:
                await asyncio.sleep(2.5 * LOG_EVERY)
        return await scripted(messages, config, seed)

    trained, rm = [], tiny_rm(tmp_path / "tiny-rm", tasks=[task])

    def slow_trainer(train, val, config, *, pair_stats=None, progress=True, callbacks=None):
        trained.append(len(callbacks or []))
        time.sleep(2.5 * LOG_EVERY)  # the backbone loads, the pairs are tokenised
        slow_training(callbacks, steps=2, step_s=2.5 * LOG_EVERY, tokens_per_step=300)
        return SimpleNamespace(model=RewardModel.load(rm))

    llm = scripted_llm(script)
    scripted = llm.backend.complete
    monkeypatch.setattr(llm.backend, "complete", complete)
    monkeypatch.setattr("orchrm.cli.demo.open_models", lambda models: nullcontext((llm, llm)))
    monkeypatch.setattr("orchrm.loop.train_reward_model", slow_trainer)
    log = Timed()
    monkeypatch.setattr(sys, "stderr", log)
    start = time.monotonic()
    with pytest.raises(SystemExit) as info:
        sizes = "--train-questions 3 --test-questions 2 --n 3 --no-constrained".split()
        main(["demo", "--out", str(tmp_path / "d"), "--task", task, *sizes, "--log-every", str(LOG_EVERY)])
    end = time.monotonic()
    text = log.text()
    assert info.value.code in (None, 0), text
    assert trained == [1] and len(judged) >= 3  # the demo's progress callback reached the trainer
    steps = gaps(start, log, end)
    shown = list(zip(steps, ["<start>", *text]))
    assert steps[0] < LOG_EVERY / 3 + DELAY and max(steps[:-1]) <= LOG_EVERY + DELAY, shown
    assert text[0].endswith("opening the offline models")  # before an embedded model's server starts
    # While the RM loads the held-out judge is still running beside it: its heartbeat is what keeps the log moving
    # (`steps` above), and the loading is said when it starts.
    loading = next(i for i, line in enumerate(text) if "training RM: preparing the trainer" in line)
    assert any("judge (listwise)" in line and "· done ·" not in line for line in text[loading + 1 :])
    rm_lines = [line for line in text if "training RM" in line]
    assert len(rm_lines) >= 4 and "training RM 2/2 (100%) · done · 600 tok" in rm_lines[-1]  # start, beats, end
    for last, questions in (("train rollouts 9/9", "3/3 questions"), ("held-out plans 6/6", "2/2 questions")):
        line = next(line for line in text if last in line)
        assert "· done ·" in line and questions in line, line  # the last plan's line counts its question too
    judge = [line for line in text if "judge (listwise)" in line]
    spent = sum(t.total_tokens for c, t in llm.ledger.totals().items() if c == "verify")
    tokens = [int(re.search(r" · ([\d,]+) tok", line).group(1).replace(",", "")) for line in judge]
    assert len(judge) >= 4 and tokens[-1] == spent > 0 and max(tokens[1:-1]) > 0, judge  # a heartbeat's count moves


@pytest.mark.parametrize(
    ("argv", "judged"),
    [
        ([], True),
        (["--task", "world_qa:tools=exact"], False),
        (["--task", "world_qa:tools=exact", "--judge"], True),
        (["--no-judge"], False),
    ],
)
def test_demo_judges_unless_told_or_every_sub_agent_is_an_exact_tool(argv, judged, monkeypatch, tmp_path, capsys):
    seen = []

    def stop(progress, task, out, config, models, **kw):
        seen.append(config.bon.judge)
        raise ConfigError("stopped before any model loads")

    monkeypatch.setattr("orchrm.cli.demo._run", stop)
    with pytest.raises(SystemExit):
        main(["demo", "--out", str(tmp_path / "d"), *argv])
    out = capsys.readouterr().out
    assert seen == [judged] and ("no listwise judge" in out) is not judged
