import sqlite3
import subprocess
import sys
import time

from orchrm.llm.cache import ResponseCache
from orchrm.llm.types import Completion, Usage


def _completion(text="x"):
    return Completion(text=text, finish_reason="stop", usage=Usage(prompt_tokens=3, completion_tokens=2), latency_s=1.5)


def test_round_trip_marks_cached(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert cache.get("k") is None
    cache.put("k", "openai", "m", _completion("hello"))
    hit = cache.get("k")
    assert hit is not None and hit.text == "hello" and hit.cached and hit.latency_s == 0.0
    assert hit.usage.prompt_tokens == 3 and hit.usage.completion_tokens == 2
    assert len(cache) == 1


def test_persists_across_reopen(tmp_path):
    ResponseCache(tmp_path / "c.sqlite").put("k", "openai", "m", _completion("kept"))
    assert ResponseCache(tmp_path / "c.sqlite").get("k").text == "kept"


def test_killed_writer_leaves_only_whole_entries(tmp_path):
    db = tmp_path / "c.sqlite"
    writer = (
        "import sys\n"
        "from orchrm.llm.cache import ResponseCache\n"
        "from orchrm.llm.types import Completion, Usage\n"
        f"c = ResponseCache({str(db)!r})\n"
        "i = 0\n"
        "while True:\n"
        "    c.put(f'k{i}', 'b', 'm', Completion(text='t' * 5000 + str(i), finish_reason='stop',"
        " usage=Usage(prompt_tokens=i, completion_tokens=i)))\n"
        "    i += 1\n"
        "    if i == 20: print('go', flush=True)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "go"
    time.sleep(0.3)
    proc.kill()
    proc.wait()
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    keys = [k for (k,) in con.execute("SELECT key FROM responses")]
    con.close()
    assert len(keys) >= 20
    cache = ResponseCache(db)
    for key in keys:
        c = cache.get(key)
        assert c.text.endswith(key[1:]) and c.usage.prompt_tokens == int(key[1:])


def test_corrupt_file_gives_clear_error(tmp_path):
    import pytest

    from orchrm.errors import ConfigError

    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ConfigError, match="cannot be opened"):
        ResponseCache(bad)


def test_two_models_never_share_an_entry(tmp_path):
    """The orchestrator and agent models share one cache file; the same request must not cross between them."""
    from orchrm.llm import LLM
    from orchrm.llm.scripted import ScriptedBackend

    cache = ResponseCache(tmp_path / "c.sqlite")
    big = LLM(ScriptedBackend("from big", name="big"), cache=cache)
    small = LLM(ScriptedBackend("from small", name="small"), cache=cache)
    assert big.generate("same prompt", category="plan", seed=1)[0].text == "from big"
    again = small.generate("same prompt", category="execute", seed=1)[0]
    assert again.text == "from small" and not again.cached
    assert big.generate("same prompt", category="plan", seed=1)[0].cached and len(cache) == 2
