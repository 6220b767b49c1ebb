"""The constrained-decoding schema is a contract with llama.cpp's grammar: moving where option bounds are
declared must not change one byte of it (hashes taken on main before the move)."""

import hashlib
import json

import pytest

from orchrm.mas.options import TOOL_TYPES
from orchrm.mas.plans import AGENT_TYPES, plan_json_schema

# What every task without tools is offered (`agent_types_for`): its schema is the one committed runs decoded under.
LLM_TYPES = tuple(t for t in AGENT_TYPES if t not in TOOL_TYPES)
NO_SEARCH = tuple(t for t in LLM_TYPES if t != "search")
DIRECT = "501643f096ce2600b289b456762f3a69fc2c97c8fc3d42c4d6f9b7f3c6da10ae"


@pytest.mark.parametrize(
    ("types", "degree", "digest"),
    [
        (AGENT_TYPES, "direct", DIRECT),
        (LLM_TYPES, "single", "54b67724aedcd7e664d1d6c316313ee78ce77abe30455814e704a237bd7fa815"),
        (LLM_TYPES, "dag", "9c173911f98c52c1bd7d08110a499d3f80a4a7471674b427257d40eb70f54e2e"),
        (NO_SEARCH, "single", "6035a21a7c79d53d56d5df1c2a6c08e6da6702f124366c39d9631cb01c78e886"),
        (NO_SEARCH, "dag", "a95e97af91999efc010ce44631aff5ed0d25352bdc73d4a8f42ac4c606aa49b0"),
        (("cot", "debate"), "single", "46102237c75534c9ad28a5385b24f7199dec044805821d7c86fe327748d767c7"),
        (("cot", "debate"), "dag", "0e5a32741006e9cb78e6169652d3e880548a47fd59119930b0da89820d569dc0"),
    ],
)
def test_schema_is_byte_for_byte_what_it_was(types, degree, digest):
    # Key order matters too (it orders the grammar), so the dump is not sorted.
    assert hashlib.sha256(json.dumps(plan_json_schema(types, degree)).encode()).hexdigest() == digest


def test_schema_defaults_to_every_agent_type():
    assert plan_json_schema() == plan_json_schema(AGENT_TYPES)
    assert AGENT_TYPES == ("cot", "self_consistency", "reflexion", "debate", "search", "python", "lookup", "calc")
