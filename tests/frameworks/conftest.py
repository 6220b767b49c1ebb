"""verl's and OpenRLHF's own released code driving orchrm's adapters. Each framework pins its own transformers,
so these tests run in a venv per framework (`make test-frameworks`, ci/frameworks/run.sh); elsewhere they skip."""

import pytest

from live_server import live_server
from tiny_policy import tiny_rm


@pytest.fixture(scope="session")
def rm_folder(tmp_path_factory):
    """A tiny random RM saved as `orchrm train-rm` saves one; its byte-level tokenizer (with a chat template)
    doubles as the policy's, so a decoded response is the text that was tokenised, byte for byte."""
    return tiny_rm(tmp_path_factory.mktemp("frameworks") / "rm", tasks=["synthetic"])


@pytest.fixture(scope="session")
def rm(rm_folder):
    from orchrm.rm import RewardModel

    return RewardModel.load(rm_folder)


@pytest.fixture(scope="session")
def server(rm):
    """`orchrm serve`'s app (its /score and /openrlhf routes, as the CLI builds them) over real HTTP."""
    from orchrm.adapters import openrlhf
    from orchrm.rm.server import create_app

    with live_server(create_app(rm, routes=[openrlhf.router])) as url:
        yield url
