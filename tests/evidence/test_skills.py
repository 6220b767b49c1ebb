import shutil
from pathlib import Path

import pytest

from orchrm.evidence.execute import run_resource
from orchrm.evidence.skills import SHIPPED_DIR, SkillError, load_skill, load_skills


def test_shipped_skills_load():
    skills = {s.name: s for s in load_skills()}
    assert set(skills) == {"math-answer", "short-answer-qa", "mas-trajectory", "pairwise-judge"}
    for s in skills.values():
        assert s.body.strip() and s.resources
        assert "Output contract" in s.body
        for r in s.resources:
            if r.type in ("verifier", "script"):
                assert r.entry
            else:
                assert s.read(r).strip()


def _copy(tmp_path: Path, name="math-answer") -> Path:
    dst = tmp_path / name
    shutil.copytree(SHIPPED_DIR / name, dst)
    return dst


def test_malformed_skill_reports_every_problem_at_once(tmp_path):
    root = _copy(tmp_path)
    (root / "SKILL.md").write_text("---\nname: Bad Name\ndescription: short\n---\nbody\n")
    (root / "resources.yaml").write_text(
        """resources:
  - id: a
    type: verifier
    impact: strong
    entry: builtin:no_such_verifier
  - id: a
    type: rubric
    impact: veto
    path: rubrics/missing.md
  - id: c
    type: spreadsheet
    impact: evidence
  - id: d
    type: reference
    impact: evidence
    path: ../../etc/passwd
"""
    )
    with pytest.raises(SkillError) as exc:
        load_skill(root)
    detail = exc.value.detail
    for needle in [
        "name",
        "description",
        "applies_to",
        "no_such_verifier",
        "duplicate resource id 'a'",
        "missing.md",
        "impact 'veto' is for verifiers",
        "spreadsheet",
        "outside the skill folder",
    ]:
        assert needle in detail, (needle, detail)
    assert "problems" in exc.value.message


def test_missing_files_and_bad_yaml(tmp_path):
    root = tmp_path / "empty"
    root.mkdir()
    with pytest.raises(SkillError) as exc:
        load_skill(root)
    assert "SKILL.md is missing" in exc.value.detail and "resources.yaml is missing" in exc.value.detail
    bad = _copy(tmp_path)
    (bad / "resources.yaml").write_text("resources: [unclosed")
    with pytest.raises(SkillError, match="invalid"):
        load_skill(bad)


def test_load_skills_reports_all_folders_together(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    with pytest.raises(SkillError) as exc:
        load_skills([a, b])
    assert "2 skill folder(s)" in exc.value.message


def test_script_verifier_runs_in_the_sandbox_and_a_crash_is_an_error(tmp_path):
    root = _copy(tmp_path)
    skill = load_skill(root)
    res = skill.resource("arithmetic-consistency")
    ok = run_resource(skill, res, "2 + 2 = 4. 4 * 3 = 13. Answer: 13")
    assert ok.verdict == "partial" and ok.score == 0.5
    (root / res.entry).write_text(
        "import os\ndef verify(response, reference, question, **k):\n    return open('/etc/shadow').read()\n"
    )
    crashed = run_resource(load_skill(root), res, "2 + 2 = 4")
    assert crashed.verdict == "error" and crashed.score is None


def test_resource_missing_an_input_abstains():
    skill = {s.name: s for s in load_skills()}["math-answer"]
    r = run_resource(skill, skill.resource("reference-equivalence"), "Answer: 4", reference=None)
    assert r.verdict == "abstain" and r.score is None


@pytest.mark.parametrize(
    ("response", "verdict", "score"),
    [
        ("478 / 1 + -682 = 478 - 682 = -204", "pass", 1.0),  # a chain of equalities is not a wrong step
        ("478 + (-682) = 478 - 682\n478 - 682 = -184\nAnswer: -184", "partial", 0.5),
        ("57 + 87 + 70 = 204", "fail", 0.0),
        ("\\(57 + 87 = 144\\)\n2. \\(144 + 70 = 214\\)", "pass", 1.0),
        ("3 \\times 12 = 36. 36 - 5 = 30.", "partial", 0.5),
        ("The answer is 42.", "abstain", None),
    ],
)
def test_arithmetic_consistency_checks_each_written_step(response, verdict, score):
    skill = {s.name: s for s in load_skills()}["math-answer"]
    r = run_resource(skill, skill.resource("arithmetic-consistency"), response)
    assert (r.verdict, r.score) == (verdict, score), r


def test_an_executed_trajectory_is_judged_by_the_trajectory_skill():
    from orchrm.evidence import trajectory_response

    trace = {
        "plan_text": "a1: solve; a2: check a1",
        "agents": [
            {"id": "a1", "type": "cot", "status": "ok", "input": "solve", "output": "17 + 25 - 8 = 34. Answer: 34"},
            {"id": "a2", "type": "reflexion", "status": "ok", "input": "check ${a1}", "output": "Checked. Answer: 36"},
        ],
        "final_answer": "36",
    }
    skill = {s.name: s for s in load_skills()}["mas-trajectory"]
    r = run_resource(skill, skill.resource("trajectory-consistency"), trajectory_response(trace))
    assert r.verdict == "partial" and 0 < r.score < 1 and "agreement 0.50" in r.reason
    agreeing = {
        **trace,
        "agents": [trace["agents"][0], {**trace["agents"][1], "output": "Answer: 34"}],
        "final_answer": "34",
    }
    assert (
        run_resource(skill, skill.resource("trajectory-consistency"), trajectory_response(agreeing)).verdict == "pass"
    )
