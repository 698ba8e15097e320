"""The parts ``dlgate init``'s workflows are made of: pinned actions, checkout, build, upload
and download steps, and the job on a self-hosted GPU runner.

Every workflow uses only its own repository's paths (``.dlgate/``), the dlgate action at the
location given, and GitHub-hosted runners, unless GPU runner labels are given: then each
workflow gains a job on that runner, which builds the compiler with CUDA and runs dlgate
through pip (a container action gets no GPU). Third-party actions are pinned to commits.
"""
from __future__ import annotations

from dataclasses import dataclass

from dlgate.init.compilers import Compiler

#: The Python of the action's image (the Dockerfile's python:3.11-slim, Python 3.11.15 on Debian 13
#: with glibc 2.41): the wheels are built for it, on ubuntu-latest (glibc 2.39, older: what is
#: built there runs in the image). docs/adding-to-ci.md, "The wheel and the action's image".
IMAGE_PYTHON = "3.11"
CAMPAIGN = ".dlgate/campaign.yaml"
WEEKLY = ".dlgate/weekly.yaml"
#: The weekly workflow's shards (its matrix); the TIR mode runs one chain in each.
WEEKLY_SHARDS = 8
BASELINE = ".dlgate/baseline.json"
WEEKLY_STATE = (".dlgate/weekly-baseline.json", ".dlgate/weekly-corpus", ".dlgate/weekly-coverage-state.json")

CHECKOUT = "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2"
SETUP_PYTHON = "actions/setup-python@a26af69be951a213d495a4c3e4e4022e16d87065 # v5.6.0"
UPLOAD = "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02 # v4.6.2"
DOWNLOAD = "actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093 # v4.3.0"
RESTORE = "actions/cache/restore@5a3ec84eff668545956fd18022155c47e93e2684 # v4.2.3"
SAVE = "actions/cache/save@5a3ec84eff668545956fd18022155c47e93e2684 # v4.2.3"
JUNIT = "mikepenz/action-junit-report@db71d41eb79864e25ab0337e395c352e84523afe # v4.3.1"
PIP = "--disable-pip-version-check"
#: The action's ``cache-dir`` (dlgate's DLGATE_CACHE): the support probes of ``restrict_to_support``.
PROBE_CACHE = ".dlgate-cache"
#: The probe cache's key: the build under test, by its wheel's hash; any older entry is a start.
PROBE_KEY, PROBE_PREFIX = "dlgate-probe-${{ hashFiles('dist/head/*.whl') }}", "dlgate-probe-"
#: A pull request from a fork saves nothing in the cache.
SAME_REPO = "github.event.pull_request.head.repo.full_name == github.repository"


@dataclass(frozen=True)
class Setup:
    compiler: Compiler
    action: str  # OWNER/NAME[/PATH]@REF of the dlgate action
    branch: str  # the default branch
    runner: tuple = ()  # labels of a self-hosted GPU runner; empty: no GPU job
    check_run: bool = False  # the action's gate jobs may write checks: a live check run each

    @property
    def dlgate_pip(self) -> str:
        """The pip requirement of dlgate at the action's location and version."""
        where, ref = self.action.rsplit("@", 1)
        owner, name = where.split("/")[:2]
        return f"dlgate @ git+https://github.com/{owner}/{name}@{ref}"

    @property
    def runs_on(self) -> str:
        return "[" + ", ".join(self.runner) + "]"


def indent(text: str, n: int) -> str:
    return "\n".join((" " * n + line) if line else "" for line in text.splitlines())


def checkout(s: Setup, n: int, ref: str = "", path: str = "", submodules: bool = True, name: str = "",
              cond: str = "", fetch_depth: str = "") -> str:
    lines = ([f"- name: {name}"] if name else []) + ([f"  if: {cond}"] if cond else [])
    lines += [f"  uses: {CHECKOUT}" if lines else f"- uses: {CHECKOUT}", "  with:"]
    if ref:
        lines.append(f"    ref: {ref}")
    if path:
        lines.append(f"    path: {path}")
    if fetch_depth:
        lines.append(f"    fetch-depth: {fetch_depth}")
    lines.append("    persist-credentials: false")
    if submodules and s.compiler.submodules:
        lines.append("    submodules: recursive")
    return indent("\n".join(lines), n)


def python(n: int, cond: str = "", note: str = f"the action's image runs Python {IMAGE_PYTHON}: build for it") -> str:
    head = f"- if: {cond}\n  uses: {SETUP_PYTHON}" if cond else f"- uses: {SETUP_PYTHON}"
    return indent(f'{head}\n  with:\n    python-version: "{IMAGE_PYTHON}" # {note}', n)


