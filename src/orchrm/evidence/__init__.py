"""Evidence and the Skill-RM evaluator: rule verifiers, reward-evaluation skills, one agent loop (its Python
runs in `orchrm.sandbox`), and aggregation in explicit code."""

from .agent import AgentConfig, AgentOutcome, EvaluatorAgent, JudgeTask
from .aggregate import Aggregate, Evidence, aggregate, best_index, combine_orders
from .evaluator import EvaluatorConfig, Judgment, SkillEvaluator
from .flat import flat_pairwise
from .skills import SHIPPED_DIR, Resource, Skill, SkillError, load_skill, load_skills
from .trajectory import trajectory_response
from .verifiers import BUILTIN, CheckerReport, VerifierResult, check_the_checker, run_verifier

__all__ = [
    "BUILTIN",
    "SHIPPED_DIR",
    "AgentConfig",
    "AgentOutcome",
    "Aggregate",
    "CheckerReport",
    "EvaluatorAgent",
    "EvaluatorConfig",
    "Evidence",
    "JudgeTask",
    "Judgment",
    "Resource",
    "Skill",
    "SkillError",
    "SkillEvaluator",
    "VerifierResult",
    "aggregate",
    "best_index",
    "check_the_checker",
    "combine_orders",
    "flat_pairwise",
    "load_skill",
    "load_skills",
    "run_verifier",
    "trajectory_response",
]
