import json
import subprocess
import sys

MO = (
    "<thinking>one agent</thinking><agent><agent_id>A</agent_id><agent_name>{name}</agent_name>"
    "<agent_description>d</agent_description>"
    "<required_arguments><agent_input></agent_input></required_arguments></agent>"
)


def orchrm(*args):
    return subprocess.run([sys.executable, "-m", "orchrm", *args], capture_output=True, text=True, timeout=120)


def test_import_then_pairs_without_running_any_agent(tmp_path):
    rows = [
        {"question": f"q{q}", "plan": MO.format(name=name), "final_answer": answer, "correct": answer == "right"}
        for q in range(3)
        for name, answer in (("CoTAgent", "right"), ("SCAgent", "wrong"), ("Wizard", "wrong"))
    ]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = orchrm(
        "import", str(tmp_path / "rows.jsonl"), "--out", str(tmp_path / "run"), "--plan-format", "mas-orchestra"
    )
    assert out.returncode == 0, out.stderr
    assert (
        "9 executions of 3 questions: 6 valid plans" in out.stdout and "invalid plans (unknown_type): 3" in out.stdout
    )
    out = orchrm("pairs", str(tmp_path / "run"), "--out", str(tmp_path / "pairs"), "--val-fraction", "0")
    assert out.returncode == 0, out.stderr
    stats = json.loads((tmp_path / "pairs" / "stats.json").read_text())
    assert stats["per_source"]["correct-over-incorrect"]["train"] == 6


def test_a_bad_row_is_one_line_naming_file_and_line(tmp_path):
    (tmp_path / "rows.jsonl").write_text(
        '{"question": "q", "plan": "{}"}\n{"question": "q", "plan": "{}", "grade": 1}\n'
    )
    out = orchrm("import", str(tmp_path / "rows.jsonl"), "--out", str(tmp_path / "run"))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    first = out.stderr.strip().splitlines()[0]
    assert first.startswith("error:") and "rows.jsonl:2: grade: Extra inputs are not permitted" in first
    assert not (tmp_path / "run").exists()
    out = orchrm("import", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "run"))
    assert out.returncode == 1 and out.stderr.startswith("error: cannot read") and "Traceback" not in out.stderr