def build(s: Setup, n: int, wheel_dir: str, cond: str = "", name: str = "Build the wheel under test",
           gpu: bool = False, workdir: str = "") -> str:
    c = s.compiler
    out = []
    when = f"  if: {cond}\n" if cond else ""
    if c.hosted_setup and not gpu:
        out.append(f"- name: Install what the build needs\n{when}  run: |\n{indent(c.hosted_setup, 4)}")
    wd = f"  working-directory: {workdir}\n" if workdir else ""
    script = c.gpu_build if gpu else c.build
    out.append(f"- name: {name}\n{when}{wd}  env:\n    WHEEL_DIR: ${{{{ github.workspace }}}}/{wheel_dir}\n"
               f"  run: |\n{indent(script, 4)}")
    return indent("\n".join(out), n)


def upload(n: int, name: str, path: str, always: bool = False, required: bool = True) -> str:
    lines = [f"- uses: {UPLOAD}"]
    if always:
        lines.append("  if: ${{ always() }}")  # a job cut by its time limit still uploads the interrupted run's reports
    lines += ["  with:", f"    name: {name}"]
    lines += ["    path: |", *("      " + p for p in path.splitlines())] if "\n" in path else [f"    path: {path}"]
    if required:
        lines.append("    if-no-files-found: error")
    return indent("\n".join(lines), n)


def download(n: int, path: str, name: str = "", pattern: str = "") -> str:
    key = f"name: {name}" if name else f"pattern: {pattern}"
    return indent(f"- uses: {DOWNLOAD}\n  with:\n    {key}\n    path: {path}", n)


def probe_restore(n: int) -> str:
    """Restore dlgate's support probes (after the wheel under test is downloaded: the key hashes it)."""
    return indent(f"""- name: Restore dlgate's support probes
  id: probe-cache
  uses: {RESTORE}
  with:
    path: {PROBE_CACHE} # the action's cache-dir
    # keyed on the build under test (its wheel's hash); a probe file's name carries the
    # compiler's version and dlgate's probe version, so an older entry is only a start
    key: {PROBE_KEY}
    restore-keys: {PROBE_PREFIX}""", n)


def probe_save(n: int, pull_request: bool) -> str:
    """Save the probes once per build: only without an exact hit, from the first shard, when
    something was probed, and (on a pull request) never from a fork's."""
    cond = ["!cancelled()", "steps.probe-cache.outputs.cache-hit != 'true'", "strategy.job-index == 0",
            f"hashFiles('{PROBE_CACHE}/**') != ''"] + ([SAME_REPO] if pull_request else [])
    why = "(first shard; not from a fork)" if pull_request else "(first shard)"
    return indent(f"""- name: Save dlgate's support probes {why}
  if: ${{{{ {" && ".join(cond)} }}}}
  uses: {SAVE}
  with:
    path: {PROBE_CACHE}
    key: ${{{{ steps.probe-cache.outputs.cache-primary-key }}}}""", n)


def build_job(s: Setup, why: str, cond: str = "") -> str:
    when = f"    if: {cond}\n" if cond else ""
    return f"""  build:
    # {why}
{when}    runs-on: ubuntu-latest
    timeout-minutes: {s.compiler.build_minutes}
    steps:
{checkout(s, 6)}
{python(6)}
{build(s, 6, "dist")}
{upload(6, "compiler-wheel", "dist/*.whl")}
"""


#: The pull-request label that runs a larger batch on the same targets, and its size.
DEEP_LABEL, DEEP_MODELS = "dlgate-deep", 500
#: The pull-request gate's time bound (seconds of cases, per shard), as ClusterFuzzLite's
#: code-change runs bound theirs: a batch that runs slow (or the deep label's) is cut at a tail
#: of its plan with its reports, instead of the job being killed at its 60-minute limit. The
#: 20 minutes left cover the action's start, the case in flight (its runs, its base re-run and
#: its reductions: a few minutes at the campaign's timeout_s 60 and reduce_seconds 60) and the
#: reports.
PR_BUDGET, PR_GATE_MINUTES = 2400, 60
#: A pull-request job runs on every event of the workflow but a label other than DEEP_LABEL.
PR_EVENT = f"github.event.action != 'labeled' || github.event.label.name == '{DEEP_LABEL}'"
#: The batch size a pull-request run takes: DEEP_MODELS under the label, else the campaign's.
PR_MODELS = f"${{{{ contains(github.event.pull_request.labels.*.name, '{DEEP_LABEL}') && '{DEEP_MODELS}' || '' }}}}"


