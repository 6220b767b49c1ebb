import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Unit tests never touch the user's response cache; the model and llama-server caches stay shared."""
    monkeypatch.setenv("ORCHRM_RESPONSE_CACHE", str(tmp_path_factory.mktemp("cache") / "responses.sqlite"))


@pytest.fixture
def fake():
    """A fake OpenAI-compatible server on 127.0.0.1 (see support/fake_openai.py)."""
    from fake_openai import FakeOpenAI

    server = FakeOpenAI()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def trained_rm():
    """A MiniLM reward model really trained (3 epochs) on synthetic pairs; shared by rm and CLI tests."""
    from orchrm.rm import RMConfig, train_reward_model
    from synthetic_pairs import make_rows

    return train_reward_model(
        make_rows(32),
        make_rows(8, offset=100),
        RMConfig(epochs=3, batch_size=8, learning_rate=1e-4, max_length=96),
        progress=False,
    )


@pytest.fixture(scope="session")
def rm_dir(trained_rm, tmp_path_factory):
    return trained_rm.model.save(tmp_path_factory.mktemp("rm") / "model")


@pytest.fixture(scope="session")
def policy_dir(tmp_path_factory):
    """A tiny random Qwen2-shaped policy (support/tiny_policy.py): GRPO runs on it in seconds on CPU."""
    from tiny_policy import tiny_policy

    return tiny_policy(tmp_path_factory.mktemp("policy") / "tiny")
