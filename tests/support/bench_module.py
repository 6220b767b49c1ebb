"""A bench script loaded as a module for its tests, with bench/ on sys.path as when bench/ runs it."""

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).parent.parent.parent / "bench"


def load_bench(request: pytest.FixtureRequest, script: str) -> ModuleType:
    """bench/`script` imported under a name of its own; bench/ leaves sys.path when the requesting fixture ends."""
    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(BENCH))  # a script imports its neighbours (content_variants, stamp) by plain name
    request.addfinalizer(mp.undo)
    spec = importlib.util.spec_from_file_location(f"bench_{Path(script).stem}", BENCH / script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
