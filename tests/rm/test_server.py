"""The reward-model server, over real HTTP on 127.0.0.1."""

import json

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fake_rm import FakeRM
from live_server import live_server
from orchrm.rm import RewardModel
from orchrm.rm.server import create_app
from synthetic_pairs import plan_json, question


@pytest.fixture(scope="module")
def server(rm_dir):
    model = RewardModel.load(rm_dir)
    with live_server(create_app(model, token="s3cret", max_items=4, max_body_bytes=20_000)) as url:
        yield url, model


AUTH = {"Authorization": "Bearer s3cret"}


def test_health_needs_no_token(server):
    url, _ = server
    health = httpx.get(f"{url}/health").json()
    assert health["status"] == "ok" and health["queue"] == {
        "requests": 0,
        "items": 0,
        "held": 0,
        "max_requests": 512,
        "max_items": 2048,
    }


def test_score_matches_the_python_api(server):
    url, model = server
    items = [
        {"question": question(7), "plan": json.loads(plan_json("good", 7))},
        {"question": question(7), "plan": plan_json("bad", 7)},
        {"question": question(7), "plan": "free text, not a plan"},
    ]
    r = httpx.post(f"{url}/score", json={"items": items}, headers=AUTH)
    assert r.status_code == 200, r.text
    scores, errors = r.json()["scores"], r.json()["errors"]
    expected = model.score(question(7), [plan_json("good", 7), plan_json("bad", 7)])
    assert scores[:2] == pytest.approx(expected, abs=1e-5) and errors[:2] == [None, None]
    assert scores[0] > scores[1]
    # text with no plan is never given a model score: null, and why
    assert scores[2] is None and errors[2].startswith("no valid plan (parse): no JSON object")


def test_info_shows_the_card(server):
    url, _ = server
    info = httpx.get(f"{url}/info", headers=AUTH).json()
    assert info["card"]["backbone"] == "all-minilm-l6-v2" and info["limits"]["max_items"] == 4
    assert "history" not in info["card"]["metrics"]


@pytest.mark.parametrize(
    "headers, body, status",
    [
        ({}, {"items": [{"question": "q", "plan": "p"}]}, 401),
        ({"Authorization": "Bearer wrong"}, {"items": [{"question": "q", "plan": "p"}]}, 401),
        (AUTH, {"items": [{"question": "q", "plan": "p"}] * 5}, 413),
        (AUTH, {"items": [{"question": "q" * 30_000, "plan": "p"}]}, 413),
        (AUTH, {"items": []}, 422),
        (AUTH, {"items": [{"plan": "p"}]}, 422),
        (AUTH, {"wrong": 1}, 422),
    ],
    ids=["no-token", "bad-token", "too-many-items", "too-large", "empty", "no-question", "bad-shape"],
)
def test_bad_requests_get_4xx(server, headers, body, status):
    url, _ = server
    r = httpx.post(f"{url}/score", json=body, headers=headers)
    assert r.status_code == status, r.text


# ---- hostile requests, against a fake model (no weights needed) --------------------------------------


@pytest.fixture(scope="module")
def client():
    app = create_app(FakeRM(), max_items=4, max_body_bytes=200_000, max_item_chars=50_000)
    return TestClient(app, raise_server_exceptions=False)


def _items(plan, question="What is 2 + 3?"):
    return {"items": [{"question": question, "plan": plan}]}


@pytest.mark.parametrize(
    "body, status",
    [
        (json.dumps(_items('{"agents": ' + "[" * 20_000 + "]" * 20_000 + "}")), 200),  # a plan string is data
        ("[" * 50_000 + "]" * 50_000, 422),
        ('{"items": [{"question": "q", "plan": ' + "[" * 40 + "]" * 40 + "}]}", 422),
        ('{"items": [{"question": "q", "plan": {"n": ' + "9" * 5000 + "}}]}", 422),
        ('{"items": [{"question": "q\\ud800", "plan": "p"}]}', 422),
        ('{"items": [{"question": "q", "plan": "\\udfff"}]}', 422),
        ('{"items": [{"question": "q", "plan": {"x": NaN}}]}', 422),
        (b'{"items": [{"question": "\xff", "plan": "p"}]}', 422),
        ("", 422),
        ("not json", 422),
        ("[]", 422),
        (json.dumps(_items("{" * 60_000)), 413),
        (json.dumps(_items({"agents": [{"id": f"a{i}", "type": "cot", "input": "x"} for i in range(2000)]})), 413),
    ],
    ids=[
        "deep-plan-string",
        "deep-body",
        "deep-plan-object",
        "digits",
        "surrogate-question",
        "surrogate-plan",
        "nan",
        "not-utf8",
        "empty",
        "not-json",
        "not-an-object",
        "big-item",
        "many-agents",
    ],
)
def test_hostile_bodies_get_4xx_never_500(client, body, status):
    # Each body once broke the server: a 500 (digits, surrogates), a 400 (deep bodies), or a stall (a plan string
    # of braces).
    r = client.post("/score", content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text[:300]


def test_a_chunked_body_is_limited_as_it_streams(client):
    def chunks():
        yield b'{"items": [{"question": "q", "plan": "'
        for _ in range(100):
            yield b"x" * 10_000  # 1 MB, five times the limit, with no Content-Length
        yield b'"}]}'

    r = client.post("/score", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413, r.text[:300]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.sampled_from(
            [
                '{"items": [',
                '{"question": "q", "plan": ',
                '"',
                "{",
                "}",
                "[",
                "]",
                ",",
                ":",
                "\\ud800",
                "NaN",
                "9" * 120,
                '{"agents": []}',
                "null",
            ]
        )
        | st.text(max_size=5),
        max_size=40,
    ).map("".join)
)
def test_no_body_gets_a_500(client, body):
    r = client.post(
        "/score", content=body.encode("utf-8", "surrogatepass"), headers={"content-type": "application/json"}
    )
    assert r.status_code in (200, 413, 422), r.text[:300]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=60), st.text(max_size=200))
def test_any_question_and_plan_text_is_scored_or_refused(client, question, plan):
    body = json.dumps(_items(plan, question or "q")).encode("utf-8", "surrogatepass")
    r = client.post("/score", content=body, headers={"content-type": "application/json"})
    assert r.status_code in (200, 422), r.text[:300]


class SlowRM(FakeRM):
    """FakeRM whose every pass takes a while, so that a burst fills a tiny queue."""

    def score_rendered(self, items, *, batch_size=64):
        import time

        time.sleep(0.02)
        return super().score_rendered(items, batch_size=batch_size)


def test_a_burst_past_the_queue_is_held_not_refused():
    """Issue 48: a client that sends once and ignores Retry-After (OpenRLHF's) is not answered 503 while the model
    makes progress: 60 one-item requests at once against a queue of 2 requests are all scored."""
    from concurrent.futures import ThreadPoolExecutor

    from orchrm.rm.server import QueueLimits

    app = create_app(SlowRM(), queue=QueueLimits(pass_tokens=1, max_requests=2, max_items=2))
    with live_server(app) as url, httpx.Client(timeout=60) as http:

        def send(i):
            return http.post(f"{url}/score", json=_items(plan_json("good", i), question(i)))

        with ThreadPoolExecutor(60) as pool:
            replies = list(pool.map(send, range(60)))
        assert [r.status_code for r in replies] == [200] * 60
        assert all(r.json()["scores"][0] is not None for r in replies)
        assert http.get(f"{url}/health").json()["queue"]["held"] == 0
