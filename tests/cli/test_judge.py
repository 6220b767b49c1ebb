import json
import subprocess
import sys

import pytest

from fake_openai import FakeOpenAI

Q = "What is 17 + 25 - 8?"
GOOD = "17 + 25 = 42. 42 - 8 = 34. Answer: 34"
BAD = "17 + 25 = 42. 42 - 8 = 36. Answer: 36"


def orchrm(*args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "orchrm", *args], capture_output=True, text=True, input=stdin, timeout=120
    )


def write_rows(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


@pytest.fixture
def fake():
    server = FakeOpenAI(
        default_text=json.dumps({"action": "final_answer", "reason": "A is right", "verdict": "A", "confidence": 0.9})
    )
    server.start()
    yield server
    server.stop()


def test_rules_only_pairwise_with_references(tmp_path):
    rows = write_rows(
        tmp_path / "in.jsonl",
        [
            {"id": 1, "question": Q, "responses": [GOOD, BAD], "reference": "34", "kind": "math"},
            {"id": 2, "question": Q, "responses": [BAD, GOOD], "reference": "34", "kind": "math"},
        ],
    )
    out = orchrm("judge", str(rows), "--no-llm", "-o", str(tmp_path / "out.jsonl"))
    assert out.returncode == 0, out.stderr
    judged = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [(j["id"], j["verdict"], j["llm_skipped"]) for j in judged] == [(1, "A", True), (2, "B", True)]
    assert "2 judged (2 ok" in out.stderr
    assert "judged rows 2/2 (100%) · done" in out.stderr  # a log gets progress lines, not silence
    quiet = orchrm("judge", str(rows), "--no-llm", "--quiet", "-o", str(tmp_path / "q.jsonl"))
    assert quiet.returncode == 0 and "judged rows" not in quiet.stderr


def test_pointwise_and_listwise_from_stdin():
    row = json.dumps({"question": Q, "response": BAD, "reference": "34", "kind": "math"})
    out = orchrm("judge", "-", "--mode", "pointwise", "--no-llm", stdin=row)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["score"] < 0.5
    row = json.dumps({"question": Q, "responses": [BAD, GOOD, "no idea"], "reference": "34", "kind": "math"})
    out = orchrm("judge", "-", "--mode", "listwise", "--no-llm", stdin=row)
    assert json.loads(out.stdout)["best"] == 1


def test_reference_free_pairwise_through_a_served_model(fake, tmp_path):
    rows = write_rows(tmp_path / "in.jsonl", [{"question": Q, "responses": [GOOD, BAD], "kind": "math"}])
    out = orchrm(
        "judge",
        str(rows),
        "--backend",
        "openai",
        "--base-url",
        fake.url,
        "--model",
        "m",
        "--no-cache",
        "--protocol",
        "json",
    )
    assert out.returncode == 0, out.stderr
    j = json.loads(out.stdout)
    assert len(fake.requests) == 2  # both orders
    assert all(r["response_format"]["type"] == "json_schema" for r in fake.requests)
    assert any("position_bias" in f for f in j["flags"])  # the fake always says A
    assert "verify" in out.stderr  # usage table


def test_bad_input_is_one_line(tmp_path):
    rows = tmp_path / "bad.jsonl"
    rows.write_text('{"question": "q", "responses": ["only one"]}\nnot json\n')
    out = orchrm("judge", str(rows), "--no-llm")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    first = out.stderr.strip().splitlines()[0]
    assert first.startswith("error:") and "2 bad line(s)" in first and "line 1" in first
    out = orchrm("judge", str(rows), "--mode", "sideways")
    assert out.returncode == 1 and "unknown mode" in out.stderr


def test_malformed_skill_folder_is_reported(tmp_path):
    rows = write_rows(tmp_path / "in.jsonl", [{"question": Q, "responses": [GOOD, BAD]}])
    (tmp_path / "skill").mkdir()
    out = orchrm("judge", str(rows), "--no-llm", "--skill", str(tmp_path / "skill"))
    assert out.returncode == 1 and "invalid" in out.stderr and "SKILL.md is missing" in out.stderr


def test_served_model_gets_native_tools_by_default(fake, tmp_path):
    rows = write_rows(tmp_path / "in.jsonl", [{"question": Q, "response": GOOD, "kind": "math"}])
    out = orchrm(
        "judge",
        str(rows),
        "--mode",
        "pointwise",
        "--backend",
        "openai",
        "--base-url",
        fake.url,
        "--model",
        "m",
        "--no-cache",
    )
    assert out.returncode == 0, out.stderr
    assert "tools" in fake.requests[0]
    j = json.loads(out.stdout)
    # the fake answers in text, not a tool call: recorded, and the run continues with JSON actions
    assert any(f.startswith("no_tool_call") for f in j["flags"])
