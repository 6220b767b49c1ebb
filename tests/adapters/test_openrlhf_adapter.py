"""OpenRLHF: `orchrm serve`'s POST /openrlhf and the reward_func file, fed what OpenRLHF sends."""

import importlib.util
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

import orchrm.adapters.openrlhf as openrlhf_module
from adapter_fakes import BAD_COMPLETIONS, ITEMS, train_orchestrator_rewards
from live_server import free_port
from orchrm.errors import ConfigError

PENALTY = openrlhf_module.DEFAULT_PENALTY
#: Which of ITEMS hold no valid plan (a direct answer under dag, broken JSON): paid the penalty, flagged invalid.
INVALID = [0.0, 0.0, 1.0, 0.0, 1.0]


def chat_prompt(question):
    return (
        f"<|im_start|>system\nWrite a plan.<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"
    )


def sample(question, plan):
    """One OpenRLHF sample: the query is the prompt and the response decoded with special tokens (the eos kept)."""
    prompt = chat_prompt(question)
    return prompt + plan + "<|im_end|>", prompt


def post_each(url, items, labels):
    """As OpenRLHF's SingleTurnAgentExecutor does: one sample per request."""
    out = []
    for (q, p), label in zip(items, labels, strict=True):
        query, prompt = sample(q, p)
        r = httpx.post(f"{url}/openrlhf", json={"query": [query], "prompts": [prompt], "labels": [label]}, timeout=30)
        assert r.status_code == 200, r.text
        out.append(r.json())
    return out


def test_the_route_gives_the_same_scores_as_the_reward_model(server, expected):
    answers = post_each(server, ITEMS, [q for q, _ in ITEMS])
    assert [a["rewards"][0] for a in answers] == pytest.approx(expected, abs=1e-5)
    assert all(a["scores"] == a["rewards"] for a in answers)
    assert [a["extra_logs"] for a in answers] == [{"orchrm_invalid": [x], "orchrm_unscored": [0.0]} for x in INVALID]
    labels = [{"question": q, "answer": "8"} for q, _ in ITEMS]  # a label column that is an object
    assert [a["rewards"][0] for a in post_each(server, ITEMS, labels)] == pytest.approx(expected, abs=1e-5)


def test_a_batch_request(server, expected):
    queries, prompts = zip(*(sample(q, p) for q, p in ITEMS), strict=True)
    r = httpx.post(
        f"{server}/openrlhf", json={"query": list(queries), "prompts": list(prompts), "labels": [q for q, _ in ITEMS]}
    )
    assert r.json()["rewards"] == pytest.approx(expected, abs=1e-5)


