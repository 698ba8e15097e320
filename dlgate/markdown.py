"""Markdown built from untrusted text, escaped in one place.

Compiler messages, operator and tensor names, paths, versions and exception text end up in
``summary.md`` (GitHub's job summary), in GitHub issue bodies and comments, and in the Action's
job summary. Every such value goes through one of these functions, so that it shows literally and
can inject nothing: no link, image, HTML tag, heading, list, table column or code fence of its own,
no GitHub math, and (in prose) no ``@mention`` that notifies someone and no ``#123`` reference that
links an issue. The rules are GitHub Flavored Markdown's (CommonMark plus tables):

- :func:`text`: inline text on one line. Whitespace (newlines included) collapses to single spaces;
  every character with an inline meaning is backslash-escaped (``\\ ` * _ [ ] < > | ~ & # $``), and
  so is a block marker at its start (``- ``, ``+ ``, ``=``, ``1. ``); ``@`` before a name and ``#``
  before a digit get an invisible WORD JOINER (U+2060), which breaks GitHub's autolinking. The same
  text is safe in a table cell (``|`` is escaped, nothing spans lines).
- :func:`code`: an inline code span, whose content is literal by definition; its backtick fence is
  longer than any backtick run inside. In a table cell ``|`` is written ``\\|`` (GitHub splits the
  row before it parses code spans, and removes that backslash).
- :func:`fence`: a fenced code block holding text verbatim, many lines; its fence is longer than any
  backtick run inside, so no line of the text can close it.
- :func:`table`: a table of cells already built by the functions above.
- :func:`mermaid`: a label inside a Mermaid diagram (which an issue shows in a ``mermaid`` fence).
"""
from __future__ import annotations

import re

#: Characters escaped wherever they are: emphasis, code, links and images, HTML and autolinks,
#: table columns, strikethrough, entities, headings and GitHub's math.
_INLINE = re.compile(r"([\\`*_\[\]<>|~&#$])")
#: A block marker at the start of a line: a list item, a setext underline, an ordered list item.
_LEADING = re.compile(r"^([-+](?=\s|$)|=)|^(\d{1,9})([.)])(?=\s|$)")
#: A mention (``@user``, ``@org/team``) and an issue reference (``#12``, ``owner/repo#12``): GitHub links
#: them in issue bodies and comments, and notifies the people named.
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_REFERENCE = re.compile(r"(\\#)(?=\d)")
WORD_JOINER = "\u2060"


def _one_line(value, limit: int | None = None) -> str:
    s = " ".join(str(value).split())
    if limit is not None and len(s) > limit:
        s = s[: max(limit - 1, 0)] + "…"
    return s


def text(value, limit: int | None = None) -> str:
    """``value`` as inline Markdown that renders as exactly its characters, on one line (whitespace
    collapsed, cut to ``limit`` characters with an ellipsis). Safe in prose, list items, headings and
    table cells."""
    s = _INLINE.sub(r"\\\1", _one_line(value, limit))
    s = _LEADING.sub(lambda m: "\\" + m.group(1) if m.group(1) else m.group(2) + "\\" + m.group(3), s)
    s = _MENTION.sub("@" + WORD_JOINER, s)
    return _REFERENCE.sub(r"\1" + WORD_JOINER, s)


def cell(value, limit: int | None = 120) -> str:
    """:func:`text` cut to ``limit`` characters, for a table cell."""
    return text(value, limit)


def code(value, table: bool = False, limit: int | None = None) -> str:
    """``value`` as an inline code span on one line ("" for empty text). Set ``table`` where the span
    sits in a table cell."""
    s = _one_line(value, limit)
    if not s:
        return ""
    ticks = "`" * (_longest_run(s, "`") + 1)
    if s.startswith("`") or s.endswith("`") or (s.startswith(" ") and s.endswith(" ")):
        s = f" {s} "  # CommonMark strips one space on each side
    if table:
        s = s.replace("|", "\\|")
    return f"{ticks}{s}{ticks}"


def fence(value, info: str = "") -> str:
    """``value`` verbatim in a fenced code block (several lines, no final newline) with ``info`` as its
    language; the fence is at least three backticks and longer than any backtick run in ``value``."""
    body = str(value).rstrip("\n")
    ticks = "`" * max(3, _longest_run(body, "`") + 1)
    info = re.sub(r"[^A-Za-z0-9_+.-]", "", info)  # an info string holds no backtick, no space
    return f"{ticks}{info}\n{body}\n{ticks}" if body else f"{ticks}{info}\n{ticks}"


def table(head: list, rows: list, align: str = "") -> list:
    """The lines of a table. ``head`` and each row's cells are Markdown built with :func:`text`,
    :func:`cell` or :func:`code` (``table=True``) or trusted literals; ``align`` gives one of ``l``,
    ``r``, ``c`` per column (left by default). A line break inside a cell is replaced by a space, and a
    missing cell is left empty, so a row always has the table's columns."""
    rule = {"l": "---", "r": "--:", "c": ":-:"}
    width = len(head)

    def row(cells: list) -> str:
        cells = [" ".join(str(c).splitlines()) for c in list(cells)[:width]]
        return "| " + " | ".join(cells + [""] * (width - len(cells))) + " |"

    return [row(head), "|" + "|".join(rule.get(a, "---") for a in align.ljust(width, "l")) + "|"] + \
        [row(r) for r in rows]


def url(value) -> str:
    """An http(s) URL as an autolink (``<https://...>``), else the value as :func:`text`."""
    s = str(value)
    return f"<{s}>" if re.fullmatch(r"https?://[^\s<>`\\]+", s) else text(s)


_MERMAID = {"#": "#35;", '"': "#34;", "<": "#60;", ">": "#62;", "&": "#38;", "`": "#96;", "|": "#124;"}


def mermaid(value) -> str:
    """Text for a quoted Mermaid label (``n1["..."]``, ``-->|"..."|``): on one line, with the characters
    that would end the label or the edge text, start an entity, open a Markdown string or make HTML
    written as Mermaid's entity codes (``#34;``)."""
    return "".join(_MERMAID.get(ch, ch) for ch in _one_line(value))


def _longest_run(s: str, ch: str) -> int:
    return max((len(m) for m in re.findall(f"{re.escape(ch)}+", s)), default=0)
