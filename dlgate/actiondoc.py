"""docs/action.md's Inputs and Outputs tables, written from action.yml itself so that the page
cannot drift from what the Action declares: ``python -m dlgate.actiondoc docs/action.md``
rewrites the generated blocks of the page in place (tests/test_actiondoc.py checks that the
page is up to date).

Every value is action.yml's own text, escaped through :mod:`dlgate.markdown`: names and
defaults as code spans, descriptions as text whose backtick spans stay code spans, so that a
``|``, ``<``, ``$`` or ``_`` in a description shows literally and cannot break the table.
"""
from __future__ import annotations

import os
import re
import sys

import yaml

from dlgate import docblocks
from dlgate import markdown as md

#: action.yml at the repository root (the Action's own metadata, beside the package).
ACTION_YML = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "action.yml")
_SPAN = re.compile(r"(`+)(.+?)\1")


def prose(value) -> str:
    """A description as one line of Markdown: its backtick spans as code spans, the rest as
    literal text (whitespace collapsed; the spaces around a span kept)."""
    s = " ".join(str(value or "").split())
    out, at = [], 0
    for m in _SPAN.finditer(s):
        out.append(_text(s[at:m.start()]))
        out.append(md.code(m.group(2), table=True))
        at = m.end()
    out.append(_text(s[at:]))
    return "".join(out)


def _text(part: str) -> str:
    if not part.strip():
        return part
    lead, trail = part[:len(part) - len(part.lstrip())], part[len(part.rstrip()):]
    return lead + md.text(part) + trail


def inputs_table(action: dict) -> str:
    rows = [[md.code(name, table=True), md.code(str(spec.get("default") or ""), table=True),
             prose(spec.get("description"))] for name, spec in (action.get("inputs") or {}).items()]
    return "\n".join(md.table(["input", "default", "meaning"], rows)) + "\n"


def outputs_table(action: dict) -> str:
    rows = [[md.code(name, table=True), prose(spec.get("description"))]
            for name, spec in (action.get("outputs") or {}).items()]
    return "\n".join(md.table(["output", "value"], rows)) + "\n"


def load(path: str = ACTION_YML) -> dict:
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def blocks(action: dict | None = None) -> dict:
    action = load() if action is None else action
    return {"action-inputs": inputs_table(action), "action-outputs": outputs_table(action)}


def stale(text: str, action: dict | None = None) -> list:
    """The names of the generated blocks whose text in ``text`` is not what action.yml says."""
    return docblocks.stale(text, blocks(action))


def update(text: str, action: dict | None = None) -> str:
    return docblocks.update(text, blocks(action))


def main(argv=None) -> int:
    return docblocks.main(argv, "dlgate.actiondoc", "docs/action.md", blocks)


if __name__ == "__main__":
    sys.exit(main())
