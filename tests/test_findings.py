"""The pages that make claims say "level" only after an equivalence test: an interval that includes 0 is absence of
evidence, written "not distinguished; interval [a, b]" (issue #41). Quoted words are mentions, not claims."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", "FINDINGS.md", "bench/README.md", "docs/design.md"]
# The words the audit found standing in for an equivalence test; "top-level" is a place, not a claim.
CLAIM_WORDS = re.compile(r"(?<![-\w])(level|reaches|reached|matches|matched|holds|on par)(?![-\w])", re.IGNORECASE)
QUOTED = re.compile(r"\"[^\"\n]*\"|`[^`\n]*`")
TESTED = re.compile(r"equivalent within ±\d+ \(TOST", re.IGNORECASE)


def claims_without_a_test(text: str) -> list[str]:
    """Lines using a claim word outside quotes, unless the same line cites a passed equivalence test."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        bare = QUOTED.sub("", line)
        if CLAIM_WORDS.search(bare) and not TESTED.search(line):
            found.append(f"{number}: {line.strip()[:100]}")
    return found


@pytest.mark.parametrize("page", PAGES)
def test_no_equivalence_word_without_a_test(page):
    assert claims_without_a_test((ROOT / page).read_text()) == []


def test_the_rule_catches_the_audits_sentences():
    assert claims_without_a_test("the RM as reward ends level with the router") != []
    assert claims_without_a_test('"reaches execute" holds (the interval includes 0)') != []
    assert claims_without_a_test("selectors that never read plan text match or beat it; rm matches prior") != []
    assert claims_without_a_test("rm and router are equivalent within ±5 (TOST p = 0.01): level") == []
    assert claims_without_a_test('the words "level" and `holds` are mentioned, and a top-level README') == []


def test_findings_names_a_command_and_a_result_file_for_each_claim_section():
    sections = re.split(r"^## ", (ROOT / "FINDINGS.md").read_text(), flags=re.M)[2:]  # after "How to read"
    for section in sections:
        title = section.splitlines()[0]
        assert re.search(r"bench/\w+\.py|make demo|make test-frameworks", section), f"{title}: no command"
        assert re.search(r"\w+\.json|\.md`|tests/", section), f"{title}: no result file"
