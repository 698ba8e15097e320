"""The workflows ``dlgate init`` writes: on pull requests (head versus base), on pushes to the
default branch (the base wheel, cached) and weekly (the deep campaign, sharded, with issues).
"""
from __future__ import annotations

from dlgate.init.steps import (BASELINE, CAMPAIGN, DEEP_LABEL, DEEP_MODELS, JUNIT, PR_BUDGET, PR_EVENT,
                               PR_GATE_MINUTES, PR_MODELS, PROBE_CACHE, RESTORE, SAVE, WEEKLY,
                               WEEKLY_SHARDS, WEEKLY_STATE, Setup, build, build_job, checkout, checks_permission,
                               download, gpu_job, indent, probe_restore, probe_save, python, upload)

PR_PATH = ".github/workflows/dlgate-pr.yml"
BASE_WHEEL_PATH = ".github/workflows/dlgate-base-wheel.yml"
WEEKLY_PATH = ".github/workflows/dlgate-weekly.yml"

_REPORT = "${{ steps.gate.outputs.junit }}\n${{ steps.gate.outputs.summary }}\n${{ steps.gate.outputs.repros }}"
#: The weekly shards' time bound (seconds of cases, per shard): the job's 340 minutes less the
#: action's start, one case's overrun (its runs and reductions) and the reports.
WEEKLY_BUDGET = 16200


_BASE_SHA = "${{ github.event.pull_request.base.sha }}"
#: What the security note adds with ``dlgate init --check-run``.
LIVE = (" and the gate jobs' `checks: write`, for their live check runs (the action's\n# entrypoint "
        "writes them: the compiler under test never gets the token)")


