"""The benchmarks of record use orchrm's public API only, so renaming an internal module cannot break them.

The rule, applied to every `import` and `from ... import` in `bench/*.py` whose module is `orchrm` or starts with
`orchrm.` (at module level or inside a function; `importlib` strings and attribute chains are not read):

- the public modules are `orchrm`, the rooms `orchrm.__doc__` names (`orchrm.llm`, `orchrm.mas`, ...) and the
  framework reward files `orchrm.adapters.verl` and `orchrm.adapters.openrlhf`; each has an `__all__`;
- `import M` is public when M is a public module;
- `from M import N` is public when M is a public module and N is in `M.__all__` or `M.N` is a public module;
- anything else is internal: a module inside a room (`orchrm.bon.stats`), a `_` module, a module outside the
  rooms (`orchrm.atomic`), or a name a public module does not list in `__all__`.

There are no exceptions: a bench that attacks or checks an internal reader reaches it through the public function
that calls it (`served_adapter` for an adapter card or seal, `read_run_config` for `run.json`), and one that needs
an internal helper carries its own few lines.
"""

import ast
import importlib
from pathlib import Path

import orchrm

BENCH = Path(__file__).resolve().parents[1] / "bench"
ROOMS = ("llm", "tasks", "mas", "evidence", "pairs", "rm", "bon", "grpo", "adapters", "loop", "view", "cli")
PUBLIC = {"orchrm", *(f"orchrm.{r}" for r in ROOMS), "orchrm.adapters.verl", "orchrm.adapters.openrlhf"}


def _exports(module: str) -> set[str]:
    return set(importlib.import_module(module).__all__)


def _public(module: str, name: str | None) -> bool:
    if module not in PUBLIC:
        return False
    return name is None or name in _exports(module) or f"{module}.{name}" in PUBLIC


def internal_imports(source: str) -> set[str]:
    """The imports in `source` that break the rule above, as "module:name" (or "module")."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "orchrm" and not _public(a.name, None)}
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "orchrm":
            out |= {f"{node.module}:{a.name}" for a in node.names if not _public(node.module, a.name)}
    return out


def test_public_modules_are_documented_and_export_what_they_list():
    for module in sorted(PUBLIC - {"orchrm"}):
        assert f"`{module}`" in (orchrm.__doc__ or ""), module
        mod = importlib.import_module(module)
        assert [n for n in mod.__all__ if getattr(mod, n, None) is None] == [], module


def test_the_rule_reads_imports():
    source = (
        "import orchrm\nimport orchrm.bon\nimport orchrm.bon.stats\nfrom orchrm import RMConfig, jsonl\n"
        "from orchrm.adapters import verl, _core\nfrom orchrm.bon import Bootstrap, stats\n"
        "def f():\n    from orchrm.grpo.checkpoints import SEAL_FILE\n"
    )
    assert internal_imports(source) == {
        "orchrm.bon.stats",
        "orchrm:jsonl",
        "orchrm.adapters:_core",
        "orchrm.bon:stats",
        "orchrm.grpo.checkpoints:SEAL_FILE",
    }


def test_benches_import_only_public_names():
    found = {p.name: sorted(internal_imports(p.read_text())) for p in sorted(BENCH.glob("*.py"))}
    assert {f: n for f, n in found.items() if n} == {}, "bench imports an internal orchrm name (see module doc)"
