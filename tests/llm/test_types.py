from orchrm.llm.types import GenerateConfig, Message, cache_key, messages_from


def test_messages_from_string_adds_system_first():
    msgs = messages_from("hi", system="be brief")
    assert [m.role for m in msgs] == ["system", "user"]
    assert msgs[1].content == "hi"


def test_messages_from_dicts():
    msgs = messages_from([{"role": "user", "content": "a"}, Message(role="assistant", content="b")])
    assert [m.content for m in msgs] == ["a", "b"]


def test_merge_applies_only_given_values():
    base = GenerateConfig(temperature=0.7, max_tokens=100)
    merged = base.merge(max_tokens=50, temperature=None)
    assert merged.temperature == 0.7 and merged.max_tokens == 50
    assert base.merge() is base


def test_stop_string_becomes_tuple():
    assert GenerateConfig(stop="\n").stop == ("\n",)


def test_sample_seed():
    assert GenerateConfig(seed=10).sample_seed(3) == 13
    assert GenerateConfig().sample_seed(3) is None


def test_cache_key_depends_on_what_changes_the_answer():
    msgs = messages_from("q")
    cfg = GenerateConfig()
    key = cache_key("openai", "m", msgs, cfg, 0)
    assert key == cache_key("openai", "m", messages_from("q"), GenerateConfig(), 0)
    assert key != cache_key("local", "m", msgs, cfg, 0)
    assert key != cache_key("openai", "m2", msgs, cfg, 0)
    assert key != cache_key("openai", "m", messages_from("q2"), cfg, 0)
    assert key != cache_key("openai", "m", msgs, cfg.merge(temperature=0.5), 0)
    assert key != cache_key("openai", "m", msgs, cfg.merge(json_schema={"type": "object"}), 0)
    assert key != cache_key("openai", "m", msgs, cfg, 1)