def gpu_job(s: Setup, campaign: str, commit: str, base: bool, report_only: bool, guard: bool,
            changed_from: str = "") -> str:
    """``changed_from``: an expression for the commit the change starts from (the pull
    request's base), which aims the batch at the change and makes the batch the deep one
    under ``DEEP_LABEL``."""
    c = s.compiler
    steps = [checkout(s, 6, fetch_depth="2" if changed_from else ""), python(6, note="dlgate's and the build's Python")]
    if c.gpu_build:
        steps.append(build(s, 6, "dist-gpu/head", name="Build the compiler under test with CUDA", gpu=True))
        head = "dist-gpu/head/*.whl"
    else:
        head = f'"{c.requirement}"'
    if base:
        steps.append(checkout(s, 6, ref="${{ github.event.pull_request.base.sha }}", path=".dlgate-base-src"))
        steps.append(build(s, 6, "dist-gpu/base", name="Build the base commit with CUDA", gpu=True,
                            workdir=".dlgate-base-src"))
    install = ["python -m venv .dlgate-venv", f'.dlgate-venv/bin/pip install {PIP} "{s.dlgate_pip}"']
    if c.gpu_replaces and c.gpu_build:
        install.append(f".dlgate-venv/bin/pip uninstall -y {' '.join(c.gpu_replaces)} # replaced by the CUDA build")
    install.append(f".dlgate-venv/bin/pip install {PIP} {head}")
    steps.append(indent("- name: Install dlgate and the compiler under test\n  run: |\n"
                         + indent("\n".join(install), 4), 6))
    if base:
        steps.append(indent("""- name: Install the base build beside it
  # What the action does for base-compiler: a second environment that sees the first one's
  # packages (a .pth file after its own site-packages) and holds the base build, which so
  # replaces the build under test there instead of being shadowed by it.
  run: |
    python -m venv --without-pip .dlgate-base
    head_site=$(.dlgate-venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
    base_site=$(.dlgate-base/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
    echo "import site; site.addsitedir('$head_site')" > "$base_site/zz_dlgate_image_env.pth"
    .dlgate-base/bin/python -m pip install %s --force-reinstall --no-deps dist-gpu/base/*.whl
    .dlgate-base/bin/python -m pip install %s dist-gpu/base/*.whl""" % (PIP, PIP), 6))
    backends = " ".join(f"--backend {b}" for b in c.gpu_backends)
    args = f".dlgate-venv/bin/dlgate run --config {campaign} {backends} --commit \"$COMMIT\" --out dlgate-out"
    args += "\n--base-python .dlgate-base/bin/python" if base else ""
    args += "\n--fail-on none" if report_only else ""
    env = f"    COMMIT: {commit}\n"
    if changed_from:
        args += f'\n--changed-from "$CHANGED_FROM" ${{MODELS:+--models "$MODELS"}} --budget {PR_BUDGET}'
        env += f"    CHANGED_FROM: {changed_from}\n    MODELS: {PR_MODELS}\n"
    steps.append(indent(f"- name: dlgate (GPU)\n  env:\n{env}  run: >-\n"
                         + indent(args, 4), 6))
    # no separate job-summary step: `dlgate run` writes its step's summary itself (live progress, then summary.md)
    steps.append(upload(6, "dlgate-out-gpu", "dlgate-out", always=True, required=False))
    cond = "    if: github.event.pull_request.head.repo.full_name == github.repository\n" if guard else ""
    if guard and changed_from:
        cond = f"    if: github.event.pull_request.head.repo.full_name == github.repository && ({PR_EVENT})\n"
    why = ("    # Same-repository pull requests only: a fork's code never runs on a self-hosted runner.\n"
           if guard else "")
    built = ("    # The CPU jobs' wheels have no CUDA: this job builds the compiler with it (the runner needs\n"
             "    # the CUDA toolkit and what the build needs).\n" if c.gpu_build else "")
    return (f"  gate-gpu:\n    # The CUDA paths on the self-hosted GPU runner, through pip (a container action gets no GPU).\n"
            f"{why}{built}{cond}    runs-on: {s.runs_on}\n"
            f"    timeout-minutes: {c.gpu_minutes}\n    steps:\n" + "\n".join(steps) + "\n")


def checks_permission(s: Setup) -> str:
    """The job-level permissions of a job that runs the action, with ``dlgate init
    --check-run``: the repository read-only, and ``checks: write`` for the live check run,
    which the action's entrypoint writes (the compiler under test never gets the token).
    Without it, none: the job keeps the workflow's read-only token, and the action says in
    one line that the check run is off."""
    if not s.check_run:
        return ""
    return """    permissions:
      contents: read
      checks: write # the live check run of the action's check-run input: dlgate's progress while it runs
"""
