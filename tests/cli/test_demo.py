"""`orchrm demo`'s model options reach the LLMs it opens (the loop itself is tested in tests/test_loop.py)."""

from contextlib import contextmanager

import pytest

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

    monkeypatch.setattr("orchrm.cli.demo.run_llms", fake_run_llms)
    return seen


@pytest.mark.parametrize(
    ("argv", "models"),
    [
        ([], (DEFAULT_MODEL, None)),
        (["--orchestrator-model", "qwen2.5-coder-1.5b", "--agent-model", DEFAULT_MODEL], ("qwen2.5-coder-1.5b", DEFAULT_MODEL)),
        (["--model", "smollm2-135m"], ("smollm2-135m", None)),
    ],
)
def test_demo_opens_the_orchestrator_and_agent_models_it_was_given(argv, models, opened, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["demo", "--out", str(tmp_path / "d"), *argv])
    assert info.value.code == 1 and "stopped before any model loads" in capsys.readouterr().err
    [(backend, model, base_url, options)] = opened
    assert (backend, model, base_url, options["agent_model"]) == ("local", *models[:1], None, models[1])
