from collections import Counter
from pathlib import Path

TESTS = Path(__file__).parent


def test_test_files_have_unique_basenames():
    # tests/ has no __init__.py files, so pytest imports each test module by its basename: two files with
    # one name in different folders stop the whole collection ("import file mismatch")
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert [n for n, c in names.items() if c > 1] == []
