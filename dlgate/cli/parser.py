"""The argument parser behind ``dlgate``: whole option names only, one-line errors with a
"did you mean", help text that keeps the epilog's lines.

Every subcommand's parser is a :class:`Parser` (``add_subparsers(parser_class=Parser)``), so a
subcommand or option added later gets the same behaviour without further code.
"""
from __future__ import annotations

import argparse
import sys
import textwrap

from dlgate.suggest import did_you_mean


class UsageError(Exception):
    """Bad input: ``dlgate`` prints the first line and exits with status 2."""


#: The exit statuses of ``dlgate run``, in ``dlgate run --help``, ``dlgate --help`` and docs/cli.md.
RUN_EXIT_STATUSES = (
    (0, "the gate passes: no new failures (with fail_on: any, no failures at all)"),
    (1, "the gate fails: new failures or regressions (fail_on decides which count)"),
    (2, "usage or configuration error: bad arguments, campaign file, baseline, journal or output folder; "
        "one line on stderr"),
    (3, "internal error: a defect in dlgate, or the reference failed; never a failure of the compiler under test"),
    (4, "a backend the gate needs could not run: the compiler under test, the reference or the base build"),
    (130, "interrupted by SIGINT (Ctrl-C): the workers are stopped, the journal kept, the reports written for "
          "the cases that ran, marked interrupted (never a pass); run the same command again to resume"),
    (143, "interrupted by SIGTERM (a cancelled CI job): as for 130, a rerun resumes"),
)


def exit_status_lines(statuses=RUN_EXIT_STATUSES, indent: str = "  ") -> str:
    return "\n".join(f"{indent}{code:<4} {text}" for code, text in statuses)


class _Formatter(argparse.HelpFormatter):
    """Wraps descriptions and epilogs line by line: a line break written in them stays, and a
    wrapped line of an indented list keeps its indentation (plus four spaces)."""

    def _fill_text(self, text, width, indent):
        out = []
        for line in text.splitlines():
            body = line.lstrip()
            pad = indent + line[:len(line) - len(body)]
            out.append(textwrap.fill(body, width, initial_indent=pad,
                                     subsequent_indent=pad + ("     " if line != body else "")) if body else "")
        return "\n".join(out)


def subcommands(parser: argparse.ArgumentParser) -> dict:
    """Name -> parser of the subcommands ``parser`` has (empty for a leaf command)."""
    out: dict = {}
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            out.update(a.choices)
    return out


def walk(parser: argparse.ArgumentParser, path: tuple = ()):
    """(command path, parser) for ``parser`` and every subcommand under it, depth first."""
    yield path, parser
    for name, sub in subcommands(parser).items():
        yield from walk(sub, path + (name,))


class _Subcommands(argparse._SubParsersAction):
    def add_parser(self, name, **kw):
        kw.setdefault("description", kw.get("help"))  # `dlgate CMD --help` says what CMD does
        return super().add_parser(name, **kw)


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kw):
        kw.setdefault("allow_abbrev", False)  # `--model 5` is not `--models 5`
        kw.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kw)
        self.register("action", "parsers", _Subcommands)

    def error(self, message):  # one line, exit status 2
        raise UsageError(f"{self.prog}: {message}")

    def add_subparsers(self, **kw):
        kw.setdefault("parser_class", Parser)
        return super().add_subparsers(**kw)

    def _check_value(self, action, value):
        if action.choices is None or value in action.choices:
            return
        names = [str(c) for c in action.choices]
        if isinstance(action, argparse._SubParsersAction):
            what = "command"
        else:
            what = f"value for {'/'.join(action.option_strings) or action.dest}"
        hint = did_you_mean(str(value), names) or f" (choose from {', '.join(names)})"
        self.error(f"unknown {what} {value!r}{hint}")

    def _unknown_option(self, args) -> str | None:
        """The first word of ``args`` that argparse would take for an option this parser does
        not have. In a parser with subcommands the words from the first positional one on (the
        command's name, known or not) are the subcommand's."""
        has_subcommands = bool(subcommands(self))
        for arg in args:
            if arg == "--":
                return None
            found = self._parse_optional(arg)
            if found is None and has_subcommands:
                return None
            if isinstance(found, tuple) and found[0] is None:
                return arg.split("=", 1)[0]
        return None

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        unknown = self._unknown_option(args)  # before any other error: a misspelt option is the cause
        if unknown is not None:
            options = [o for o in self._option_string_actions if o.startswith("--") or not unknown.startswith("--")]
            hint = did_you_mean(unknown, options) or f" (see `{self.prog} --help`)"
            self.error(f"unknown option {unknown!r}{hint}")
        return super().parse_known_args(args, namespace)