def pull_request(s: Setup) -> str:
    c = s.compiler
    gpu = bool(s.runner)
    head = f"""# dlgate on every pull request of {c.title}, written by `dlgate init --compiler {c.name}`.
#
"""
    if c.gpu_only:
        head += f"""# The build under test is the pip requirement {c.requirement} (set your own wheel or
# requirement in the install step), run on the self-hosted GPU runner against the PyTorch
# reference on a batch of random ONNX models seeded by the pull request's head commit. With no
# base build, a failure is new unless .dlgate/baseline.json lists it.
#
# Security: a read-only token; a fork's pull request never runs on the self-hosted runner;
# this workflow never uses pull_request_target.
"""
    else:
        head += f"""# Head versus base: the pull request's build of the compiler (head) runs a batch of random
# ONNX models, seeded by its head commit, against the PyTorch reference (campaign:
# {CAMPAIGN}); every failure is re-run on the build of the commit the pull request is
# based on (base), with the same models and inputs, and a failure the base build shares is
# pre-existing: it never fails the check. The base build is the wheel that
# dlgate-base-wheel.yml keeps in the Actions cache for every push to {s.branch}; the base-build
# job builds it itself when the cache has none. Without a build of the base commit, a release
# is the other way: drop the base-build job and set `base-compiler: {c.release}` (the
# release {s.branch} is at). Failures accepted for good go to {BASELINE}, committed: the
# base build decides what is new, and a pull request never updates a baseline, so there is
# no cached one to keep per branch. The Actions cache keeps dlgate's support probes
# ({PROBE_CACHE}, per build under test; a fork's pull request saves none).
#
# Security: a read-only token everywhere but the job that publishes the JUnit check{LIVE if s.check_run else ""}; a fork's
# pull request never gets a write token{" and never runs on the self-hosted runner" if gpu else ""}; this
# workflow never uses pull_request_target.
"""
    head += f"""#
# The batch is aimed at the change (`changed-from`: the pull request's base commit): 80% of
# its models exercise the operators, opsets, dtypes and rewrites the changed files touch, and
# the summary opens with what they covered. The label {DEEP_LABEL} runs {DEEP_MODELS} models on
# the same targets (a deeper look before merging a risky change). Each gate job spends at most
# {PR_BUDGET} s on cases (`budget`); what it leaves unstarted is not judged, and the summary
# says how many of the planned cases ran.
"""
    head += """name: dlgate

on:
  pull_request:
    types: [opened, synchronize, reopened, labeled] # labeled: only dlgate-deep runs the jobs

permissions:
  contents: read

concurrency:
  group: dlgate-${{ github.event.pull_request.number }}
  cancel-in-progress: true

jobs:
"""
    if c.gpu_only:
        return head + gpu_job(s, CAMPAIGN, "${{ github.event.pull_request.head.sha }}", base=False,
                               report_only=False, guard=True, changed_from=_BASE_SHA)
    miss = "steps.cache.outputs.cache-hit != 'true'"
    jobs = [build_job(s, "Build the compiler under test once; every shard tests the same wheel.", PR_EVENT),
            f"""  base-build:
    # The base build: the wheel of the commit the pull request is based on, as
    # dlgate-base-wheel.yml saved it when that commit was pushed (a pull request may restore
    # the caches of its base branch), else built here from that commit.
    if: {PR_EVENT}
    runs-on: ubuntu-latest
    timeout-minutes: {c.build_minutes}
    steps:
      - name: Restore the base commit's wheel
        id: cache
        uses: {RESTORE}
        with:
          path: compiler-wheel # the same path as the save in dlgate-base-wheel.yml
          key: compiler-wheel-${{{{ github.event.pull_request.base.sha }}}}
{checkout(s, 6, ref="${{ github.event.pull_request.base.sha }}", name="Check out the base commit (not in the cache)",
           cond=miss)}
{python(6, miss)}
{build(s, 6, "compiler-wheel", cond=miss, name="Build the base wheel (not in the cache)")}
{upload(6, "compiler-wheel-base", "compiler-wheel/*.whl")}
""", f"""  gate-cpu:
    # The CPU gate in three shards of one batch, seeded by the pull request's head commit.
    needs: [build, base-build]
    if: {PR_EVENT}
    runs-on: ubuntu-latest
    timeout-minutes: {PR_GATE_MINUTES}
{checks_permission(s)}    strategy:
      fail-fast: false
      matrix:
        shard: ["1/3", "2/3", "3/3"]
    steps:
{checkout(s, 6, submodules=False, fetch_depth="2")}
{download(6, "dist/head", name="compiler-wheel")}
{download(6, "dist/base", name="compiler-wheel-base")}
{probe_restore(6)}
      - name: dlgate
        id: gate
        uses: {s.action}
        with:
          config: {CAMPAIGN}
          shard: ${{{{ matrix.shard }}}}
          compiler: dist/head/*.whl # the build under test
          base-compiler: dist/base/*.whl # the base commit's build (or: {c.release})
          # the change: git diff BASE...HEAD (the merge commit's first parent is the base: depth 2)
          changed-from: {_BASE_SHA}
          models: {PR_MODELS} # {DEEP_MODELS} under the {DEEP_LABEL} label, else the campaign's
          # seconds of cases per shard; the case in flight finishes and the reports say how many ran
          budget: {PR_BUDGET}
          cache-dir: {PROBE_CACHE}
{probe_save(6, pull_request=True)}
{upload(6, "dlgate-out-cpu-${{ strategy.job-index }}", "dlgate-out", always=True)}
"""]
    if gpu:
        jobs.append(gpu_job(s, CAMPAIGN, "${{ github.event.pull_request.head.sha }}", base=True,
                             report_only=False, guard=True, changed_from=_BASE_SHA))
    jobs.append(f"""  merge:
    # One verdict, report and check for the whole CPU batch.
    needs: gate-cpu
    if: ${{{{ !cancelled() && ({PR_EVENT}) }}}}
    runs-on: ubuntu-latest
    timeout-minutes: 30
    permissions:
      contents: read
      checks: write # the JUnit check run{"" if s.check_run else "; no other job has it"}
    steps:
{checkout(s, 6, submodules=False)}
{download(6, "shards", pattern="dlgate-out-cpu-*")}
      - name: dlgate merge
        id: gate
        uses: {s.action}
        with:
          merge: shards/*
{upload(6, "dlgate-report", _REPORT, always=True, required=False)}
      - name: Publish the JUnit report
        if: ${{{{ !cancelled() }}}}
        uses: {JUNIT}
        with:
          report_paths: dlgate-out/junit.xml
          check_name: dlgate
          # A fork's token cannot create check runs: annotate the run instead.
          annotate_only: ${{{{ github.event.pull_request.head.repo.full_name != github.repository }}}}
""")
    return head + "\n".join(jobs)


def base_wheel(s: Setup) -> str:
    c = s.compiler
    return f"""# The base builds of dlgate's head versus base, written by `dlgate init --compiler {c.name}`:
# the compiler's wheel of every push to {s.branch}, kept in the Actions cache under its commit
# SHA. dlgate-pr.yml restores the wheel of the commit a pull request is based on (key
# compiler-wheel-<base SHA>) and re-runs every failure of the pull request's build on it.
# Caches saved on the default branch can be restored by every pull request into it; GitHub
# evicts entries unused for 7 days, and dlgate-pr.yml then builds the base commit's wheel.
name: dlgate base wheel

on:
  push:
    branches: [{s.branch}]

permissions:
  contents: read

jobs:
  wheel:
    runs-on: ubuntu-latest
    timeout-minutes: {c.build_minutes}
    steps:
{checkout(s, 6)}
{python(6)}
{build(s, 6, "compiler-wheel")}
      - name: Keep the wheel for the pull requests based on this commit
        uses: {SAVE}
        with:
          path: compiler-wheel # the same path as the restore in dlgate-pr.yml
          key: compiler-wheel-${{{{ github.sha }}}}
"""


def _weekly_cache(n: int, step: str, name: str, key: str, extra: str = "") -> str:
    paths = "\n".join("      " + p for p in WEEKLY_STATE)
    return indent(f"- name: {name}\n{extra}  uses: {step}\n  with:\n    path: |\n{paths}\n    {key}", n)


