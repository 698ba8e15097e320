"""Hostile inputs: every bad config, argument, state file, baseline and case folder gets one
line on stderr naming the problem and exit status 2: no traceback, no work started, and
nothing in a pre-existing output folder changed.

The table runs in-process through ``dlgate.cli.main``; only a closed stdout pipe needs a
subprocess. One real run (one model on onnxruntime) provides the output folder that every
``run`` case points at, so that a refused run can be seen to leave it untouched.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pytest
import yaml

from dlgate.cli import main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = {"campaign": "h", "models": 1, "max_nodes": 3, "opset": 18, "operators": ["Add", "Relu"],
        "backends": ["onnxruntime"], "crosscheck": False}
SEED = "hostile"


# -- assets: generated cases, a saved bundle, a finished run ----------------------------------
@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    from dlgate.check import load_bundle, save_bundle

    root = tmp_path_factory.mktemp("hostile")
    gen = str(root / "gen")
    assert main(["gen", "--seed", SEED, "--count", "6", "--out", gen, "--ops", "Add,Relu", "--opset", "18",
                 "--max-nodes", "3"]) == 0
    cases = [os.path.join(gen, d) for d in sorted(os.listdir(gen))]
    with_inputs = [d for d in cases if json.load(open(os.path.join(d, "meta.json")))["inputs"]]
    case = with_inputs[0]
    other = next(d for d in cases if open(os.path.join(d, "model.onnx"), "rb").read()
                 != open(os.path.join(case, "model.onnx"), "rb").read())
    bundle = save_bundle(str(root), load_bundle(case), subdir="bundle")
    cfg = str(root / "base.yaml")
    with open(cfg, "w") as f:
        yaml.safe_dump(BASE, f)
    run = str(root / "run")
    assert main(["run", "--config", cfg, "--seed", SEED, "--out", run]) == 0
    return {"case": case, "other": other, "bundle": bundle, "run": run, "config": cfg}


class Ctx:
    """Fresh copies of the assets for one table row (made on first use), and files to write."""

    def __init__(self, assets, tmp):
        self.assets, self.tmp, self._copies, self._n = assets, str(tmp), {}, 0

    def _copy(self, key: str) -> str:
        if key not in self._copies:
            dst = os.path.join(self.tmp, key)
            shutil.copytree(self.assets[key], dst)
            self._copies[key] = dst
        return self._copies[key]

    @property
    def out(self) -> str:  # a finished run's folder: what a refused command must not touch
        return self._copy("run")

    @property
    def case(self) -> str:  # a generated case folder (model.onnx, meta.json)
        return self._copy("case")

    @property
    def bundle(self) -> str:  # a saved bundle (model.onnx, meta.json, inputs.npz)
        return self._copy("bundle")

    @property
    def other(self) -> str:
        return self.assets["other"]

    def file(self, content, name: str | None = None) -> str:
        self._n += 1
        p = os.path.join(self.tmp, name or f"f{self._n}")
        with open(p, "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode())
        return p

    def cfg(self, **kw) -> str:
        """A campaign file: the finished run's config with ``kw`` on top (None deletes)."""
        doc = {k: v for k, v in dict(BASE, **kw).items() if v is not None}
        return self.file(yaml.safe_dump(doc), f"c{self._n + 1}.yaml")

    def run(self, *args) -> list:
        return ["run", "--seed", SEED, "--out", self.out, *args]

    def run_cfg(self, path: str, *args) -> list:
        return self.run("--config", path, *args)

    def baseline(self, doc) -> list:
        text = doc if isinstance(doc, (str, bytes)) else json.dumps(doc)
        return self.run("--config", self.assets["config"], "--baseline", self.file(text, "baseline.json"))

    def snapshot(self) -> dict:
        if "run" not in self._copies:
            return {}
        snap = {}
        for dirpath, _, files in os.walk(self._copies["run"]):
            for f in files:
                if f != ".lock":  # the other-run lock's pid file
                    p = os.path.join(dirpath, f)
                    snap[os.path.relpath(p, self._copies["run"])] = open(p, "rb").read()
        return snap


# -- mutations of case folders ------------------------------------------------------------------
def _write(path: str, data) -> str:
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return os.path.dirname(path)


def _meta(d: str, **changes) -> str:
    p = os.path.join(d, "meta.json")
    meta = json.load(open(p))
    for k, v in changes.items():
        if v is None:
            meta.pop(k, None)
        else:
            meta[k] = v
    return _write(p, json.dumps(meta))


def _graph(d: str, fn) -> str:
    p = os.path.join(d, "meta.json")
    meta = json.load(open(p))
    fn(meta["graph"])
    return _write(p, json.dumps(meta))


