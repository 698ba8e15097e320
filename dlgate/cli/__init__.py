"""The ``dlgate`` command: the parser, the dispatcher and how errors end a command.

Each command is one module of this package (``gen``, ``run``, ``check``, ...) with two
functions: ``add_parser(sub)``, its options, and ``command(args)``, what it does, returning
the exit status. ``COMMANDS`` lists them in the order ``dlgate --help`` and docs/cli.md show
them; shared option types and checks are in :mod:`dlgate.cli.args`, the parser's behaviour
(whole option names, one-line errors) in :mod:`dlgate.cli.parser`. A command module imports
what pulls in torch and onnx inside ``command``: ``dlgate --help``, ``dlgate config`` and
every usage error stay quick.
"""
from __future__ import annotations

import argparse
import errno
import os
import select
import sys
import traceback

from dlgate import __version__
from dlgate.cli import (backends, baseline, bisect_releases, check, config, gen, init, issues, merge, ops, probe,
                        reduce, report, run, stats, targets, tir)
from dlgate.cli.args import log
from dlgate.cli.parser import Parser, UsageError, exit_status_lines

#: The commands, in the order of ``dlgate --help`` and docs/cli.md.
COMMANDS = {"gen": gen, "targets": targets, "stats": stats, "probe": probe, "check": check, "run": run,
            "reduce": reduce, "tir-step": tir, "issues": issues, "bisect-releases": bisect_releases, "merge": merge, "report": report,
            "baseline": baseline, "config": config, "backends": backends, "ops": ops, "init": init}


_EPILOG = ("exit statuses of `dlgate run`:\n" + exit_status_lines() + "\n"
           "the other commands exit 0 on success, 2 on a usage error (one line on stderr) and 3 on an internal "
           "error; `merge` decides the gate as `run` does (0, 1, 3, 4); `check` exits 1 when a case failed (3 when "
           "the reference did), `reduce` when the case does not fail or its failure does not reproduce, `issues` when "
           "GitHub refused a request; any command exits 141 when its reader closes the pipe it writes to")


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="dlgate", description="CI regression gate for deep-learning compilers.", epilog=_EPILOG)
    p.add_argument("--version", action="version", version=f"dlgate {__version__}")
    sub = p.add_subparsers(dest="command", parser_class=Parser, required=True, metavar="COMMAND",
                           help="one of the commands below; `dlgate COMMAND --help` lists its options")
    for module in COMMANDS.values():
        module.add_parser(sub)
    return p


#: OSErrors that are the machine's or the user's, not dlgate's: a full disk, a path that
#: cannot be written (read-only, permissions, too long, a file where a folder should be).
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


_CANNOT_WRITE = (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENAMETOOLONG, errno.ENOTDIR, errno.EISDIR,
                 errno.EEXIST)


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (``dlgate config F | head -1``)."""
    try:
        fd = sys.stdout.fileno()
        p = select.poll()
        p.register(fd, select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in p.poll(0))
    except (AttributeError, ValueError, OSError):  # stdout replaced (a capture) or closed
        return False


def _environment_error(e: BaseException) -> int | None:
    """The exit status for an error of the machine rather than of dlgate, reported as one
    line; None for anything else."""
    if isinstance(e, BrokenPipeError) and _stdout_closed():
        # the reader stopped reading: quiet, as the Python docs recommend (stdout to devnull,
        # so that the flush at exit does not fail again), with the shell's SIGPIPE status
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    if not isinstance(e, OSError) or e.errno not in _NO_SPACE + _CANNOT_WRITE:
        return None
    where = f" ({e.filename})" if e.filename else ""
    if e.errno in _NO_SPACE:
        log(f"dlgate: no space left on device{where}: the output is incomplete; the cases finished so far are "
             f"kept in the journal: free some space and run the same command again (dlgate run resumes)")
    else:
        log(f"dlgate: {e.filename}: {e.strerror or e}" if e.filename else f"dlgate: {e.strerror or e}")
    return 2


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        status = COMMANDS[args.command].command(args)
        sys.stdout.flush()  # a closed stdout pipe shows here, where it is handled, not at exit
        return status
    except UsageError as e:
        print(str(e).splitlines()[0], file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # Ctrl-C; `dlgate run` stopped by SIGINT (130) or SIGTERM (143)
        return getattr(e, "status", 130)
    except Exception as e:  # dlgate's own defect: never reported as a compiler failure
        status = _environment_error(e)
        if status is not None:  # ... unless it is the machine's: a full disk, a closed pipe
            return status
        traceback.print_exc()
        print("dlgate: internal error (a defect in dlgate, not a failure of the compiler under test); "
              "please report it with the traceback above", file=sys.stderr)
        return 3
