"""``dlgate report``: a static HTML page, with PNG plots, describing a run's output folder.

:mod:`.load` reads and checks the folder, :mod:`.series` counts (verdicts, findings,
cumulative coverage and findings over the cases), :mod:`.plots` draws, :mod:`.stats_table`
lays out stats.json, :mod:`.page` writes the page.
"""
from dlgate.report.load import ReportError
from dlgate.report.page import write_report

__all__ = ["ReportError", "write_report"]
