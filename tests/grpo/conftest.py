import pytest
from tiny_policy import tiny_policy


@pytest.fixture(scope="session")
def policy_dir(tmp_path_factory):
    return tiny_policy(tmp_path_factory.mktemp("policy") / "tiny")
