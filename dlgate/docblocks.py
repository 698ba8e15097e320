"""Generated blocks in Markdown pages: text between ``<!-- BEGIN generated: NAME -->`` and
``<!-- END generated: NAME -->`` that a function writes from the code it documents (the
command reference from the parser, the Action's inputs and outputs from ``action.yml``), so
the page cannot drift; each page's test checks :func:`stale` is empty."""
from __future__ import annotations

import re
import sys
from typing import Callable


def pattern(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- BEGIN generated: {re.escape(name)} -->\n).*?(<!-- END generated: {re.escape(name)} -->)",
                      re.S)


def stale(text: str, blocks: dict) -> list:
    """The names of the blocks whose text in ``text`` is not the generated ``blocks[name]``."""
    bad = []
    for name, body in blocks.items():
        m = pattern(name).search(text)
        if m is None or text[m.end(1):m.start(2)] != body:
            bad.append(name)
    return bad


def update(text: str, blocks: dict) -> str:
    """``text`` with every block rewritten; ValueError for a block the page lacks."""
    for name, body in blocks.items():
        pat = pattern(name)
        if not pat.search(text):
            raise ValueError(f"no block '{name}' (<!-- BEGIN generated: {name} --> ... <!-- END generated: {name} -->)")
        text = pat.sub(lambda m, body=body: m.group(1) + body + m.group(2), text)
    return text


def main(argv: list | None, module: str, page: str, blocks: Callable[[], dict]) -> int:
    """``python -m MODULE PAGE``: rewrite the page's generated blocks in place."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(f"usage: python -m {module} {page}", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        text = f.read()
    try:
        new = update(text, blocks())
    except ValueError as e:
        print(f"{argv[0]}: {e}", file=sys.stderr)
        return 2
    if new != text:
        with open(argv[0], "w", encoding="utf-8") as f:
            f.write(new)
    print(f"{argv[0]}: " + ("updated" if new != text else "up to date"))
    return 0