def _npz(d: str, change) -> str:
    p = os.path.join(d, "inputs.npz")
    with np.load(p) as z:
        arrays = {k: z[k] for k in z.files}
    arrays = change(arrays)
    os.unlink(p)
    np.savez(p, **arrays)
    return d


def _swap(d: str, other: str) -> str:
    shutil.copy(os.path.join(other, "model.onnx"), os.path.join(d, "model.onnx"))
    return d


def _read_only_out(c: Ctx) -> str:
    if os.geteuid() == 0:  # root writes through file modes: take a folder no one may create
        return "/sys/dlgate-hostile-out"
    d = os.path.join(c.tmp, "ro")
    os.makedirs(d)
    os.chmod(d, 0o555)
    return os.path.join(d, "out")


def _reduce(d: str) -> list:
    return ["reduce", d, "--backend", "onnxruntime"]


def _check(c: Ctx, d: str) -> list:
    return ["check", d, "--backend", "onnxruntime", "--out", c.out]


LONG = "x" * 300  # one path component past NAME_MAX (255)
FP = {"backend": "tvm", "verdict": "mismatch", "cluster": "c1"}


@dataclass
class Bad:
    id: str
    argv: object  # Ctx -> argv
    needle: tuple  # every one appears in the error line
    status: int = 2


def B(id_, argv, *needle, status=2):
    return Bad(id_, argv, needle, status)


