"""The command line's usage: whole option names only, "did you mean" for misspelt commands and
options (one line, exit status 2), a help text for every argument, the exit statuses in the
help and in docs/cli.md, and tables that read as plain text in a pipe."""
from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys

import pytest

from dlgate import clidoc
from dlgate import tables as T
from dlgate.cli import build_parser, main
from dlgate.cli.parser import RUN_EXIT_STATUSES, Parser, UsageError, subcommands, walk

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "cli.md")


def _error(argv) -> str:
    with pytest.raises(UsageError) as e:
        build_parser().parse_args(argv)
    return str(e.value)


def _leaves():
    """(command path, parser) of every command that takes options (not `dlgate baseline`)."""
    return [(list(path), p) for path, p in walk(build_parser()) if path and not subcommands(p)]


# -- abbreviations -----------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, typed, meant", [
    (["run", "--model", "5"], "--model", "--models"),
    (["run", "--seed", "s", "--model=5"], "--model", "--models"),
    (["gen", "--coun", "3", "--seed", "s", "--out", "x"], "--coun", "--count"),
    (["check", "d", "--back", "onnxruntime"], "--back", "--backend"),
    (["reduce", "c", "--backend", "tvm", "--max-second", "3"], "--max-second", "--max-seconds"),
    (["issues", "--result", "r", "--repo", "a/b"], "--result", "--results"),
    (["ops", "--gap"], "--gap", "--gaps"),
    (["baseline", "update", "r", "--baselin", "b.json"], "--baselin", "--baseline"),
])
def test_an_abbreviated_option_is_refused_with_one_line_and_status_2(argv, typed, meant, tmp_path, monkeypatch,
                                                                     capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith("\n")
    assert f"unknown option '{typed}'; did you mean '{meant}'?" in err
    assert os.listdir(tmp_path) == []  # nothing ran: `run --model 5` wrote no dlgate-out/


def test_every_long_option_of_every_command_refuses_its_prefix_and_names_itself():
    """All commands, those added later included: each option less its last letter is unknown
    (not taken for the option) and the error suggests the whole option."""
    checked = 0
    for path, p in _leaves():
        options = {o for a in p._actions for o in a.option_strings if o.startswith("--")}
        for opt in sorted(options - {"--help"}):
            cut = opt[:-1]
            if cut in options or len(cut) < 4:
                continue
            err = _error(path + [cut])
            assert err == f"{p.prog}: unknown option '{cut}'; did you mean '{opt}'?", (path, opt, err)
            checked += 1
    assert checked > 60


@pytest.mark.parametrize("argv", [["ru"], ["rep"], ["che", "d", "--backend", "tvm"], ["baseline", "upd", "r"]])
def test_a_command_prefix_is_not_the_command(argv):
    assert "unknown command" in _error(argv)


def test_a_mistyped_command_gets_did_you_mean(capsys):
    assert main(["rn", "--seed", "s"]) == 2
    assert capsys.readouterr().err == "dlgate: unknown command 'rn'; did you mean 'run'?\n"
    assert main(["baseline", "updte", "r", "--baseline", "b"]) == 2
    assert capsys.readouterr().err == "dlgate baseline: unknown command 'updte'; did you mean 'update'?\n"
    for name in subcommands(build_parser()):
        typo = name[:-1] + ("x" if name[-1] != "x" else "y")
        assert _error([typo]).endswith(f"; did you mean '{name}'?"), name


def test_an_unknown_name_without_a_near_one_lists_the_choices_or_the_help():
    err = _error(["frobnicate"])
    assert err.startswith("dlgate: unknown command 'frobnicate' (choose from gen, ") and "run" in err
    assert _error(["run", "--xyzzy"]) == "dlgate run: unknown option '--xyzzy' (see `dlgate run --help`)"
    assert _error(["--verison"]) == "dlgate: unknown option '--verison'; did you mean '--version'?"


def test_negative_numbers_and_values_are_still_values():
    # a negative number is a value, judged by the option's own check, not an unknown option
    assert _error(["run", "--models", "-1"]).startswith("dlgate run: argument --models: expected a positive")
    args = build_parser().parse_args(["gen", "--seed", "-s x", "--count", "1", "--out", "o", "--start", "-0"])
    assert args.seed == "-s x" and args.start == 0


def test_did_you_mean_covers_a_command_added_later():
    p = build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    extra = sub.add_parser("widgetize", help="a later command")
    extra.add_argument("--widget-count", type=int, help="how many")
    assert isinstance(extra, Parser)
    with pytest.raises(UsageError, match=r"^dlgate widgetize: unknown option '--widget-coun'; "
                                         r"did you mean '--widget-count'\?$"):
        p.parse_args(["widgetize", "--widget-coun", "3"])
    with pytest.raises(UsageError, match="did you mean 'widgetize'"):
        p.parse_args(["widgetise"])


def test_the_installed_command_refuses_an_abbreviation(tmp_path):
    r = subprocess.run([sys.executable, "-m", "dlgate", "run", "--model", "5"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == "dlgate run: unknown option '--model'; did you mean '--models'?\n"


# -- help ------------------------------------------------------------------------------------------

def _missing_help(parser) -> list:
    out = []
    for path, p in walk(parser):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):  # a command added without help= has no entry
                helped = {c.dest for c in a._choices_actions if (c.help or "").strip()}
                out += [" ".join(path + (name,)) for name in a.choices if name not in helped]
            elif not (a.help or "").strip() or a.help == argparse.SUPPRESS:
                out.append(" ".join(path + (a.option_strings[-1] if a.option_strings else a.dest,)))
    return out


def test_every_command_option_and_positional_has_help():
    assert _missing_help(build_parser()) == []


def test_the_help_check_catches_an_argument_without_help():
    p = build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    later = sub.add_parser("later")  # no help for the command
    later.add_argument("--quiet", action="store_true")  # nor for its option
    later.add_argument("thing")
    assert _missing_help(p) == ["later", "later --quiet", "later thing"]


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"]])
def test_help_lists_every_exit_status_of_run(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 0
    out = capsys.readouterr().out
    codes = [int(m) for m in re.findall(r"^  (\d+) ", out, re.M)]
    assert codes == [0, 1, 2, 3, 4, 130, 143]
    flat = " ".join(out.split())
    assert "130 interrupted by SIGINT" in flat and "143 interrupted by SIGTERM" in flat
    assert "run the same command again to resume" in flat


def test_every_subcommand_help_has_a_description(capsys):
    for path, p in walk(build_parser()):
        if path:
            assert p.description, path


# -- docs/cli.md -------------------------------------------------------------------------------------

def test_the_cli_page_matches_the_parser():
    with open(DOC) as f:
        text = f.read()
    assert clidoc.stale(text) == [], "regenerate it: python -m dlgate.clidoc docs/cli.md"
    for _path, p in _leaves():
        assert f"### {p.prog}\n" in text
        for a in p._actions:
            for o in a.option_strings:
                if o not in ("-h", "--help"):
                    assert f"`{o}" in text or f", {o}" in text, (p.prog, o)
    for code, _ in RUN_EXIT_STATUSES:
        assert f"\n| {code} | " in text
    assert "130 for SIGINT" in text and "143 for" in text and "resumes" in text


def test_a_stale_page_is_caught_and_rewritten(tmp_path):
    with open(DOC) as f:
        text = f.read()
    old = text.replace("| `--models MODELS` |", "| `--model MODELS` |").replace("| 143 |", "| 142 |")
    assert clidoc.stale(old) == ["commands", "exit-statuses"]
    assert clidoc.update(old) == text
    page = tmp_path / "cli.md"
    page.write_text(old)
    assert clidoc.main([str(page)]) == 0 and page.read_text() == text


# -- tables ------------------------------------------------------------------------------------------

def _piped(*argv) -> str:
    r = subprocess.run([sys.executable, "-m", "dlgate", *argv], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, FORCE_COLOR="1", COLUMNS="40"))
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_backends_table_in_a_pipe_is_plain_uncut_text():
    from dlgate.backends.registry import load, names

    out = _piped("backends")  # FORCE_COLOR and a narrow COLUMNS must not matter in a pipe
    assert "\x1b" not in out and "│" not in out and "─" not in out
    lines = out.splitlines()
    assert lines[0].split() == ["backend", "device", "levels", "state"]
    rows = [line.split(None, 3) for line in lines[1:]]
    expected = []
    for name in names():
        cls = load(name)
        for device in cls.devices:
            why = cls.unavailable_reason(device)
            expected.append([name, device, ",".join(cls.opt_levels), "available" if not why else f"unavailable: {why}"])
    assert rows == expected


def test_ops_gaps_tables_hold_every_missing_operator():
    from dlgate.ops import coverage
    from dlgate.ops.registry import all_specs

    out = _piped("ops", "--gaps")
    assert "\x1b" not in out
    specs = list(all_specs().values())
    firsts = [line.split()[0] for line in out.splitlines() if line.strip()]
    for op, _ in coverage.missing(specs):
        assert op in firsts
    assert "operator" in firsts and "spec" in firsts  # the two headers
    assert sum(1 for line in out.splitlines() if line.startswith("Mod ") and "fmod=0" in line) >= 1


def test_stats_table_rows_are_the_json_values(tmp_path, capsys):
    assert main(["gen", "--seed", "s", "--count", "6", "--out", str(tmp_path), "--max-nodes", "4"]) == 0
    capsys.readouterr()
    assert main(["stats", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    res = json.loads((tmp_path / "stats.json").read_text())
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[2:] if line.split()[0] in res}
    from dlgate.stats import GRAPH_METRICS, OP_METRICS, PERCENT

    for m in GRAPH_METRICS + OP_METRICS + ("div_V", "div_E"):
        assert rows[m] == (f"{100 * res[m]:.2f}%" if m in PERCENT else f"{res[m]:.3f}"), m


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_table_is_boxed_on_a_terminal_and_cells_are_literal():
    t = T.table("backend", "cases", right=("cases",))
    T.row(t, "onnxruntime[cpu]", 12)
    T.row(t, "[bold]x[/bold] :smile:", 3)
    tty = _Terminal()
    T.show("title [red]", t, file=tty)
    assert "╭" in tty.getvalue() and "onnxruntime[cpu]" in tty.getvalue()
    plain = io.StringIO()
    T.show("title [red]", t, file=plain)
    assert plain.getvalue() == ("title [red]\n"
                                "backend                 cases\n"
                                "onnxruntime[cpu]           12\n"
                                "[bold]x[/bold] :smile:      3\n")
