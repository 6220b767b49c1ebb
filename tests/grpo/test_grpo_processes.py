"""`on_main`: the main process works while the others wait, and all of them get its result or its error.
The broadcast is faked by pickling the main process's box, as torch.distributed sends it."""

import pickle
from types import SimpleNamespace

import pytest

from orchrm.errors import ConfigError
from orchrm.grpo.processes import on_main

MAIN = SimpleNamespace(num_processes=2, is_main_process=True)
OTHER = SimpleNamespace(num_processes=2, is_main_process=False)


@pytest.fixture
def sent(monkeypatch):
    sent = []

    def broadcast(box):
        if not sent:  # the main process broadcasts first; the others receive what it sent
            sent.append(pickle.dumps(box))
        box[:] = pickle.loads(sent[0])

    monkeypatch.setattr("accelerate.utils.broadcast_object_list", broadcast)
    return sent


def never():
    raise AssertionError("only the main process works")


def test_every_process_gets_the_main_process_result(sent):
    assert on_main(MAIN, lambda: {"calls": 8}) == {"calls": 8}
    assert on_main(OTHER, never) == {"calls": 8}


def test_an_expected_error_on_the_main_process_is_the_same_one_line_everywhere(sent):
    def settle():
        raise ConfigError("runs/grpo holds a training run made with other settings", hint="use a new --out folder")

    with pytest.raises(ConfigError) as main_error:
        on_main(MAIN, settle)
    with pytest.raises(ConfigError) as other_error:
        on_main(OTHER, never)
    assert (
        str(other_error.value)
        == str(main_error.value)
        == "runs/grpo holds a training run made with other settings (use a new --out folder)"
    )


def test_one_process_just_works():
    assert on_main(SimpleNamespace(num_processes=1, is_main_process=True), lambda: 3) == 3
