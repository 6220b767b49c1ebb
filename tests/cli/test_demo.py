"""`orchrm demo`'s model options reach the LLMs it opens, embedded or served; the whole loop on a served model (the
loop itself is tested in tests/test_loop.py)."""

from contextlib import contextmanager

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
        main(["demo", "--out", str(tmp_path / "d"), "--backend", "openai", "--model", "m", "--base-url", url,
              "--agent-base-url", url + "2", "--concurrency", "3"])  # fmt: skip
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
            main(["demo", "--out", str(tmp_path / "d"), "--task", f"jsonl:{tmp_path / 'qs.jsonl'}", "--backend", "openai",
                  "--base-url", url, "--api-key-env", "HOME", "--train-questions", "4", "--test-questions", "2",
                  "--n", "2", "--epochs", "1", "--no-judge", "--no-constrained", "--json", "-q"])  # fmt: skip
    finally:
        served.stop()
    assert info.value.code in (None, 0), capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    assert summary["rm_trained"] and summary["questions"] == 2 and "rm" in summary["methods"]
    assert summary["rm_metrics"]["train_pairs"] > 0 and summary["rm"]["backbone"]  # metrics beside the results' RM
    roles = {"orchestrator" in r["messages"][0]["content"] for r in served.requests}
    assert roles == {True, False}  # plans and sub-agents both on the served model
    for stage in ("train", "bon/heldout"):
        run = json.loads((tmp_path / "d" / stage / "run.json").read_text())
        assert (run["backend"], run["model_id"]) == ("openai", f"served@{url}")
