"""Plans and executions from other multi-agent systems.

- `parse_mas_orchestra` / `to_mas_orchestra`: MAS-Orchestra's `<agent>`/`<edge>` plan format, read into an
  orchrm `Plan` (graph read as MAS-Orchestra's own parser reads it) and written from one (agent names map to
  orchrm types by `AGENT_NAMES`); `read_mas_orchestra` keeps descriptions and thinking for writing back, and
  `looks_like_mas_orchestra` tells cheaply whether a text is in that format.
- `read_completion`: the one reading of an orchestrator's text, shared by the reward path (`mas.completion`)
  and `orchrm import`, with the reason MAS-Orchestra's own parser would read the text otherwise, if any.
- `import_executions`: executions a team ran on its own MAS (question, plan text, final answer or grade,
  optional tokens and checkpoint label), from JSONL or a saved `datasets` folder, turned into orchrm
  `Trace`s in a run folder that `orchrm pairs` reads like one made by `orchrm rollout`.
"""

from ._executions import (
    IMPORT_FILE,
    PLAN_FORMATS,
    ExternalExecution,
    ImportDefaults,
    ImportReport,
    import_executions,
    read_datasets_rows,
    read_jsonl_rows,
    to_trace,
)
from ._mas_orchestra import (
    AGENT_NAMES,
    ORIGINAL_QUESTION_INPUT,
    MasOrchestraPlan,
    looks_like_mas_orchestra,
    parse_mas_orchestra,
    read_mas_orchestra,
)
from ._mas_write import to_mas_orchestra
from ._reading import Reading, plan_region, read_completion

__all__ = [
    "AGENT_NAMES",
    "IMPORT_FILE",
    "ORIGINAL_QUESTION_INPUT",
    "PLAN_FORMATS",
    "ExternalExecution",
    "ImportDefaults",
    "ImportReport",
    "MasOrchestraPlan",
    "Reading",
    "import_executions",
    "looks_like_mas_orchestra",
    "parse_mas_orchestra",
    "plan_region",
    "read_completion",
    "read_datasets_rows",
    "read_jsonl_rows",
    "read_mas_orchestra",
    "to_mas_orchestra",
    "to_trace",
]
