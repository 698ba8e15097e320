"""Tables the commands print, through rich.

On a terminal a table is boxed, with a bold header, and fits the terminal's width. Anywhere
else (a pipe, a file, a CI log) it is plain text: columns separated by spaces, a header line,
no escape codes and no wrapping to a guessed width, so that ``grep`` and ``awk`` read it.
Cells are literal text: ``onnxruntime[cpu]`` is not taken for rich markup.
"""
from __future__ import annotations

import io
import sys

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

#: A width no line reaches: off a terminal, nothing is wrapped or cut.
PLAIN_WIDTH = 100_000


def table(*columns: str, right: tuple = ()) -> Table:
    """A table with these column headers; the columns named in ``right`` are right-aligned."""
    t = Table(expand=False)
    for c in columns:
        t.add_column(c, justify="right" if c in right else "left", overflow="fold")
    return t


def row(t: Table, *cells) -> None:
    t.add_row(*(Text(str(c)) for c in cells))


def _isatty(file) -> bool:
    try:
        return file.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _console(file, terminal: bool) -> Console:
    return Console(file=file, force_terminal=terminal, color_system="auto" if terminal else None,
                   width=None if terminal else PLAIN_WIDTH, markup=False, emoji=False, highlight=False)


def _styled(it, terminal: bool):
    if isinstance(it, str):
        return Text(it)
    if isinstance(it, Table):  # set each time: the same table may be shown both ways
        it.box, it.show_edge, it.pad_edge = (box.ROUNDED, True, True) if terminal else (None, False, False)
        it.header_style = "bold" if terminal else None
    return it


def render(*items) -> str:
    """Tables and lines of text as plain text (no escape codes), trailing blanks cut."""
    buf = io.StringIO()
    con = _console(buf, terminal=False)
    for it in items:
        con.print(_styled(it, terminal=False))
    return "".join(line.rstrip() + "\n" for line in buf.getvalue().splitlines())


def show(*items, file=None) -> None:
    """Print tables and lines of text to ``file`` (stdout): boxed on a terminal, plain elsewhere."""
    file = file or sys.stdout
    if not _isatty(file):
        file.write(render(*items))
        return
    con = _console(file, terminal=True)
    for it in items:
        con.print(_styled(it, terminal=True))
