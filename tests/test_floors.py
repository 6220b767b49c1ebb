"""Import direction: each room of `orchrm` imports only from rooms on a lower floor (data flows task -> plans ->
traces -> evidence -> pairs -> RM -> selection/training), and rooms on one floor never import each other.

Every import counts, at module level or inside a function (a late import is still a dependency, only a hidden
one). A new room fails here until it is given a floor.

Inside every package (a room, or a package within one) the modules import one another without a circle: two
modules that each need the other (`rm.model` exporting through `rm.export`, which reads the model) are one job
split in the wrong place. Imports under `if TYPE_CHECKING:` name a type for an annotation and never run, so they
do not close a circle.
"""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "orchrm"

#: Lowest first. Rooms on one floor are kept apart: `mas` never imports `evidence` (both take `sandbox` from
#: below), `grpo` and `adapters` never import each other (both take `completions` from below), and `samples`
#: holds the GRPO sample record that `grpo` writes and `view` reads; `side_by_side` (two awaitables, the first
#: failure stops the other) imports nothing of orchrm's. `loop` sits below `view`, which reads a loop
#: folder by the names `loop` declares (`LOOP_FILE`, its stage folders).
FLOORS: list[set[str]] = [
    {"errors", "version", "completions", "side_by_side"},
    {"safejson", "hashing", "paths", "profiles"},
    {"atomic", "jsonl"},
    {"attempts"},
    {"sandbox", "llm", "samples", "folders"},
    {"tasks"},
    {"mas"},
    {"evidence"},
    {"pairs"},
    {"rm"},
    {"adapters", "grpo", "bon"},
    {"loop"},
    {"view"},
    {"cli"},
    {"__main__"},
]
#: Downward imports that are still not wanted: a room reading a file must not pull in the room that writes it.
APART = {("view", "grpo"): "the viewer reads samples.jsonl through `orchrm.samples`, not the training stack"}

#: Inside `mas`: the agent catalog (`options`) and the rollout settings (`run_config`) are leaves, plans use the
#: catalog, traces record plans, agents run them,
#: the executor and orchestrator use agents, the run folder and rollouts sit on top; interop only converts
#: plans and traces; `completion` (what in a model's text is the plan) reads both plan formats.
MAS_FLOORS: list[set[str]] = [
    {"options", "run_config"},
    {"plans"},
    {"traces"},
    {"agents", "interop", "run_folder"},
    {"completion"},
    {"executor", "orchestrator"},
    {"rollout"},
]


def _module(path: Path) -> list[str]:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _is_module(parts: list[str]) -> bool:
    base = SRC.parent.joinpath(*parts)
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _type_checking(node: ast.AST) -> bool:
    """`if TYPE_CHECKING:` or `if typing.TYPE_CHECKING:`."""
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_walk(node: ast.AST) -> list[ast.AST]:
    """`ast.walk` without the bodies of `if TYPE_CHECKING:` blocks (their `else` is kept)."""
    out = [node]
    for child in ast.iter_child_nodes(node):
        if _type_checking(child):
            out.append(child.test)  # type: ignore[attr-defined]
            for kept in child.orelse:  # type: ignore[attr-defined]
                out += _runtime_walk(kept)
        else:
            out += _runtime_walk(child)
    return out


def _targets(path: Path, *, runtime: bool = False) -> list[list[str]]:
    """Every orchrm module `path` imports, as name parts (`from a import b` is `a.b` when b is a module); with
    `runtime`, not those under `if TYPE_CHECKING:`."""
    here = _module(path)
    package = here if path.name == "__init__.py" else here[:-1]
    out: list[list[str]] = []
    tree = ast.parse(path.read_text())
    for node in _runtime_walk(tree) if runtime else ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name.split(".") for a in node.names if a.name.split(".")[0] == "orchrm"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1] + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "orchrm":
                base = node.module.split(".")
            else:
                continue
            for a in node.names:
                # a name from the root is one of its lazy exports (`orchrm.__version__`), kept as its own name
                out.append(base + [a.name] if _is_module(base + [a.name]) or base == ["orchrm"] else base)
    return out


