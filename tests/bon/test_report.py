"""The report draws every method from the one registry: its colour, marker and shaded interval."""

from orchrm.bon.report import _style
from orchrm.bon.selection import METHODS


def test_plot_styles_come_from_the_method_registry():
    assert _style("rm") == ("tab:red", "o", True) and _style("random")[2] is True
    assert [m for m in METHODS if _style(m)[2]] == ["rm", "random"]  # only these two get a shaded interval
    assert len({_style(m)[:2] for m in METHODS}) == len(METHODS)  # every method tells apart on the plot
    assert _style("retired-method") == (None, "o", False)  # an old results.json still draws


def test_the_models_line_names_each_model_with_its_identity_beside():
    from orchrm.bon.report import _models_line
    from orchrm.bon.results import BonResults

    def results(**models: str) -> BonResults:
        return BonResults.model_construct(task="t", **models)

    named = results(model="gguf:abc", agent_model="gguf:abc", model_name="qwen", agent_model_name="qwen")
    assert _models_line(named) == "orchestrator and sub-agents: `qwen (gguf:abc)`"
    two = results(model="gguf:abc", agent_model="gpt", model_name="qwen", agent_model_name="gpt")
    assert _models_line(two) == "orchestrator: `qwen (gguf:abc)`; sub-agents: `gpt`"
    old = results(model="gguf:abc", agent_model="gguf:abc")  # written before names were recorded
    assert _models_line(old) == "orchestrator and sub-agents: `gguf:abc`"