#: The weekly workflow's name, triggers, permissions and concurrency, GPU-only or not.
_WEEKLY_HEADER = """name: dlgate weekly

on:
  schedule:
    - cron: "23 2 * * 1" # Mondays, 02:23 UTC
  workflow_dispatch:
    inputs:
      changed-from:
        description: >-
          A commit: aim the campaign at the change from it to the dispatched ref (as a pull
          request's check is aimed, at the weekly campaign's size); empty: the ordinary campaign.
        required: false
        default: ""

permissions:
  contents: read

concurrency:
  group: dlgate-weekly
  cancel-in-progress: false

jobs:
"""


def weekly(s: Setup) -> str:
    c = s.compiler
    head = f"""# dlgate's weekly deep campaign for {c.title}, written by `dlgate init --compiler {c.name}`:
# thousands of larger models (campaign: {WEEKLY}) """
    if c.gpu_only:
        return head + """on the self-hosted GPU runner,
# every Monday and on demand. Report only: read the job summary and the dlgate-out-gpu artifact.
""" + _WEEKLY_HEADER + gpu_job(s, WEEKLY, "${{ github.sha }}", base=False, report_only=True, guard=False)
    restore_key = ("key: dlgate-weekly-${{ github.run_id }}-${{ github.run_attempt }}\n"
                   "    restore-keys: dlgate-weekly-")
    restore_merge = _weekly_cache(6, RESTORE, "Restore the weekly baseline and corpus", restore_key, "  id: cache\n")
    save = _weekly_cache(6, SAVE, "Save the weekly baseline, corpus and coverage state",
                         "key: ${{ steps.cache.outputs.cache-primary-key }}", "  if: ${{ !cancelled() }}\n")
    text = head + f"""on the build of {s.branch} at the time,
# every Monday and on demand, in eight shards merged into one report, with an issue opened per
# new failure.
#
# The weekly baseline, corpus and coverage state live in the Actions cache, not in the
# repository: the merge job accepts each week's failures into the baseline after opening
# their issues, so next week they count as known, and a failure that stops showing is listed
# as fixed; the coverage state the merged campaign ends with guides next week's generation.
# Each shard spends at most {WEEKLY_BUDGET} s ({WEEKLY_BUDGET / 3600:g} hours) on cases (`budget`);
# what the budget leaves unstarted is not judged that week. dlgate's support probes are
# cached per build.
{_WEEKLY_HEADER}{build_job(s, "Build the compiler once; every shard tests the same wheel.")}
  campaign:
    needs: build
    runs-on: ubuntu-latest
    # A GitHub-hosted job stops at 6 hours: add shards if one comes close.
    timeout-minutes: 340
{checks_permission(s)}    strategy:
      fail-fast: false
      matrix:
        shard: [{", ".join(f'"{i}/{WEEKLY_SHARDS}"' for i in range(1, WEEKLY_SHARDS + 1))}]
    steps:
{checkout(s, 6, submodules=False, fetch_depth="${{ inputs.changed-from && '0' || '1' }}")}
{_weekly_cache(6, RESTORE, "Restore the weekly baseline and corpus", restore_key)}
{download(6, "dist/head", name="compiler-wheel")}
{probe_restore(6)}
      - name: dlgate (weekly shard)
        uses: {s.action}
        with:
          config: {WEEKLY} # its baseline and corpus are the cached ones
          shard: ${{{{ matrix.shard }}}}
          compiler: dist/head/*.whl
          # every shard starts from last week's coverage, so guidance aims at what it missed
          coverage-state: {WEEKLY_STATE[2]}
          # A time bound per shard: the campaign's `models` stays the deterministic plan, and
          # a shard the budget cuts ends at a tail of its plan, still merged (the report says
          # how many of the planned cases ran).
          budget: {WEEKLY_BUDGET}
          # on demand: the change from this commit to the dispatched ref (empty on schedule)
          changed-from: ${{{{ inputs.changed-from }}}}
          cache-dir: {PROBE_CACHE}
{probe_save(6, pull_request=False)}
{upload(6, "dlgate-weekly-${{ strategy.job-index }}", "dlgate-out", always=True)}

  merge:
    needs: campaign
    if: ${{{{ !cancelled() }}}}
    runs-on: ubuntu-latest
    timeout-minutes: 60
    permissions:
      contents: read
      issues: write # only this job opens issues
    steps:
{checkout(s, 6, submodules=False)}
{restore_merge}
{download(6, "shards", pattern="dlgate-weekly-*")}
      - name: dlgate merge, issues and baseline
        id: gate
        uses: {s.action}
        with:
          merge: shards/*
          open-issues: true
          update-baseline: true
      - name: Carry this week's coverage state to next week
        if: ${{{{ !cancelled() && hashFiles('dlgate-out/coverage-state.json') != '' }}}}
        run: mkdir -p .dlgate && cp dlgate-out/coverage-state.json {WEEKLY_STATE[2]}
{save}
{upload(6, "dlgate-weekly-report", _REPORT, always=True, required=False)}
"""
    if s.runner:
        text += "\n" + gpu_job(s, WEEKLY, "${{ github.sha }}", base=False, report_only=True, guard=False)
    return text
