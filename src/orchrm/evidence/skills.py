"""Reward-evaluation skills on disk: loading, validating (every problem at once), and reading resources.

A skill is a folder:

    SKILL.md          front matter (name, description, applies_to) + the procedure and output contract
    resources.yaml    the manifest: resources with id, type, impact, cost, applies_to, visibility, ...
    rubrics/ references/ verifiers/ scripts/

A verifier resource's `entry` is either `builtin:<name>` (a rule verifier in `verifiers.BUILTIN`, run
in-process: our own code) or a path to a Python file in the skill folder defining
`verify(response, reference, question, **params) -> {"verdict", "score", "reason"}`; those run in the
sandbox, never in-process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import OrchrmError
from .verifiers import BUILTIN

ResourceType = Literal["rubric", "checklist", "reference", "verifier", "script", "principle"]
Impact = Literal["veto", "strong", "evidence", "calibration"]
Cost = Literal["low", "medium", "high"]
Visibility = Literal["agent", "code"]

SHIPPED_DIR = Path(__file__).with_name("skills")
_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*\n?(.*)\Z", re.DOTALL)
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def applies(applies_to: list[str], tags: set[str]) -> bool:
    """Whether a skill or resource declared for `applies_to` serves a task with these tags (kind, mode)."""
    return "any" in applies_to or bool(tags & set(applies_to))


class SkillError(OrchrmError):
    """A skill folder that cannot be used; `detail` lists every problem found."""


class SkillFront(BaseModel):
    """SKILL.md's front matter."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=_NAME.pattern)
    description: str = Field(min_length=10)
    applies_to: list[str] = Field(
        min_length=1, description="Task kinds and modes: math, qa, trajectory, pairwise, any, ..."
    )


class Resource(BaseModel):
    """One entry of resources.yaml."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=_NAME.pattern)
    type: ResourceType
    impact: Impact
    cost: Cost = "low"
    applies_to: list[str] = Field(default_factory=lambda: ["any"])
    visibility: Visibility = Field(
        "agent", description="agent: listed to the evaluator agent; code: used by code only."
    )
    description: str = ""
    path: str | None = Field(None, description="The resource's file, relative to the skill folder.")
    entry: str | None = Field(None, description="verifier/script: builtin:<name> or a .py path in the skill.")
    params: dict[str, Any] = Field(default_factory=dict)
    requires: list[Literal["reference", "question", "entry"]] = Field(default_factory=list)
    weight: float = Field(1.0, ge=0.0, description="Weight among `evidence` items in aggregation.")
    cap: float = Field(0.0, ge=0.0, le=1.0, description="veto: the score a failed check caps the result at.")

    def applies(self, tags: set[str]) -> bool:
        return applies(self.applies_to, tags)

    @property
    def runnable(self) -> bool:
        """A verifier or script: code that runs on a response (the other types are text to read)."""
        return self.type in ("verifier", "script")


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    resources: list[Resource] = Field(min_length=1)


@dataclass(frozen=True)
class Skill:
    """A validated skill folder."""

    root: Path
    front: SkillFront
    body: str
    resources: tuple[Resource, ...]

    @property
    def name(self) -> str:
        return self.front.name

    @property
    def description(self) -> str:
        return self.front.description

    def resource(self, rid: str) -> Resource:
        for r in self.resources:
            if r.id == rid:
                return r
        raise KeyError(rid)

    def applies(self, tags: set[str]) -> bool:
        return applies(self.front.applies_to, tags)

    def read(self, resource: Resource, max_chars: int = 6000) -> str:
        """A text resource's content (a verifier/script: its source or builtin name)."""
        if resource.path is not None:
            return (self.root / resource.path).read_text()[:max_chars]
        if resource.entry is not None and not resource.entry.startswith("builtin:"):
            return (self.root / resource.entry).read_text()[:max_chars]
        return f"{resource.entry} with params {resource.params}: {resource.description}"

    def full_text(self) -> str:
        """SKILL.md plus every agent-visible text resource, for a flat one-prompt judge."""
        parts = [f"# Skill: {self.name}\n{self.body.strip()}"]
        for r in self.resources:
            if r.visibility == "agent" and r.type in ("rubric", "checklist", "principle", "reference") and r.path:
                parts.append(f"## {r.type}: {r.id}\n{self.read(r).strip()}")
        return "\n\n".join(parts)


