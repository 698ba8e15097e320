"""docs/cli.md's command reference, written from the parser itself so that it cannot drift
from ``dlgate --help``: ``python -m dlgate.clidoc docs/cli.md`` rewrites the generated blocks
of the page in place (tests/test_cli_usage.py checks that the page is up to date)."""
from __future__ import annotations

import argparse
import sys

from dlgate import docblocks
from dlgate.cli import build_parser
from dlgate.cli.parser import RUN_EXIT_STATUSES, subcommands, walk


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _invocation(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    return parser._get_formatter()._format_action_invocation(action)


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    return parser._get_formatter()._expand_help(action) if action.help else ""


def _documented(parser: argparse.ArgumentParser) -> list:
    """The actions a reader passes: options and positionals (not -h, not the subcommand slot)."""
    return [a for a in parser._actions
            if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and a.help != argparse.SUPPRESS]


def synopsis(parser: argparse.ArgumentParser) -> str:
    words = [parser.prog]
    optional = False
    for a in _documented(parser):
        if a.option_strings and not a.required:
            optional = True
        elif a.option_strings:
            words.append(_invocation(parser, a).split(", ")[-1])
        else:
            inv = _invocation(parser, a)
            words.append(f"[{inv}]" if a.nargs == "?" else f"{inv} ..." if a.nargs in ("+", "*") else inv)
    if subcommands(parser):
        words.append("COMMAND")
    if optional:
        words.append("[options]")
    return " ".join(words)


def reference_markdown(parser: argparse.ArgumentParser) -> str:
    """Every command: what it does, its synopsis and a table of its arguments."""
    out = ["| command | what it does |", "|---|---|"]
    for path, p in walk(parser):
        if path and not subcommands(p):
            out.append(f"| [`{p.prog}`](#{'-'.join(p.prog.split())}) | {_cell(p.description or '')} |")
    for path, p in walk(parser):
        if not path or subcommands(p):
            continue
        out += ["", f"### {p.prog}", ""]
        if p.description:
            out += [_cell(p.description), ""]
        out += ["```", synopsis(p), "```"]
        actions = _documented(p)
        if actions:
            out += ["", "| argument | meaning |", "|---|---|"]
            for a in actions:
                req = " (required)" if a.option_strings and a.required else ""
                out.append(f"| `{_cell(_invocation(p, a))}`{req} | {_cell(_help(p, a))} |")
    return "\n".join(out) + "\n"


def exit_status_markdown() -> str:
    rows = "\n".join(f"| {code} | {_cell(text)} |" for code, text in RUN_EXIT_STATUSES)
    return "| status | meaning |\n|---|---|\n" + rows + "\n"


def blocks() -> dict:
    return {"commands": reference_markdown(build_parser()), "exit-statuses": exit_status_markdown()}


def stale(text: str) -> list:
    """The names of the generated blocks whose text in ``text`` is not what the parser says."""
    return docblocks.stale(text, blocks())


def update(text: str) -> str:
    return docblocks.update(text, blocks())


def main(argv=None) -> int:
    return docblocks.main(argv, "dlgate.clidoc", "docs/cli.md", blocks)


if __name__ == "__main__":
    sys.exit(main())