CASES = [
    # -- campaign files: syntax, encoding, size -------------------------------------------------
    B("yaml-syntax", lambda c: c.run_cfg(c.file("models: [1, 2\n")), "not valid YAML (line"),
    B("yaml-mapping-in-scalar", lambda c: c.run_cfg(c.file("models: a: b\n")), "not valid YAML"),
    B("yaml-top-level-list", lambda c: c.run_cfg(c.file("- 1\n- 2\n")), "expected a mapping"),
    B("yaml-top-level-scalar", lambda c: c.run_cfg(c.file("42\n")), "expected a mapping"),
    B("yaml-duplicate-key", lambda c: c.run_cfg(c.file("models: 1\nmodels: 5\n")), "duplicate key 'models'"),
    B("yaml-python-tag", lambda c: c.run_cfg(c.file('models: !!python/object/apply:os.system ["true"]\n')),
      "not valid YAML", "python/object"),
    B("yaml-nested-too-deep", lambda c: c.run_cfg(c.file("models: " + "[" * 3000 + "]" * 3000 + "\n")),
      "nested too deeply"),
    B("yaml-5000-digit-int", lambda c: c.run_cfg(c.file("models: " + "9" * 5000 + "\n")), "not valid YAML"),
    B("yaml-bad-date", lambda c: c.run_cfg(c.file("campaign: 2024-13-45\n")), "not valid YAML"),
    B("config-binary", lambda c: c.run_cfg(c.file(open(sys.executable, "rb").read(4096))), "binary file"),
    B("config-not-utf8", lambda c: c.run_cfg(c.file(b"campaign: caf\xe9\n")), "not UTF-8"),
    B("config-oversized", lambda c: c.run_cfg(c.file("# padding\n" * 120_000)), "larger than 1 MiB"),
    B("config-dev-zero", lambda c: c.run_cfg("/dev/zero"), "/dev/zero", "larger than 1 MiB"),
    B("config-a-folder", lambda c: c.run_cfg(c.tmp), "cannot read", "Is a directory"),
    B("config-missing", lambda c: c.run_cfg(os.path.join(c.tmp, "nope.yaml")), "nope.yaml: cannot read"),
    B("config-subcommand-binary", lambda c: ["config", c.file(b"\x00\x01\x02models: 1")], "binary file"),
    # -- keys and types ----------------------------------------------------------------------------
    B("unknown-key", lambda c: c.run_cfg(c.cfg(modles=3)), "unknown key 'modles'", "allowed:"),
    B("models-string", lambda c: c.run_cfg(c.cfg(models="many")), "models", "expected an integer"),
    B("models-bool", lambda c: c.run_cfg(c.cfg(models=True)), "models", "expected an integer"),
    B("models-zero", lambda c: c.run_cfg(c.cfg(models=0)), "models", "outside the allowed range"),
    B("models-float", lambda c: c.run_cfg(c.cfg(models=1.5)), "models", "expected an integer"),
    B("models-nan", lambda c: c.run_cfg(c.cfg(models=float("nan"))), "models"),
    B("campaign-empty", lambda c: c.run_cfg(c.cfg(campaign="")), "campaign", "non-empty string"),
    B("campaign-nul", lambda c: c.run_cfg(c.cfg(campaign="a\0b")), "campaign", "NUL"),
    B("corpus-int", lambda c: c.run_cfg(c.cfg(corpus=3)), "corpus", "non-empty string"),
    B("opset-9", lambda c: c.run_cfg(c.cfg(opset=9)), "opset", "outside the allowed range 13..28"),
    B("min-exceeds-max", lambda c: c.run_cfg(c.cfg(min_nodes=5, max_nodes=2)), "min_nodes", "exceeds max_nodes"),
    B("fail-on-unknown", lambda c: c.run_cfg(c.cfg(fail_on="sometimes")), "fail_on", "new, any, none"),
    B("crosscheck-string", lambda c: c.run_cfg(c.cfg(crosscheck="yes please")), "crosscheck", "true or false"),
    # -- numbers: NaN, inf, negative ----------------------------------------------------------------
    B("timeout-nan", lambda c: c.run_cfg(c.cfg(timeout_s=float("nan"))), "timeout_s", "finite"),
    B("timeout-inf", lambda c: c.run_cfg(c.cfg(timeout_s=float("inf"))), "timeout_s", "finite"),
    B("timeout-negative", lambda c: c.run_cfg(c.cfg(timeout_s=-1)), "timeout_s", "outside the allowed range"),
    B("timeout-zero", lambda c: c.run_cfg(c.cfg(timeout_s=0)), "timeout_s", "outside the allowed range"),
    B("timeout-a-year", lambda c: c.run_cfg(c.cfg(timeout_s=3.2e7)), "timeout_s", "outside the allowed range"),
    B("memory-negative", lambda c: c.run_cfg(c.cfg(memory_mb=-5)), "memory_mb", "outside the allowed range"),
    B("memory-inf", lambda c: c.run_cfg(c.cfg(memory_mb=float("inf"))), "memory_mb", "expected an integer"),
    B("memory-huge", lambda c: c.run_cfg(c.cfg(memory_mb=10**30)), "memory_mb", "outside the allowed range"),
    B("reduce-seconds-nan", lambda c: c.run_cfg(c.cfg(reduce_seconds=float("nan"))), "reduce_seconds", "finite"),
    B("reduce-seconds-negative", lambda c: c.run_cfg(c.cfg(reduce_seconds=-3)), "reduce_seconds", "outside"),
    B("search-steps-negative", lambda c: c.run_cfg(c.cfg(search_steps=-1)), "search_steps", "outside"),
    B("confirm-runs-99", lambda c: c.run_cfg(c.cfg(confirm_runs=99)), "confirm_runs", "outside"),
    B("tolerance-nan", lambda c: c.run_cfg(c.cfg(tolerances={"float32": [float("nan"), 0]})),
      "tolerances.float32", "finite"),
    B("tolerance-inf", lambda c: c.run_cfg(c.cfg(tolerances={"float32": [1e-3, float("inf")]})),
      "tolerances.float32", "finite"),
    B("tolerance-negative", lambda c: c.run_cfg(c.cfg(tolerances={"float32": [-1, 0]})), "tolerances.float32"),
    B("tolerance-one-number", lambda c: c.run_cfg(c.cfg(tolerances={"float32": [1e-2]})), "[rtol, atol]"),
    B("tolerance-unknown-dtype", lambda c: c.run_cfg(c.cfg(tolerances={"float8": [1, 1]})), "float8", "unknown dtype"),
    B("tolerances-a-list", lambda c: c.run_cfg(c.cfg(tolerances=[1, 2])), "tolerances", "a mapping"),
    # -- backends, options, operators, dtypes ---------------------------------------------------------
    B("backend-unknown", lambda c: c.run_cfg(c.cfg(backends=["tmv"])), "backends[0]", "unknown backend 'tmv'"),
    B("backend-bad-level", lambda c: c.run_cfg(c.cfg(backends=["tvm@O9"])), "no optimization level 'O9'"),
    B("backend-bad-device", lambda c: c.run_cfg(c.cfg(backends=["onnxruntime:tpu"])), "no device 'tpu'"),
    B("backend-unknown-key", lambda c: c.run_cfg(c.cfg(backends=[{"name": "tvm", "target": "llvm"}])),
      "backends[0].target", "unknown key"),
    B("backends-empty", lambda c: c.run_cfg(c.cfg(backends=[])), "at least one backend"),
    B("backends-a-string", lambda c: c.run_cfg(c.cfg(backends="tvm")), "backends", "a list of backends"),
    B("backend-optional-string", lambda c: c.run_cfg(c.cfg(backends=[{"name": "tvm", "optional": "yes"}])),
      "optional", "true or false"),
    B("option-unknown-tvm", lambda c: c.run_cfg(c.cfg(backends=[{"name": "tvm", "options": {
        "extra_pass": ["dlgate.backends.testing:sigmoid_to_tanh"]}}])),
      "backends[0]", "tvm", "unknown option 'extra_pass'", "allowed: extra_passes"),
    B("option-unknown-onnxruntime", lambda c: c.run_cfg(c.cfg(backends=[{"name": "onnxruntime",
                                                                          "options": {"threads": 2}}])),
      "onnxruntime", "unknown option 'threads'", "intra_op_threads", "cpu_fallback"),
    B("option-bad-value-onnxruntime", lambda c: c.run_cfg(c.cfg(backends=[{"name": "onnxruntime", "options": {
        "intra_op_threads": "two"}}])), "intra_op_threads", "positive integer"),
    B("option-bad-value-tvm", lambda c: c.run_cfg(c.cfg(backends=[{"name": "tvm", "options": {
        "extra_passes": "not-a-list"}}])), "extra_passes"),
    B("option-bad-pass-name", lambda c: c.run_cfg(c.cfg(backends=[{"name": "tvm", "options": {
        "extra_passes": ["no colon"]}}])), "extra_passes", "package.module:function"),
    B("option-unknown-tensorrt", lambda c: c.run_cfg(c.cfg(backends=[{"name": "tensorrt", "device": "cuda",
                                                                       "options": {"int8": True}}])),
      "unknown option 'int8'", "workspace_mb, fp16"),
    B("option-unknown-inductor", lambda c: c.run_cfg(c.cfg(backends=[{"name": "inductor",
                                                                       "options": {"mode": "x"}}])),
      "unknown option 'mode'", "fullgraph"),
    B("option-on-a-fake-class", lambda c: c.run_cfg(c.cfg(backends=[{"name": "tests.fake_backends:Good",
                                                                      "options": {"x": 1}}])),
      "tests.fake_backends:Good", "unknown option 'x'", "(none)"),
    B("backend-class-missing", lambda c: c.run_cfg(c.cfg(backends=["tests.fake_backends:Nope"])),
      "cannot load backend"),
    B("reference-unknown", lambda c: c.run_cfg(c.cfg(reference="nosuch")), "reference", "unknown backend"),
    B("support-unknown", lambda c: c.run_cfg(c.cfg(support=["nosuch"])), "support[0]", "unknown backend"),
    B("operator-unknown", lambda c: c.run_cfg(c.cfg(operators=["Add", "Frobnicate"])), "operators[1]", "Frobnicate"),
    B("operators-a-string", lambda c: c.run_cfg(c.cfg(operators="Add")), "operators", "a list of strings"),
    B("dtype-unknown", lambda c: c.run_cfg(c.cfg(dtypes=["float8"])), "dtypes[0]", "unknown dtype 'float8'"),
    # -- base and issues sections -------------------------------------------------------------------
    B("base-unknown-key", lambda c: c.run_cfg(c.cfg(base={"pyhton": "/usr/bin/python3"})), "base.pyhton"),
    B("base-a-string", lambda c: c.run_cfg(c.cfg(base="python3")), "base", "a mapping with `python`"),
    B("base-no-python", lambda c: c.run_cfg(c.cfg(base={"env": {}})), "base.python"),
    B("base-env-bad-name", lambda c: c.run_cfg(c.cfg(base={"python": "/x", "env": {"A=B": "1"}})),
      "base.env", "'A=B'"),
    B("base-env-a-list", lambda c: c.run_cfg(c.cfg(base={"python": "/x", "env": ["A"]})), "base.env"),
    B("issues-bad-repo", lambda c: c.run_cfg(c.cfg(issues={"repo": "nope"})), "issues.repo", "OWNER/NAME"),
    B("issues-negative-cap", lambda c: c.run_cfg(c.cfg(issues={"repo": "a/b", "max_per_run": -1})),
      "issues.max_per_run"),
    B("issues-unknown-key", lambda c: c.run_cfg(c.cfg(issues={"repo": "a/b", "token": "x"})), "issues.token"),
    B("issues-bad-url", lambda c: c.run_cfg(c.cfg(issues={"repo": "a/b", "api_url": "ftp://x"})), "issues.api_url"),
    # -- command-line arguments -------------------------------------------------------------------
    B("shard-zero", lambda c: c.run("--shard", "0/3"), "--shard", "1 <= I <= N"),
    B("shard-past-n", lambda c: c.run("--shard", "3/2"), "--shard"),
    B("shard-words", lambda c: c.run("--shard", "a/b"), "--shard", "expected I/N"),
    B("shard-of-zero", lambda c: c.run("--shard", "1/0"), "--shard"),
    B("shard-three-parts", lambda c: c.run("--shard", "1/2/3"), "--shard"),
    B("run-timeout-nan", lambda c: c.run("--timeout", "nan"), "--timeout", "'nan'"),
    B("run-timeout-inf", lambda c: c.run("--timeout", "inf"), "--timeout", "'inf'"),
    B("run-timeout-zero", lambda c: c.run("--timeout", "0"), "--timeout"),
    B("run-timeout-negative", lambda c: c.run("--timeout", "-1"), "--timeout"),
    B("run-models-negative", lambda c: c.run("--models", "-1"), "--models"),
    B("run-models-zero", lambda c: c.run("--models", "0"), "--models"),
    B("run-memory-too-small", lambda c: c.run("--memory-mb", "10"), "--memory-mb", "outside"),
    B("run-confirm-negative", lambda c: c.run("--confirm-runs", "-1"), "--confirm-runs"),
    B("run-fail-on-unknown", lambda c: c.run("--fail-on", "sometimes"), "--fail-on"),
    B("run-backend-unknown", lambda c: c.run("--backend", "nosuch"), "unknown backend 'nosuch'"),
    B("run-backend-bad-level", lambda c: c.run("--backend", "tvm@O9"), "'O9'"),
    B("run-reference-unknown", lambda c: c.run("--reference", "nosuch"), "--reference nosuch", "'nosuch'"),
    B("run-seed-empty", lambda c: c.run("--seed", ""), "--seed", "must not be empty"),
    B("run-commit-empty", lambda c: ["run", "--commit", " ", "--out", c.out], "--commit", "must not be empty"),
    B("out-a-file", lambda c: ["run", "--seed", SEED, "--out", c.file("x")], "--out", "not a folder"),
    B("out-under-a-file", lambda c: ["run", "--seed", SEED, "--out", os.path.join(c.file("x"), "sub")],
      "--out", "Not a directory"),
    B("out-too-long", lambda c: ["run", "--seed", SEED, "--out", os.path.join(c.tmp, LONG)],
      "--out", "File name too long"),
    B("out-read-only", lambda c: ["run", "--seed", SEED, "--models", "1", "--backend", "onnxruntime",
                                  "--out", _read_only_out(c)], "-out"),
    B("check-timeout-zero", lambda c: ["check", c.case, "--backend", "onnxruntime", "--timeout", "0"], "--timeout"),
    B("check-timeout-negative", lambda c: ["check", c.case, "--backend", "onnxruntime", "--timeout", "-1"],
      "--timeout"),
    B("check-timeout-nan", lambda c: ["check", c.case, "--backend", "onnxruntime", "--timeout", "nan"], "--timeout"),
    B("check-memory-zero", lambda c: ["check", c.case, "--backend", "onnxruntime", "--memory-mb", "0"],
      "--memory-mb"),
    B("check-backend-unknown", lambda c: _check(c, c.case)[:2] + ["--backend", "nosuch"], "nosuch"),
    B("check-out-a-file", lambda c: ["check", c.case, "--backend", "onnxruntime", "--out", c.file("x")],
      "--out", "not a folder"),
    B("reduce-max-seconds-nan", lambda c: _reduce(c.bundle) + ["--max-seconds", "nan"], "--max-seconds"),
    B("gen-count-zero", lambda c: ["gen", "--seed", "s", "--count", "0", "--out", c.tmp], "--count"),
    B("gen-out-a-file", lambda c: ["gen", "--seed", "s", "--count", "1", "--out", c.file("x")], "not a folder"),
    B("merge-out-a-file", lambda c: ["merge", c.out, "--out", c.file("x")], "--out", "not a folder"),
    B("unknown-command", lambda c: ["frobnicate"], "unknown command 'frobnicate'"),
    # -- state files of an output folder (journal and manifest) -------------------------------------
    B("run-json-garbage", lambda c: [_write(os.path.join(c.out, "run.json"), "{not json"),
                                     *c.run_cfg(c.assets["config"])][1:], "run.json"),
    B("run-json-a-list", lambda c: [_write(os.path.join(c.out, "run.json"), "[1, 2]"),
                                    *c.run_cfg(c.assets["config"])][1:], "run.json"),
    B("journal-garbage-line", lambda c: [_write(os.path.join(c.out, "results.jsonl"),
                                                "garbage\n" + open(os.path.join(c.out, "results.jsonl")).read()),
                                         *c.run_cfg(c.assets["config"])][1:], "results.jsonl"),
    B("journal-duplicate-record", lambda c: [_write(os.path.join(c.out, "results.jsonl"),
                                                    open(os.path.join(c.out, "results.jsonl")).read() * 2),
                                             *c.run_cfg(c.assets["config"])][1:], "results.jsonl"),
    # -- baseline files ------------------------------------------------------------------------------
    B("baseline-not-json", lambda c: c.baseline("{oops"), "baseline.json", "not JSON"),
    B("baseline-not-utf8", lambda c: c.baseline(b'{"dlgate_baseline": 2, "x": "\xff"}'), "baseline.json"),
    B("baseline-wrong-format", lambda c: c.baseline({"dlgate_baseline": 7}), "not a dlgate baseline"),
    B("baseline-format-true", lambda c: c.baseline({"dlgate_baseline": True}), "not a dlgate baseline"),
    B("baseline-a-list", lambda c: c.baseline([1, 2]), "not a dlgate baseline"),
    B("baseline-fingerprints-list", lambda c: c.baseline({"dlgate_baseline": 2, "fingerprints": []}),
      '"fingerprints" must be a mapping'),
    B("baseline-entry-a-string", lambda c: c.baseline({"dlgate_baseline": 2, "fingerprints": {"fp1": "tvm"}}),
      "fingerprints['fp1']", "expected a mapping"),
    B("baseline-entry-no-backend", lambda c: c.baseline({"dlgate_baseline": 2, "fingerprints": {
        "fp1": {"verdict": "mismatch", "cluster": "c1"}}}), "fingerprints['fp1']", "backend"),
    B("baseline-entry-no-cluster", lambda c: c.baseline({"dlgate_baseline": 2, "fingerprints": {
        "fp1": {"backend": "tvm", "verdict": "mismatch"}}}), "fingerprints['fp1']", "cluster"),
    B("baseline-entry-bad-cases", lambda c: c.baseline({"dlgate_baseline": 2, "fingerprints": {
        "fp1": dict(FP, cases="three")}}), "fingerprints['fp1']", "cases"),
    B("baseline-repro-escapes", lambda c: c.baseline({"dlgate_baseline": 2, "fingerprints": {
        "fp1": dict(FP, repro="../../etc")}}), "fingerprints['fp1']", "repro"),
    B("baseline-cluster-bad", lambda c: c.baseline({"dlgate_baseline": 2, "clusters": {"c1": {"fingerprints": 3}}}),
      "clusters['c1']"),
    B("baseline-corpus-bad", lambda c: c.baseline({"dlgate_baseline": 2, "corpus": {"case": ["pass"]}}),
      "corpus['case']"),
    B("baseline-v1-signature-bad", lambda c: c.baseline({"dlgate_baseline": 1, "signatures": {"s": 5}}),
      "signatures['s']"),
    B("baseline-a-folder", lambda c: c.run_cfg(c.assets["config"], "--baseline", c.tmp), "not a readable baseline"),
    B("baseline-update-corrupt", lambda c: ["baseline", "update", c.out, "--baseline", c.file("{", "b.json")],
      "b.json", "not JSON"),
    # -- case folders for check and reduce --------------------------------------------------------------
    B("case-no-model", lambda c: _check(c, (os.unlink(os.path.join(c.case, "model.onnx")), c.case)[1]),
      "model.onnx", "No such file"),
    B("case-empty-model", lambda c: _check(c, _write(os.path.join(c.case, "model.onnx"), b"")),
      "model.onnx does not match the sha256"),
    B("case-swapped-model", lambda c: _check(c, _swap(c.case, c.other)), "model.onnx does not match the sha256"),
    B("case-corrupt-model-matching-sha", lambda c: _check(c, _meta(
        _write(os.path.join(c.case, "model.onnx"), b"\xff" * 64), sha256=hashlib.sha256(b"\xff" * 64).hexdigest())),
      "model.onnx", "not an ONNX model"),
    B("case-meta-not-json", lambda c: _check(c, _write(os.path.join(c.case, "meta.json"), "{")), "meta.json",
      "not valid JSON"),
    B("case-meta-not-utf8", lambda c: _check(c, _write(os.path.join(c.case, "meta.json"), b'{"id": "\xff"}')),
      "meta.json", "not valid JSON"),
    B("case-meta-a-list", lambda c: _check(c, _write(os.path.join(c.case, "meta.json"), "[]")), "meta.json",
      "JSON object"),
    B("case-meta-no-graph", lambda c: _check(c, _meta(c.case, graph=None)), "meta.json", "graph"),
    B("case-meta-no-seed", lambda c: _check(c, _meta(c.case, seed=None)), "meta.json", "seed"),
    B("case-meta-sha-a-number", lambda c: _check(c, _meta(c.case, sha256=12)), "meta.json", "sha256"),
    B("case-graph-unknown-op", lambda c: _check(c, _graph(c.case, lambda g: g["nodes"][0].update(op="Bogus"))),
      "graph", "unknown operator 'Bogus'"),
    B("case-graph-bad-dtype", lambda c: _check(c, _graph(c.case, lambda g: g["tensors"][0].update(dtype="x"))),
      "graph", "unknown dtype"),
    B("case-graph-huge-shape", lambda c: _check(c, _graph(c.case, lambda g: g["tensors"][0].update(
        shape=[10**9, 10**9]))), "graph", "bad shape"),
    B("case-graph-bad-ids", lambda c: _check(c, _graph(c.case, lambda g: g.update(outputs=[999]))), "graph",
      "outputs"),
    B("case-graph-not-a-graph", lambda c: _check(c, _meta(c.case, graph={"tensors": 3})), "graph", "malformed"),
    B("bundle-sha-mismatch", lambda c: _check(c, _meta(c.bundle, model_sha256="0" * 64)),
      "model.onnx does not match the model_sha256"),
    B("bundle-swapped-model", lambda c: _check(c, _swap(c.bundle, c.other)), "model_sha256"),
    B("bundle-legacy-swapped-model", lambda c: _check(c, _swap(_meta(c.bundle, model_sha256=None), c.other)),
      "not the model meta.json describes"),
    B("bundle-npz-garbage", lambda c: _check(c, _write(os.path.join(c.bundle, "inputs.npz"), b"garbage" * 10)),
      "inputs.npz", "not an .npz archive"),
    B("bundle-npz-empty", lambda c: _check(c, _write(os.path.join(c.bundle, "inputs.npz"), b"")), "inputs.npz"),
    B("bundle-npz-truncated", lambda c: _check(c, _write(os.path.join(c.bundle, "inputs.npz"), open(
        os.path.join(c.bundle, "inputs.npz"), "rb").read()[:40])), "inputs.npz", "unreadable"),
    B("bundle-npz-missing-input", lambda c: _check(c, _npz(c.bundle, lambda a: {"zz": np.zeros(1)})),
      "inputs.npz", "no array for input"),
    B("bundle-npz-wrong-type", lambda c: _check(c, _npz(c.bundle, lambda a: {
        k: np.zeros((2, 3), np.int8) for k in a})), "inputs.npz", "the model takes"),
    B("bundle-search-bad", lambda c: _check(c, _meta(c.bundle, search=[1])), "meta.json", "search"),
    B("check-no-cases", lambda c: ["check", c.tmp, "--backend", "onnxruntime"], "no generated cases"),
    B("reduce-corrupt-model", lambda c: _reduce(_write(os.path.join(c.bundle, "model.onnx"), b"\x00garbage")),
      "model.onnx"),
    B("reduce-corrupt-npz", lambda c: _reduce(_write(os.path.join(c.bundle, "inputs.npz"), b"PK\x03\x04junk")),
      "inputs.npz", "unreadable"),
    B("reduce-meta-garbage", lambda c: _reduce(_write(os.path.join(c.bundle, "meta.json"), "nope")), "meta.json"),
    B("reduce-sha-mismatch", lambda c: _reduce(_meta(c.bundle, model_sha256="f" * 64)), "model_sha256"),
    B("reduce-not-a-case", lambda c: _reduce(c.tmp), "not a case folder"),
    B("reduce-out-a-file", lambda c: _reduce(c.bundle) + ["--out", c.file("x")], "--out", "not a folder"),
]


