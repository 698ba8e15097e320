"""Option types and checks the commands share: counts, seconds, shares and opsets, output
folders that must be writable, backends named on the command line, probed support, and the
change under test (``--changed-from``, ``--diff``, ``--targets``)."""
from __future__ import annotations

import argparse
import json
import math
import os
import stat
import sys
import tempfile

from dlgate import change as CH
from dlgate.change.aim import resolve
from dlgate.change.targets import TargetSet
from dlgate.cli.parser import UsageError
from dlgate.gate.config import check_backend
from dlgate.suggest import did_you_mean


def change_args(p, what: str) -> None:
    g = p.add_argument_group("the change under test", what)
    g.add_argument("--changed-from", metavar="BASE", help="the pull request's base commit: the change is "
                   "`git diff BASE...HEAD` in --repo")
    g.add_argument("--diff", metavar="FILE", help="the change as a unified diff file (- for standard input), "
                   "instead of git")
    g.add_argument("--repo", default=".", help="the compiler's repository (default: the current folder)")
    g.add_argument("--compiler", help="whose mapping table to use: tvm, onnxruntime or inductor (default: the "
                   "compiler of the first backend under test)")
    g.add_argument("--change-table", metavar="FILE", help="a mapping table to use instead of the one shipped "
                   "with dlgate (tools/change_tables.py writes one)")


def read_change(args, backends, where: str):
    """The TargetSet of --changed-from or --diff (None when neither is given); bad input is
    one line and exit status 2."""

    given = [f for f, v in (("--changed-from", args.changed_from), ("--diff", args.diff),
                            ("--targets", getattr(args, "targets", None))) if v is not None]
    if not given:
        return None
    if len(given) > 1:
        raise UsageError(f"{where}: give one of {', '.join(given)}, not several")
    if getattr(args, "targets", None) is not None:
        return target_set(args.targets, f"{where}: --targets")
    if args.changed_from is not None and not args.changed_from.strip():
        raise UsageError(f"{where}: --changed-from: must not be empty")
    try:
        compiler = CH.compiler_of(backends, args.compiler)
        return CH.map_targets(CH.read(args.changed_from, args.diff, args.repo), compiler, args.change_table)
    except CH.ChangeError as e:
        raise UsageError(f"{where}: {e}") from None


def target_set(path: str, where: str):
    """A target set as ``dlgate targets --json`` wrote it (or a run.json's ``change``)."""

    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise UsageError(f"{where}: {path}: {e.strerror}") from None
    except ValueError as e:
        raise UsageError(f"{where}: {path}: not JSON ({e})") from None
    if isinstance(doc, dict) and "change" in doc and "targets" not in doc:
        doc = doc["change"] or {}
    try:
        if not isinstance(doc, dict) or "targets" not in doc or not doc.get("compiler"):
            raise ValueError("no compiler and targets")
        return TargetSet.from_json(doc)
    except (ValueError, TypeError) as e:
        raise UsageError(f"{where}: {path}: not a target set ({e})") from None


def recorded_aims(path: str, where: str) -> tuple:
    """The aims of a recorded change: a run.json's ``change``, or a target set's JSON."""

    ts = target_set(path, where)
    return tuple(resolve(ts.targets, ts.compiler)[0])


def positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


#: The longest a compile+run, or a reduction, may be given (a day): nan, inf and 0 are refused.
MAX_SECONDS = 86_400.0


def seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(v) or not 0 < v <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0 and at most {MAX_SECONDS:g}, "
                                         f"got {text!r}")
    return v


def share(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"{v} is not between 0 and 1")
    return v


def opset(text: str) -> int:
    v = positive(text)
    if not 13 <= v <= 28:
        raise argparse.ArgumentTypeError(f"opset {v} is outside the supported range 13-28")
    return v


def out_dir(path: str, where: str) -> None:
    """An output folder that exists must be a writable folder; one that does not must be
    creatable: one line and exit status 2 before any work, not a traceback after it. Tried
    for real (a folder made and removed where the output would go), since permission bits
    do not tell: root passes them on a read-only mount, and a pseudo-filesystem (/proc,
    /sys) takes no new folder whatever its bits say."""
    if not path or "\0" in path:
        raise UsageError(f"{where}: not a usable folder name: {path!r}")
    probe = os.path.abspath(path)
    while True:
        try:
            st = os.stat(probe)
            break
        except FileNotFoundError:
            parent = os.path.dirname(probe)
            if parent == probe:
                raise UsageError(f"{where}: {path}: cannot be created") from None
            probe = parent
        except OSError as e:  # ENAMETOOLONG, ENOTDIR (a file on the way), ELOOP, EACCES
            raise UsageError(f"{where}: {path}: {e.strerror or e}") from None
    mine = probe == os.path.abspath(path)
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{where}: {path}: " + ("not a folder" if mine else f"cannot be created: {probe} is not a folder"))
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{where}: {path}: " + ("the folder is not writable" if mine
                                                 else f"cannot be created: {probe} is not writable"))
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".dlgate-probe-", dir=probe))
    except OSError as e:
        fs = _pseudo_filesystem(probe)
        why = f"{probe} is on {fs}, a pseudo-filesystem" if fs else f"{probe}: {e.strerror or e}"
        raise UsageError(f"{where}: {path}: " + ("the folder is not writable" if mine else "cannot be created")
                         + f" ({why})") from None


#: Filesystems that hold no files of their own: nothing dlgate writes belongs there.
_PSEUDO_FILESYSTEMS = ("proc", "sysfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs",
                       "configfs", "pstore", "bpf", "fusectl", "mqueue", "hugetlbfs", "efivarfs", "binfmt_misc")


def _pseudo_filesystem(path: str) -> str | None:
    """The type of the pseudo-filesystem ``path`` is on (``proc``), from /proc/self/mounts
    (the longest mount point above it); None elsewhere or where that cannot be read."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
            mounts = [line.split()[1:3] for line in f if len(line.split()) >= 3]
    except OSError:
        return None
    best, kind = "", None
    for point, fs in mounts:
        point = point.replace("\\040", " ")
        if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) > len(best):
            best, kind = point, fs
    return kind if kind in _PSEUDO_FILESYSTEMS else None


def probe_doc(system: str, where: str, **kw) -> dict:
    """The probe document of a backend (cached), with usage errors for bad names."""
    from dlgate.backends.registry import load, names  # local: imports torch; off the CLI start-up
    from dlgate.probe.support import ProbeError, load_or_probe

    try:
        load(system)
        return load_or_probe(system, **kw)
    except KeyError as e:
        hint = did_you_mean(system, names()) if ":" not in system else ""
        why = e.args[0].replace("; known:", f"{hint} known:", 1) if hint else e.args[0]
        raise UsageError(f"{where} {system}: {why}") from None
    except ProbeError as e:
        raise UsageError(f"{where}: cannot probe {system}: {e}") from None


def backend_spec(text: str, where: str):
    """The BackendSpec of ``--backend``/``--reference`` text; a bad one is one line naming
    ``where`` (the command and the flag as typed), with the nearest name, device or level."""

    try:
        return check_backend(text)
    except ValueError as e:
        raise UsageError(f"{where}: {e.args[0]}") from None


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