def load_skill(folder: str | Path) -> Skill:
    """Load and validate one skill folder; a `SkillError` lists every problem, not just the first."""
    root = Path(folder)
    problems: list[str] = []
    front: SkillFront | None = None
    body = ""
    skill_md = root / "SKILL.md"
    if not root.is_dir():
        raise SkillError(f"skill folder {root} does not exist")
    if not skill_md.is_file():
        problems.append("SKILL.md is missing")
    else:
        m = _FRONT.match(skill_md.read_text())
        if m is None:
            problems.append("SKILL.md has no front matter (a '---' block at the top)")
        else:
            body = m.group(2)
            front = _validated(SkillFront, _yaml(m.group(1), "SKILL.md front matter", problems), "SKILL.md", problems)
            if not body.strip():
                problems.append("SKILL.md has no body (the procedure and output contract)")
    resources: list[Resource] = []
    manifest_path = root / "resources.yaml"
    if not manifest_path.is_file():
        problems.append("resources.yaml is missing")
    else:
        raw = _yaml(manifest_path.read_text(), "resources.yaml", problems)
        if raw is not None:
            resources = _resources(raw, problems)
    seen: set[str] = set()
    for r in resources:
        if r.id in seen:
            problems.append(f"resources.yaml: duplicate resource id {r.id!r}")
        seen.add(r.id)
        problems.extend(f"resources.yaml: {r.id}: {p}" for p in _resource_problems(root, r))
    if problems:
        raise SkillError(
            f"skill folder {root} is invalid ({len(problems)} problem{'s' if len(problems) > 1 else ''})",
            detail="\n".join(f"- {p}" for p in problems),
        )
    assert front is not None
    return Skill(root=root, front=front, body=body, resources=tuple(resources))


def load_skills(folders: list[str | Path] | None = None) -> list[Skill]:
    """The given skill folders, or every shipped skill; problems across all folders are reported together."""
    paths = (
        [Path(f) for f in folders] if folders else sorted(p for p in SHIPPED_DIR.iterdir() if (p / "SKILL.md").exists())
    )
    skills, errors = [], []
    for p in paths:
        try:
            skills.append(load_skill(p))
        except SkillError as exc:
            errors.append(f"{exc.message}\n{exc.detail or ''}".strip())
    if errors:
        raise SkillError(f"{len(errors)} skill folder(s) are invalid", detail="\n".join(errors))
    names = [s.name for s in skills]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SkillError(f"several skills share the name(s) {', '.join(dupes)}")
    return skills


def _yaml(text: str, where: str, problems: list[str]) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problems.append(f"{where} is not valid YAML: {str(exc).splitlines()[0]}")
        return None


def _validated(model: type[BaseModel], raw: Any, where: str, problems: list[str]) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        for e in exc.errors():
            loc = ".".join(str(x) for x in e["loc"]) or "(root)"
            got = e.get("input")
            shown = f" (got {got!r})" if isinstance(got, (str, int, float)) and e["type"] != "missing" else ""
            problems.append(f"{where}: {loc}: {e['msg']}{shown}")
        return None


def _resources(raw: Any, problems: list[str]) -> list[Resource]:
    if not isinstance(raw, dict) or not isinstance(raw.get("resources"), list):
        problems.append("resources.yaml: needs a top-level 'resources:' list")
        return []
    extra = set(raw) - {"resources"}
    if extra:
        problems.append(f"resources.yaml: unknown top-level keys {sorted(extra)}")
    out = []
    for i, item in enumerate(raw["resources"]):
        rid = item.get("id", f"#{i}") if isinstance(item, dict) else f"#{i}"
        r = _validated(Resource, item, f"resources.yaml: {rid}", problems)
        if r is not None:
            out.append(r)
    if not raw["resources"]:
        problems.append("resources.yaml: the resources list is empty")
    return out


def _resource_problems(root: Path, r: Resource) -> list[str]:
    out = []
    if r.runnable:
        if r.entry is None:
            out.append(f"a {r.type} needs an 'entry' (builtin:<name> or a .py file)")
        elif r.entry.startswith("builtin:"):
            if r.type == "script":
                out.append("a script cannot be a builtin; use type verifier")
            elif r.entry.removeprefix("builtin:") not in BUILTIN:
                out.append(f"unknown builtin verifier {r.entry!r} (known: {', '.join(sorted(BUILTIN))})")
        else:
            out.extend(_path_problem(root, r.entry, "entry", suffix=".py"))
    else:
        if r.path is None:
            out.append(f"a {r.type} needs a 'path' to its file")
        else:
            out.extend(_path_problem(root, r.path, "path"))
        if r.impact in ("veto", "strong"):
            out.append(
                f"impact {r.impact!r} is for verifiers: "
                f"a {r.type} is read by the LLM and can only be evidence/calibration"
            )
    return out


def _path_problem(root: Path, rel: str, field: str, suffix: str | None = None) -> list[str]:
    target = (root / rel).resolve()
    if root.resolve() not in target.parents:
        return [f"{field} {rel!r} points outside the skill folder"]
    if not target.is_file():
        return [f"{field} {rel!r} does not exist"]
    if suffix and target.suffix != suffix:
        return [f"{field} {rel!r} must be a {suffix} file"]
    return []
