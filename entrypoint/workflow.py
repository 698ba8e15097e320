"""What the step says to the runner: workflow commands (escaped, so that no input can issue
one), log lines, the job summary, the step outputs, and the exit statuses they follow."""
from __future__ import annotations

import secrets

from dlgate import markdown as md

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL, EXIT_CANNOT_RUN = 0, 1, 2, 3, 4
EXIT_SIGINT, EXIT_SIGTERM = 130, 143  # dlgate run interrupted: a rerun resumes
VERDICT_OF_EXIT = {EXIT_OK: "pass", EXIT_FAIL: "fail", EXIT_USAGE: "usage-error", EXIT_INTERNAL: "internal-error",
                   EXIT_CANNOT_RUN: "cannot-run", EXIT_SIGINT: "interrupted", EXIT_SIGTERM: "interrupted"}


def escape_data(text: str) -> str:
    """Escape a workflow command's message: the runner unescapes these three, and a raw line
    break would end the command and let the rest start a command of its own."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command's property value, where ':' and ',' are delimiters too."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def no_legacy(text: str) -> str:
    """``text`` without the runner's legacy command syntax ``##[name ...]value``, which it
    acts on wherever it appears in a line (``##[set-output name=verdict;]pass``):
    ``##[`` becomes ``##\\[``. (The other syntax, ``::name::``, counts only at the start of a
    line, which :func:`log` and :func:`command` never leave to the text they print.)"""
    return text.replace("##[", "##\\[")


def command(name: str, message: str = "", **props) -> str:
    """One workflow command line, e.g. ``::error title=T::message``. Its text cannot hold a
    legacy ``##[`` command either (except a mask's value, which must stay exact)."""
    clean = (lambda t: t) if name == "add-mask" else no_legacy
    p = ",".join(f"{k}={escape_property(clean(str(v)))}" for k, v in props.items() if v not in (None, ""))
    return f"::{name}{' ' + p if p else ''}::{escape_data(clean(message))}"


def emit(line: str) -> None:
    """Print a workflow command (built by :func:`command`); flushed, so it precedes what a
    child process prints next."""
    print(line, flush=True)


def log(message: str) -> None:
    """Print a plain log line. Line breaks are escaped so that text from an input can never
    begin a line of its own, which the runner would read as a workflow command, and the
    legacy ``##[`` syntax, which the runner reads anywhere in a line, is broken up."""
    emit("dlgate: " + no_legacy(message.replace("\r", "\\r").replace("\n", "\\n")))


def mask(token: str) -> None:
    """Ask the runner to hide the token in the log: the whole value and, should it span
    lines, each line too, since the runner matches a mask within one line of output."""
    parts = [token.strip()] + [x.strip() for x in token.splitlines()]
    for part in dict.fromkeys(x for x in parts if x):
        emit(command("add-mask", part))


def fenced(title: str, text: str) -> None:
    """Untrusted text (a child's output) in a log group, fenced like :func:`call`'s."""
    emit(command("group", title))
    fence = secrets.token_hex(16)
    emit(f"::stop-commands::{fence}")
    print(text, flush=True)
    emit(f"::{fence}::")
    emit("::endgroup::")


def write_summary(env: dict, markdown: str) -> None:
    """Markdown at the end of the job summary ($GITHUB_STEP_SUMMARY), when there is one."""
    path = env.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write("\n" + markdown)
    except OSError as e:
        log(f"cannot write the job summary {path}: {e}")


def append_summary(env: dict, text: str) -> None:
    """A paragraph at the end of the job summary ($GITHUB_STEP_SUMMARY), when there is one;
    ``text`` (which quotes inputs) is escaped (dlgate.markdown)."""
    path = env.get("GITHUB_STEP_SUMMARY")
    if not path or not text:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"\n> **dlgate:** {md.text(text)}\n")
    except OSError as e:
        log(f"cannot write the job summary {path}: {e}")


def write_outputs(env: dict, values: dict) -> None:
    """Append the step outputs to $GITHUB_OUTPUT in the ``name<<DELIMITER`` form, with a
    random delimiter that the value does not contain, so no value can end its own entry and
    forge another output. Without $GITHUB_OUTPUT (a local ``docker run``) they are logged."""
    path = env.get("GITHUB_OUTPUT")
    if not path:
        for name, value in values.items():
            log(f"output {name}={value}")
        return
    with open(path, "a", encoding="utf-8") as f:
        for name, value in values.items():
            delim = f"ghadelimiter_{secrets.token_hex(16)}"
            while delim in value:
                delim = f"ghadelimiter_{secrets.token_hex(16)}"
            f.write(f"{name}<<{delim}\n{value}\n{delim}\n")
