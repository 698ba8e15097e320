"""The report's plots: curves of cumulative counts, drawn with matplotlib to PNG.

No pyplot and no global state: a Figure on the Agg canvas, under matplotlib's default
style (a user's matplotlibrc does not change the picture). The PNG carries no metadata
(matplotlib writes its version as ``Software`` by default), so the same curves give the
same bytes with the same matplotlib and its bundled font.
"""
from __future__ import annotations

from typing import NamedTuple

#: Size and resolution: 800 x 360 pixels, legible in a GitHub step summary too.
SIZE_IN, DPI = (8.0, 3.6), 100
#: PNG metadata: none (matplotlib writes its version as ``Software`` by default).
PNG_METADATA = {"Software": None}


class Line(NamedTuple):
    label: str
    curve: list  # the count after each case, cases 1..n
    group: str  # lines of one group share a colour (a backend's findings and causes)
    dashed: bool = False


def _figure():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=SIZE_IN, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def curve_plot(path: str, title: str, ylabel: str, lines: list) -> None:
    """Write a PNG of cumulative curves (:class:`Line`): x cases so far (0 to n), y the
    count after them (0 before the first case)."""
    import matplotlib
    import matplotlib.style

    # svg.hashsalt: stable element ids, should the plots ever be written as SVG too
    with matplotlib.style.context("default"), matplotlib.rc_context({"svg.hashsalt": "dlgate"}):
        fig = _figure()
        ax = fig.add_subplot()
        n = max((len(x.curve) for x in lines), default=0)
        colors = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
        groups: dict = {}
        for x in lines:
            color = colors[groups.setdefault(x.group, len(groups)) % len(colors)]
            ax.plot(range(len(x.curve) + 1), [0] + list(x.curve), label=x.label, color=color,
                    linestyle="--" if x.dashed else "-", linewidth=1.6)
        ax.set_title(title, fontsize=11)
        ax.set_xlabel("cases so far, in run order")
        ax.set_ylabel(ylabel)
        ax.set_xlim(0, max(n, 1))
        top = max((max(x.curve) for x in lines if x.curve), default=0)
        ax.set_ylim(0, max(top * 1.08, 1))
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.grid(True, alpha=0.3)
        if lines:
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        fig.savefig(path, format="png", metadata=PNG_METADATA)
