"""The report draws every method from the one registry: its colour, marker and shaded interval."""

from orchrm.bon.report import _style
from orchrm.bon.selection import METHODS


def test_plot_styles_come_from_the_method_registry():
    assert _style("rm") == ("tab:red", "o", True) and _style("random")[2] is True
    assert [m for m in METHODS if _style(m)[2]] == ["rm", "random"]  # only these two get a shaded interval
    assert len({_style(m)[:2] for m in METHODS}) == len(METHODS)  # every method tells apart on the plot
    assert _style("retired-method") == (None, "o", False)  # an old results.json still draws
