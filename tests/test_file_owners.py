"""One owner per file: every file name of an output folder is declared once, by the module that owns it, and
everything else (the other rooms, the viewer, the CLI, the benchmarks) names it through that module's constant
and reads it through that module's reader.

The walk looks at every string constant in src/ and bench/ (f-string pieces included) that is not a docstring
or a bare string statement, and fails on one that names an owned file outside its owner: a path (`"run.json"`,
`"*/bon/results.json"`) and a sentence (a help text, an error message) alike, so a renamed file is renamed
everywhere it is mentioned. A benchmark's own output that happens to share a name is listed in `ALLOWED` with
its reason. Every committed run folder under bench/results must also still read through the owners' readers.
"""

import ast
import importlib
import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "orchrm"

#: module -> the constants naming the files it owns (each name has exactly one owner).
OWNERS: dict[str, tuple[str, ...]] = {
    "orchrm.folders": ("STAMP_FILE",),
    "orchrm.samples": ("SAMPLES_FILE",),
    "orchrm.llm.accounting": ("TOKENS_LOG", "TOKENS_FILE"),
    "orchrm.llm.weights": ("CARD_FILE",),
    "orchrm.mas.traces": ("TRACES_FILE", "RUN_FILE"),
    "orchrm.mas.interop._executions": ("IMPORT_FILE",),
    "orchrm.pairs.rows": ("TRAIN_FILE", "VAL_FILE", "STATS_FILE", "MANIFEST_FILE"),
    "orchrm.pairs.counterfactual": ("CONFIG_FILE", "EDITS_FILE"),
    "orchrm.rm.model": ("CARD_FILE",),
    "orchrm.rm.export": ("TEMPLATE_FILE",),
    "orchrm.grpo.timing": ("STEPS_FILE",),
    "orchrm.grpo.diverse": ("DRAWS_FILE",),
    "orchrm.grpo.checkpoints": ("SEAL_FILE",),
    "orchrm.grpo.adapter": ("ADAPTER_CARD", "_CACHE_CARD"),
    "orchrm.bon.results": ("RESULTS_FILE", "PER_QUESTION_FILE"),
    "orchrm.bon.judge": ("JUDGMENTS_FILE",),
    "orchrm.loop": ("LOOP_FILE",),
}

#: (file, name): a file of the same name that is not the owner's, with the reason.
ALLOWED: dict[tuple[str, str], str] = {
    ("bench/train_orchestrator.py", "results.json"): "the benchmark's own summary of its arms, not a best-of-N run's",
    ("bench/rm_backbones.py", "results.json"): "the benchmark's own results file for a --limit run",
}


def _owned() -> dict[str, Path]:
    """Each owned file name -> its owner's source file."""
    out: dict[str, Path] = {}
    for module, constants in OWNERS.items():
        mod = importlib.import_module(module)
        for const in constants:
            name = getattr(mod, const)
            assert name not in out, f"{name} is declared by {out[name]} and {mod.__file__}"
            out[name] = Path(mod.__file__).resolve()
    return out


def _statement_strings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are whole statements: docstrings and bare string statements."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }


def _patterns(names: dict[str, Path]) -> dict[str, re.Pattern[str]]:
    # the name as a path component: `tokens.json` is not found in `tokens.jsonl`, nor `run.json` in `x-run.json`
    return {n: re.compile(r"(?<![\w.-])" + re.escape(n) + r"(?!\w)") for n in names}


def literals_outside_owners() -> list[str]:
    owned = _owned()
    patterns = _patterns(owned)
    found = []
    for path in sorted([*SRC.rglob("*.py"), *(ROOT / "bench").glob("*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(), filename=rel)
        skip = _statement_strings(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in skip:
                continue
            for name, pattern in patterns.items():
                if pattern.search(node.value) and path.resolve() != owned[name] and (rel, name) not in ALLOWED:
                    found.append(f"{rel}:{node.lineno}: {name!r}")
    return found


def test_every_owned_file_name_is_spelled_only_by_its_owner():
    assert literals_outside_owners() == [], "name these files by their owner's constant (see OWNERS)"


def test_the_walk_finds_names_in_code_and_prose_but_not_in_docstrings():
    tree = ast.parse(
        '"""run.json"""\nx = p / "run.json"\ny = f"{p}/run.json.gz"\nz = "a run.json file"\nw = "tokens.jsonl"'
    )
    skip = _statement_strings(tree)
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in skip]
    pattern = _patterns({"run.json": Path(), "tokens.json": Path()})
    assert sorted(s for s in strings if pattern["run.json"].search(s)) == [
        "/run.json.gz",
        "a run.json file",
        "run.json",
    ]
    assert not any(pattern["tokens.json"].search(s) for s in strings)


def test_the_allowed_list_names_only_literals_that_exist():
    owned = _patterns(_owned())
    for (rel, name), reason in ALLOWED.items():
        text = (ROOT / rel).read_text()
        assert owned[name].search(text), f"{rel} no longer spells {name}: drop it from ALLOWED ({reason})"


def _committed(name: str) -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", f"bench/results/**/{name}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / f for f in out]


def _read_committed(path: Path) -> object:
    """`path` read by its owner's reader."""
    from orchrm.bon.results import read_per_question, read_results
    from orchrm.folders import read_stamp
    from orchrm.grpo.config import read_training_config
    from orchrm.grpo.timing import read_steps
    from orchrm.llm.accounting import read_totals
    from orchrm.loop import read_loop_config
    from orchrm.mas.run_folder import read_run_config
    from orchrm.pairs.rows import read_pair_stats
    from orchrm.samples import read_samples

    folder = path.parent
    readers = {
        "loop.json": read_loop_config,
        "tokens.json": read_totals,
        "folder.json": read_stamp,
        "stats.json": read_pair_stats,
        "samples.jsonl": read_samples,
        "steps.jsonl": read_steps,
        "per_question.jsonl": read_per_question,
        "results.json": read_results,
    }
    if path.name == "run.json":  # a training run's (it samples plans) or a rollout's
        return (read_training_config if (folder / "samples.jsonl").exists() else read_run_config)(folder)
    return readers[path.name](folder)


COMMITTED = [
    p
    for name in (
        "loop.json",
        "run.json",
        "tokens.json",
        "folder.json",
        "stats.json",
        "samples.jsonl",
        "steps.jsonl",
        "per_question.jsonl",
    )
    for p in _committed(name)
] + [p for p in _committed("results.json") if p.parent.name == "bon"]


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.relative_to(ROOT / "bench" / "results").as_posix())
def test_every_committed_file_reads_through_its_owner(path):
    assert _read_committed(path) is not None


def test_committed_results_dump_back_their_own_keys():
    from orchrm.bon.results import read_results

    for path in [p for p in _committed("results.json") if p.parent.name == "bon"]:
        assert list(read_results(path.parent).dump()) == list(json.loads(path.read_text())), path