def test_the_table_is_long_enough():
    assert len(CASES) >= 60 and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("bad", CASES, ids=[c.id for c in CASES])
def test_hostile_input_gets_one_line_and_status_2(bad, assets, tmp_path, capsys):
    ctx = Ctx(assets, tmp_path)
    argv = bad.argv(ctx)
    before = ctx.snapshot()
    status = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == bad.status, (status, err)
    assert len(lines) == 1, err
    assert lines[0].startswith("dlgate"), lines[0]
    for needle in bad.needle:
        assert needle in lines[0], (needle, lines[0])
    assert ctx.snapshot() == before, "the output folder changed"
    if argv[0] == "reduce":
        assert not os.path.exists(argv[1].rstrip("/") + "-reduced")


# -- beyond the table ---------------------------------------------------------------------------------
def test_a_closed_stdout_pipe_is_quiet(tmp_path):
    """`dlgate config F | head -1`: the reader goes away; no traceback, status 0 or 141."""
    for args in (["config", os.path.join(REPO, "configs", "pr.yaml")], ["ops"]):
        r, w = os.pipe()
        os.close(r)  # the reader is gone before the first write: every write fails with EPIPE
        try:
            p = subprocess.run([sys.executable, "-m", "dlgate", *args], stdout=w, stderr=subprocess.PIPE,
                               text=True, cwd=REPO, timeout=120)
        finally:
            os.close(w)
        assert p.returncode in (0, 141), (args, p.returncode, p.stderr)
        assert "Traceback" not in p.stderr and "Exception ignored" not in p.stderr, p.stderr


