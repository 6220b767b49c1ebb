import pytest

from adapter_fakes import ITEMS, Garbage, train_orchestrator_rewards
from live_server import live_server
from tiny_policy import tiny_rm


@pytest.fixture(scope="session")
def rm_folder(tmp_path_factory):
    return tiny_rm(tmp_path_factory.mktemp("adapters") / "rm", tasks=["synthetic"])


@pytest.fixture(scope="session")
def rm(rm_folder):
    from orchrm.rm import RewardModel

    return RewardModel.load(rm_folder)


@pytest.fixture(scope="session")
def expected(rm):
    """What `train-orchestrator --reward rm` pays each item (the sigmoid of `RewardModel.score` for a valid plan,
    -1 for text with none): the mark every adapter must hit."""
    return train_orchestrator_rewards(rm, ITEMS)


@pytest.fixture(scope="session")
def server(rm):
    """`orchrm serve`'s app (with the OpenRLHF route, as the CLI builds it) over real HTTP."""
    from orchrm.adapters import openrlhf
    from orchrm.rm.server import create_app

    with live_server(create_app(rm, max_items=8, routes=[openrlhf.router])) as url:
        yield url


@pytest.fixture
def garbage():
    g = Garbage()
    yield g
    g.httpd.shutdown()


@pytest.fixture(autouse=True)
def fresh_failure_tally():
    """Each test starts with no reward-server failures counted against max_unscored (a process-wide tally)."""
    from orchrm.adapters._core import FAILURES

    FAILURES.count = 0
    yield
    FAILURES.count = 0