def test_unscorable_samples_get_the_penalty_and_a_log(server):
    q, p = ITEMS[0]
    query, prompt = sample(q, p)
    body = {
        "query": [query, query, prompt + "<|im_end|>", "a truncated query without any template " + p],
        "prompts": [prompt, prompt, prompt, prompt],
        "labels": [q, "", q],  # OpenRLHF sends "" without --data.label_key; a short label list is read as missing
    }
    a = httpx.post(f"{server}/openrlhf", json=body).json()
    assert a["rewards"][1:] == [0.0, PENALTY, 0.0] and a["rewards"][0] not in (0.0, PENALTY)  # unscored: 0.0
    assert a["extra_logs"] == {"orchrm_invalid": [0.0, 0.0, 1.0, 0.0], "orchrm_unscored": [0.0, 1.0, 0.0, 1.0]}


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"not json", 422),
        (b'{"query": [], "prompts": []}', 422),
        (b'{"query": ["a", "b"], "prompts": ["a"]}', 422),
        (b'{"query": ["a"], "prompts": ["a"], "labels": ["q", "r"]}', 422),
        (b'{"query": [1], "prompts": ["a"]}', 422),
        (
            b'{"query": ["a"], "prompts": ["a"], "labels": [' + b'{"q": ' * 40 + b"1" + b"}" * 40 + b"]}",
            422,
        ),  # too deep
        (b'{"query": ["a"], "prompts": ["a"], "labels": ["' + b"q" * 100_000 + b'"]}', 413),
        (
            b'{"query": '
            + str(["a"] * 9).replace("'", '"').encode()
            + b', "prompts": '
            + str(["a"] * 9).replace("'", '"').encode()
            + b"}",
            413,
        ),
    ],
)
def test_bad_requests_are_refused_in_one_status(server, body, status):
    r = httpx.post(f"{server}/openrlhf", content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text


def load_reward_func():
    """As OpenRLHF does: the file by path, its reward_func."""
    spec = importlib.util.spec_from_file_location("reward_func", openrlhf_module.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reward_func


@pytest.mark.parametrize("where", ["folder", "server"])
def test_the_reward_file_gives_the_same_scores(where, rm_folder, server, expected, monkeypatch):
    monkeypatch.setenv(
        "ORCHRM_URL" if where == "server" else "ORCHRM_RM", server if where == "server" else str(rm_folder)
    )
    queries, prompts = zip(*(sample(q, p) for q, p in ITEMS), strict=True)
    out = load_reward_func()(list(queries), list(prompts), [q for q, _ in ITEMS])
    assert out["rewards"] == pytest.approx(expected, abs=1e-5)
    assert out["extra_logs"] == {"orchrm_invalid": INVALID, "orchrm_unscored": [0.0] * len(ITEMS)}


def test_the_reward_file_without_a_model_or_with_a_bad_penalty_is_one_line(monkeypatch, caplog):
    for name in ("ORCHRM_RM", "ORCHRM_URL"):
        monkeypatch.delenv(name, raising=False)
    # the first call fails naming the variables, and says so at ERROR: OpenRLHF logs the exception at INFO only
    with pytest.raises(ConfigError, match=r"neither ORCHRM_RM .* nor ORCHRM_URL .* is set.*--runtime-env-json"):
        load_reward_func()(["q"], ["q"], ["q"])
    assert [r.levelname for r in caplog.records if "neither ORCHRM_RM" in r.getMessage()] == ["ERROR"]
    monkeypatch.setenv("ORCHRM_RM", "/abs/rm")
    monkeypatch.setenv("ORCHRM_URL", "http://127.0.0.1:1")
    with pytest.raises(ConfigError, match="both ORCHRM_RM and ORCHRM_URL are set"):
        load_reward_func()(["q"], ["q"], ["q"])
    monkeypatch.delenv("ORCHRM_RM")
    monkeypatch.setenv("ORCHRM_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("ORCHRM_PENALTY", "low")
    with pytest.raises(ConfigError, match="ORCHRM_PENALTY='low' is not a number"):
        load_reward_func()(["q"], ["q"], ["q"])


def test_the_reward_file_with_the_server_down_is_unscored_then_stops(monkeypatch):
    from orchrm.adapters import RewardServerError

    monkeypatch.setenv("ORCHRM_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("ORCHRM_PENALTY", "-3")
    monkeypatch.setenv("ORCHRM_DEADLINE_S", "0")
    q, p = ITEMS[0]
    query, prompt = sample(q, p)
    with pytest.raises(RewardServerError, match="max_unscored=0"):
        load_reward_func()([query], [prompt], [q])
    monkeypatch.setenv("ORCHRM_MAX_UNSCORED", "5")
    monkeypatch.setenv("ORCHRM_UNSCORED_REWARD", "0.25")
    out = load_reward_func()([query], [prompt], [q])
    assert out == {
        "rewards": [0.25],  # unscored, never the invalid-plan penalty
        "scores": [0.25],
        "extra_logs": {"orchrm_invalid": [0.0], "orchrm_unscored": [1.0]},
    }


def test_orchrm_serve_answers_openrlhf(rm_folder, expected):
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "orchrm",
            "serve",
            "--rm",
            str(rm_folder),
            "--port",
            str(port),
            "--openrlhf-penalty",
            "-4",
        ],
        env=os.environ,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/health").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        answers = post_each(url, ITEMS[:2], [q for q, _ in ITEMS[:2]])
        assert [a["rewards"][0] for a in answers] == pytest.approx(expected[:2], abs=1e-5)
        q, p = ITEMS[0]
        query, prompt = sample(q, p)
        r = httpx.post(f"{url}/openrlhf", json={"query": [query], "prompts": [prompt], "labels": [""]})
        assert r.json()["rewards"] == [0.0]  # no question: unscored, not the penalty
        r = httpx.post(
            f"{url}/openrlhf", json={"query": [prompt + "prose<|im_end|>"], "prompts": [prompt], "labels": [q]}
        )
        assert r.json()["rewards"] == [-4.0]  # no valid plan: the penalty
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(20)


def test_every_bad_completion_is_paid_as_train_orchestrator_pays_it(rm, server, monkeypatch, rm_folder):
    q = "What is 1 + 3?"
    texts = [c for _, c, _ in BAD_COMPLETIONS]
    trained = train_orchestrator_rewards(rm, [(q, t) for t in texts])
    queries, prompts = zip(*(sample(q, t) for t in texts), strict=True)
    monkeypatch.setenv("ORCHRM_RM", str(rm_folder))
    from_file = load_reward_func()(list(queries), list(prompts), [q] * len(texts))
    assert from_file["rewards"] == pytest.approx(trained, abs=1e-6)
    # the route, one sample a request; the 1 MB texts are past the server's item limit (413) and a lone surrogate
    # cannot be sent as JSON, so those are left out here
    small = [i for i, t in enumerate(texts) if len(t) < 90_000 and "\ud800" not in t]
    answers = post_each(server, [(q, texts[i]) for i in small], [q] * len(small))
    assert [a["rewards"][0] for a in answers] == pytest.approx([trained[i] for i in small], abs=1e-6)


def test_odd_batches_are_unscored_never_a_crash(rm_folder, monkeypatch):
    monkeypatch.setenv("ORCHRM_RM", str(rm_folder))
    out = load_reward_func()([None, 7, "x"], ["p"], [["a list"], {"question": None}])
    assert out["rewards"] == [0.0] * 3 and out["extra_logs"]["orchrm_unscored"] == [1.0] * 3
