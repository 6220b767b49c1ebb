"""A server's dialect from its /models page, the group size each dialect allows, and a refusal of `n`."""

import asyncio
from types import SimpleNamespace

import pytest

from orchrm.errors import BackendHTTPError, ConfigError
from orchrm.llm.dialects import after_refusal, check_dialect, group_limit, learn_dialect, refuses_n
from orchrm.llm.types import Completion, Usage


class _Native:
    async def slots(self):
        return 3


def _page(*owners):
    return SimpleNamespace(data=[SimpleNamespace(id=f"m{i}", owned_by=o) for i, o in enumerate(owners)])


def test_a_llama_server_is_known_by_its_owner_and_brings_its_slots():
    assert asyncio.run(learn_dialect(_page("llamacpp"), _Native())) == ("llama.cpp", 3)
    assert asyncio.run(learn_dialect(_page("vllm"), _Native())) == ("openai", None)
    assert asyncio.run(learn_dialect(SimpleNamespace(data=None), _Native())) == ("openai", None)


def test_group_size_per_dialect():
    limit = dict(slots=None, concurrency=8, max_n=16)
    assert group_limit(None, refused=False, **limit) == 1  # not learned yet
    assert group_limit("openai", refused=True, **limit) == 1
    assert group_limit("openai", refused=False, **limit) == 16
    assert group_limit("llama.cpp", refused=False, **limit) == 8
    assert group_limit("llama.cpp", refused=False, **{**limit, "slots": 4}) == 4


def test_an_unknown_dialect_is_a_config_error():
    check_dialect(None)
    check_dialect("llama.cpp")
    with pytest.raises(ConfigError, match="unknown server dialect"):
        check_dialect("tgi")


def test_a_refusal_is_a_400_or_422_and_its_samples_come_back_as_groups_of_one():
    assert refuses_n(BackendHTTPError("x", status=422)) and not refuses_n(BackendHTTPError("x", status=500))
    singles = [Completion(text="a", finish_reason="stop", usage=Usage(prompt_tokens=1, completion_tokens=1))] * 2
    with pytest.warns(UserWarning, match="refused a request for 2 completions"):
        out = after_refusal(singles, "http://h/v1", BackendHTTPError("bad n", status=400))
    assert [c.group for c in out] == [1, 1]