def _edges(depth: int, within: str | None = None) -> set[tuple[str, str, str]]:
    """(importer room, imported room, file) for imports crossing rooms; rooms are the name part at `depth`."""
    root = SRC / within if within else SRC
    edges = set()
    for path in root.rglob("*.py"):
        here = _module(path)
        if len(here) <= depth:  # the room's own front door (orchrm/__init__.py, mas/__init__.py)
            continue
        for target in _targets(path):
            if target == ["orchrm", "__version__"]:  # defined by orchrm/version.py
                target = ["orchrm", "version"]
            assert _is_module(target[:2]), f"{path.relative_to(SRC)} imports {target[1]} from orchrm's front door"
            if within and target[:2] != ["orchrm", within]:
                continue
            assert len(target) > depth, f"{path.relative_to(SRC)} imports {'.'.join(target)}, a package's front door"
            if here[depth] != target[depth]:
                edges.add((here[depth], target[depth], str(path.relative_to(SRC))))
    return edges


def _floor_of(floors: list[set[str]]) -> dict[str, int]:
    return {room: i for i, rooms in enumerate(floors) for room in rooms}


def _wrong_way(edges: set[tuple[str, str, str]], floors: list[set[str]]) -> list[str]:
    floor = _floor_of(floors)
    return sorted(f"{f}: {a} -> {b}" for a, b, f in edges if floor[b] >= floor[a])


def test_every_room_has_a_floor():
    rooms = {
        p.stem if p.is_file() else p.name for p in SRC.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()
    }
    assert rooms - {"__init__"} == set(_floor_of(FLOORS))


def test_rooms_import_only_from_lower_floors():
    assert _wrong_way(_edges(1), FLOORS) == []


@pytest.mark.parametrize(("importer", "imported"), list(APART))
def test_rooms_kept_apart(importer, imported):
    assert [f for a, b, f in _edges(1) if (a, b) == (importer, imported)] == [], APART[(importer, imported)]


def test_mas_parts_import_only_from_lower_floors():
    edges = _edges(2, within="mas")
    rooms = {
        p.stem if p.is_file() else p.name
        for p in (SRC / "mas").iterdir()
        if p.suffix == ".py" or (p / "__init__.py").is_file()
    }
    assert rooms - {"__init__"} == set(_floor_of(MAS_FLOORS))
    assert _wrong_way(edges, MAS_FLOORS) == []


def _package_edges(package: Path) -> dict[str, set[str]]:
    """module -> the modules it imports at run time, among the direct parts of `package` (a part that is itself a
    package counts as one); the package's own `__init__` is its front door, not a part."""
    parts = _module(package / "__init__.py")
    depth = len(parts)
    edges: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        here = _module(path)
        if len(here) <= depth:
            continue
        for target in _targets(path, runtime=True):
            if target[:depth] == parts and len(target) > depth and target[depth] != here[depth]:
                edges.setdefault(here[depth], set()).add(target[depth])
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The sets of modules that reach one another through `edges` (Tarjan's strongly connected components of
    more than one module), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = stack[stack.index(v) :]
            del stack[stack.index(v) :]
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def test_circles_are_found():
    edges = {"model": {"export", "device"}, "export": {"plain"}, "plain": {"model"}, "device": set(), "a": {"b"}}
    assert circles(edges) == [["export", "model", "plain"]]
    assert circles({"a": {"b"}, "b": {"c"}}) == []


def test_type_checking_imports_do_not_run():
    tree = ast.parse(
        "from typing import TYPE_CHECKING\nimport typing\nif TYPE_CHECKING:\n    import a\nelse:\n    import b\n"
        "if typing.TYPE_CHECKING:\n    import c\ndef f():\n    import d\n"
    )
    names = {a.name for n in _runtime_walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert names == {"typing", "b", "d"}


@pytest.mark.parametrize(
    "package", sorted(p.parent for p in SRC.rglob("__init__.py")), ids=lambda p: p.relative_to(SRC.parent).as_posix()
)
def test_no_circles_inside_packages(package):
    assert circles(_package_edges(package)) == []