def test_a_full_disk_is_one_line_and_the_journal_keeps_what_finished(assets, tmp_path, capsys, monkeypatch):
    from dlgate.gate import journal as J

    real, calls = J.Journal.append, []

    def append(self, record, timing=None):
        calls.append(record["case"])
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, record, timing)

    monkeypatch.setattr(J.Journal, "append", append)
    cfg = str(tmp_path / "c.yaml")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(dict(BASE, models=2)))
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "disk", "--out", out]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("dlgate: no space left on device"), err
    assert "run the same command again" in err
    assert len(J.read_records(os.path.join(out, "results.jsonl"))) == 1  # the finished case is kept
    monkeypatch.setattr(J.Journal, "append", real)  # space freed: the rerun resumes
    assert main(["run", "--config", cfg, "--seed", "disk", "--out", out]) == 0
    assert "1 of 2 cases already done" in capsys.readouterr().err
    assert len(J.read_records(os.path.join(out, "results.jsonl"))) == 2


def test_a_full_disk_while_writing_reports(assets, tmp_path, capsys, monkeypatch):
    from dlgate.gate import report

    def full(*a, **k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.path.join(str(tmp_path), "junit.xml"))

    monkeypatch.setattr(report, "write_all", full)
    out = str(tmp_path / "o")
    shutil.copytree(assets["run"], out)
    before = open(os.path.join(out, "results.jsonl"), "rb").read()
    assert main(["run", "--config", assets["config"], "--seed", SEED, "--out", out]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "no space left on device (" in err and "junit.xml" in err
    assert open(os.path.join(out, "results.jsonl"), "rb").read() == before


def test_corrupt_corpus_cases_are_skipped_logged_and_recorded(assets, tmp_path, capsys):
    corpus = tmp_path / "corpus"
    shutil.copytree(assets["bundle"], corpus / "good")
    shutil.copytree(assets["bundle"], corpus / "bad-sha")
    _swap(str(corpus / "bad-sha"), assets["other"])
    shutil.copytree(assets["bundle"], corpus / "bad-meta")
    (corpus / "bad-meta" / "meta.json").write_text("{")
    shutil.copytree(assets["bundle"], corpus / "bad-model")
    _meta(_write(str(corpus / "bad-model" / "model.onnx"), b"\x01" * 8), model_sha256=hashlib.sha256(
        b"\x01" * 8).hexdigest())
    cfg = str(tmp_path / "c.yaml")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(dict(BASE, corpus=str(corpus))))
    out = str(tmp_path / "o")
    assert main(["run", "--config", cfg, "--seed", "corpus", "--out", out]) == 0
    err = capsys.readouterr().err
    for name in ("bad-sha", "bad-meta", "bad-model"):
        assert f"skipped corpus/{name}: it cannot be loaded" in err, err
    skipped = json.load(open(os.path.join(out, "run.json")))["skipped"]
    assert set(skipped) == {"corpus/bad-sha", "corpus/bad-meta", "corpus/bad-model"}
    assert "model_sha256" in skipped["corpus/bad-sha"] and "meta.json" in skipped["corpus/bad-meta"]
    cases = [json.loads(line)["case"] for line in open(os.path.join(out, "results.jsonl"))]
    assert cases[0] == "corpus/good" and len(cases) == 2  # the good corpus case ran, then the batch
    summary = open(os.path.join(out, "summary.md")).read()
    assert "Saved cases that cannot be loaded" in summary and "corpus/bad-sha" in summary
    assert set(json.load(open(os.path.join(out, "verdict.json")))["unloadable"]) == set(skipped)


def test_a_saved_bundle_records_the_sha256_of_the_model_it_holds(assets):
    from dlgate.check import load_bundle, verify_bundle

    meta = json.load(open(os.path.join(assets["bundle"], "meta.json")))
    model = open(os.path.join(assets["bundle"], "model.onnx"), "rb").read()
    assert meta["model_sha256"] == hashlib.sha256(model).hexdigest()
    gen = json.load(open(os.path.join(assets["case"], "meta.json")))
    assert meta["sha256"] == gen["sha256"]  # the generated model's, kept as it was
    verify_bundle(assets["bundle"])
    assert load_bundle(assets["bundle"]).model == model


def test_every_backend_declares_exactly_the_options_it_reads():
    from dlgate.backends import registry

    for name in registry.names():
        cls = registry.load(name)
        src = open(sys.modules[cls.__module__].__file__).read()
        read = set(re.findall(r"options\.get\(\s*[\"'](\w+)[\"']", src))
        read |= set(re.findall(r"options\[\s*[\"'](\w+)[\"']\s*\]", src))
        assert set(cls.option_names) == read, (name, cls.option_names, read)
