"""The reward-model server, over real HTTP on 127.0.0.1."""

import json
import socket
import threading
import time

import httpx
import pytest
import uvicorn
from synthetic_pairs import plan_json, question

from orchrm.rm import RewardModel
from orchrm.rm.server import create_app


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(rm_dir):
    model = RewardModel.load(rm_dir)
    port = _free_port()
    app = create_app(model, token="s3cret", max_items=4, max_body_bytes=20_000)
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.started
    yield f"http://127.0.0.1:{port}", model
    srv.should_exit = True
    thread.join(10)


AUTH = {"Authorization": "Bearer s3cret"}


def test_health_needs_no_token(server):
    url, _ = server
    assert httpx.get(f"{url}/health").json() == {"status": "ok"}


def test_score_matches_the_python_api(server):
    url, model = server
    items = [
        {"question": question(7), "plan": json.loads(plan_json("good", 7))},
        {"question": question(7), "plan": plan_json("bad", 7)},
        {"question": question(7), "plan": "free text, not a plan"},
    ]
    r = httpx.post(f"{url}/score", json={"items": items}, headers=AUTH)
    assert r.status_code == 200, r.text
    scores = r.json()["scores"]
    expected = model.score(question(7), [plan_json("good", 7), plan_json("bad", 7), "free text, not a plan"])
    assert scores == pytest.approx(expected, abs=1e-5)
    assert scores[0] > scores[1]


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
