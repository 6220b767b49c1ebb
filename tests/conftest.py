import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Unit tests never touch the user's response cache; the model and llama-server caches stay shared."""
    monkeypatch.setenv("ORCHRM_RESPONSE_CACHE", str(tmp_path_factory.mktemp("cache") / "responses.sqlite"))
