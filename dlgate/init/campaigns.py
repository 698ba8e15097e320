"""The campaign files ``dlgate init`` writes (pull request and weekly), and actionlint's
settings naming a self-hosted runner's labels."""
from __future__ import annotations

from dlgate.init.steps import BASELINE, CAMPAIGN, PROBE_CACHE, WEEKLY, WEEKLY_SHARDS, WEEKLY_STATE, Setup

#: Tzer's N_max (the TIR mode's default): IR mutations without new feedback before the passes mutate.
TIR_N_MAX = 4

__all__ = ["BASELINE", "CAMPAIGN", "WEEKLY", "actionlint_config", "campaign"]


def campaign(s: Setup, is_weekly: bool) -> str:
    c = s.compiler
    if is_weekly:
        intro = (f"# dlgate's weekly campaign for {c.title} (.github/workflows/dlgate-weekly.yml), written by\n"
                 "# `dlgate init`. Its baseline and corpus live in the Actions cache, not in the repository.\n")
        body = dict(campaign="weekly", models=5000, min_nodes=5, max_nodes=30, backends=c.weekly_backends,
                    timeout_s=120, memory_mb=8192, search_steps=48, confirm_runs=2, baseline=WEEKLY_STATE[0],
                    corpus=WEEKLY_STATE[1])
    else:
        intro = (f"# dlgate's pull-request campaign for {c.title} (.github/workflows/dlgate-pr.yml), written by\n"
                 "# `dlgate init`. Each pull request tests a fresh batch, seeded by its head commit.\n")
        body = dict(campaign="pr", models=100, min_nodes=1, max_nodes=10, backends=c.backends, timeout_s=60,
                    memory_mb=4096, confirm_runs=1, baseline=BASELINE, corpus=".dlgate/corpus")
    lines = [intro + "# Every key: `dlgate config --reference`; check an edit with `dlgate config FILE`."]
    for k, v in body.items():
        if k == "backends":
            lines.append("backends:\n" + "\n".join(f"  - {b}" for b in v))
            lines.append("reference: torch")
        else:
            lines.append(f"{k}: {v}")
    lines += ["fail_on: new",
              "# Not restricted to what the backends were probed to support: what one refuses is cut out",
              "# of the model and the rest still runs (findings_per_case). Set true to generate only what",
              f"# they support: the workflows keep the probes in the Actions cache ({PROBE_CACHE}).",
              "restrict_to_support: false", "findings_per_case: 4"]
    if is_weekly:
        lines += ["# Failures the base build shares are reduced too (pull requests leave them unreduced): the",
                  "# weekly campaign's issues carry a reduced repro for every cause.", "reduce_pre_existing: true",
                  "# A tenth of the models break one rule of ONNX on purpose: the compiler must reject them with",
                  "# an error, never crash, hang or run them.", "invalid_share: 0.1",
                  "# A quarter of the models also run an equivalent twin on every backend (the equivalence",
                  "# oracle: the compiler against itself, no reference needed); inconsistent is its finding.",
                  "rewrite_share: 0.25"]
        if any(b.partition("@")[0] == "tvm" for b in c.weekly_backends):
            lines += ["# A quarter of the models are Relax-native: drawn from the operators dlgate lowers straight",
                      "# into Relax, and run on TVM without its ONNX importer too (tvm-relax). The two paths are a",
                      "# pair: where one agrees with the reference, the other's failure is that path's finding.",
                      "relax_share: 0.25"]
        if c.name == "tvm":
            lines += ["# A tenth of the budget fuzzes TVM's low-level IR (TIR) and its pass sequences together",
                      "# (Tzer's technique, docs/tir.md): 500 steps in eight sequential chains, one per shard,",
                      "# each step as long as a few graph cases; findings are tir_crash, tir_exception,",
                      "# tir_inconsistent (and tir_slow, reported without failing: tir_slow_gates).", "tir_share: 0.1",
                      f"tir_n_max: {TIR_N_MAX}", f"tir_chains: {WEEKLY_SHARDS}"]
    return "\n".join(lines) + "\n"


#: Labels actionlint knows without being told (GitHub's own, and the self-hosted defaults).
_KNOWN_LABELS = {"self-hosted", "linux", "macos", "windows", "x64", "arm", "arm64", "ubuntu-latest"}


def actionlint_config(s: Setup) -> str | None:
    """actionlint's settings naming the GPU runner's own labels; None when it has none."""
    labels = [x for x in s.runner if x.lower() not in _KNOWN_LABELS]
    if not labels:
        return None
    items = "\n".join(f"    - {x}" for x in labels)
    return ("# actionlint's settings, written by `dlgate init`: the labels of the self-hosted GPU runner\n"
            f"# that dlgate's workflows run on.\nself-hosted-runner:\n  labels:\n{items}\n")
