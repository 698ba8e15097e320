"""Secrets stay out of the compiler under test and out of everything dlgate writes, prints or
sends: workers start from an environment without them (dlgate.secrets.scrubbed_env), and
whatever a worker says is redacted (dlgate.secrets.redact) before dlgate keeps it."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml

from dlgate import secrets as S
from dlgate.backends.base import BackendSpec, Model
from dlgate.case import make_case
from dlgate.exec import worker as W
from dlgate.gate.journal import json_line, write_json
from dlgate.graph.generator import GenConfig, Generator
from tests.github_fake import FakeGitHub

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "ghs_SecretsTestToken0123456789abcdefXYZ"
#: A secret of no recognizable shape: only its variable's name says it is one.
PASSWORD = "Corr3ct-Horse-Battery-Staple"
PRINTS_ENV = BackendSpec("tests.fake_backends:PrintsEnv")


# ---------------------------------------------------------------- the policy


def test_scrubbed_env_drops_every_kind_of_secret_and_keeps_the_rest():
    env = {"GITHUB_TOKEN": TOKEN, "GH_TOKEN": "x" * 20, "GH_ENTERPRISE_TOKEN": "y" * 20,
           "ACTIONS_RUNTIME_TOKEN": "rt", "ACTIONS_RUNTIME_URL": "https://pipelines.example/",
           "ACTIONS_ID_TOKEN_REQUEST_URL": "https://oidc.example/", "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc",
           "ACTIONS_CACHE_URL": "https://cache.example/", "ACTIONS_RESULTS_URL": "https://results.example/",
           "AWS_SECRET_ACCESS_KEY": "aws", "AWS_ACCESS_KEY_ID": "AKIA", "OPENAI_API_KEY": "k", "DB_PASSWORD": "p",
           "PGPASSWORD": "p", "GOOGLE_APPLICATION_CREDENTIALS": "/k.json", "my_client_secret": "s",
           "INPUT_GITHUB-TOKEN": TOKEN,
           # listed by name
           "DLGATE_SECRET_VARS": " LICENSE_SERVER , VENDOR_LOGIN", "LICENSE_SERVER": "lic", "VENDOR_LOGIN": "v",
           # a token under an innocent name, and a copy of a secret's value under another name
           "SOME_VAR": "ghp_" + "A" * 36, "ALIAS": PASSWORD, "MY_PASSWORD": PASSWORD,
           # kept
           "PATH": "/usr/bin", "HOME": "/home/u", "PYTHONPATH": "/src", "TOKENIZERS_PARALLELISM": "false",
           "GITHUB_SHA": "a1" * 20, "GITHUB_API_URL": "https://api.github.com", "TVM_LIBRARY_PATH": "/opt/tvm"}
    kept = S.scrubbed_env(env)
    assert kept == {"PATH": "/usr/bin", "HOME": "/home/u", "PYTHONPATH": "/src", "TOKENIZERS_PARALLELISM": "false",
                    "GITHUB_SHA": "a1" * 20, "GITHUB_API_URL": "https://api.github.com",
                    "TVM_LIBRARY_PATH": "/opt/tvm", "DLGATE_SECRET_VARS": " LICENSE_SERVER , VENDOR_LOGIN"}
    assert S.TOKEN_VAR == "GITHUB_TOKEN"  # what dlgate.github.client reads
    assert S.secret_values({"GITHUB_TOKEN": TOKEN, "DB_PASSWORD": "short", "PATH": "/usr/bin/long/enough"}) == [TOKEN]


def test_redact_replaces_secret_values_and_token_shapes(monkeypatch):
    monkeypatch.setenv("DLGATE_TEST_PASSWORD", PASSWORD)
    monkeypatch.setenv("DLGATE_TEST_SHORT_TOKEN", "abc")  # too short to redact: it would blank out ordinary text
    text = (f"pw={PASSWORD} abc classic ghp_{'a' * 36} app ghs_{'B' * 36} fine-grained github_pat_11ABCDEFG0_"
            f"{'x' * 59} oauth gho_{'c' * 36} ghq_notatoken ghp_short")
    assert S.redact(text) == "pw=*** abc classic *** app *** fine-grained *** oauth *** ghq_notatoken ghp_short"
    S.remember("explicit-token-value")
    assert S.redact("an explicit-token-value!") == "an ***!"
    # a secret seen once stays a secret after its variable is gone
    monkeypatch.delenv("DLGATE_TEST_PASSWORD")
    assert S.redact(PASSWORD) == "***"
    nested = {"a": [PASSWORD, 1, 2.5, None, True, (PASSWORD, "ok")], PASSWORD: {"b": f"x{PASSWORD}y"}}
    assert S.redact_obj(nested) == {"a": ["***", 1, 2.5, None, True, ("***", "ok")], "***": {"b": "x***y"}}
    assert nested["a"][0] == PASSWORD  # a copy: the caller's object is untouched


def test_the_journal_writers_redact(tmp_path, monkeypatch):
    monkeypatch.setenv("DLGATE_TEST_PASSWORD", PASSWORD)
    rec = {"case": "c1", "verdicts": [{"detail": f"saw {PASSWORD} and {TOKEN}", "n": 3}]}
    line = json_line(rec)
    assert PASSWORD not in line and TOKEN not in line and json.loads(line)["verdicts"][0] == {
        "detail": "saw *** and ***", "n": 3}
    write_json(str(tmp_path / "v.json"), rec)
    text = (tmp_path / "v.json").read_text()
    assert PASSWORD not in text and TOKEN not in text and "saw *** and ***" in text


# ---------------------------------------------------------------- workers


@pytest.fixture(scope="module")
def model():
    case = make_case(Generator(GenConfig(max_nodes=3, dtypes=("float32",))), "s", "s", 0)
    return Model(case.model_bytes, case.graph)


def _feeds(model):
    g = model.graph
    return [np.zeros(g.tensors[t].shape, g.tensors[t].dtype) for t in g.inputs]


@pytest.mark.parametrize("base", [False, True], ids=["head", "base-interpreter"])
def test_a_worker_starts_without_the_secrets_and_its_reply_is_redacted(model, tmp_path, monkeypatch, base):
    """The worker's environment lacks the token (and the runner's credentials) whether it is
    spawned (head) or started in another interpreter with base.env merged in (head versus
    base); a secret it reads elsewhere (a file) is redacted from its error and log tail; and
    this process keeps its own environment."""
    dump, leak = tmp_path / "env.json", tmp_path / "leak.txt"
    leak.write_text(f"{TOKEN} {PASSWORD}")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("ACTIONS_RUNTIME_TOKEN", "runtime-" + PASSWORD)
    monkeypatch.setenv("DLGATE_TEST_PASSWORD", PASSWORD)
    monkeypatch.setenv("PRINTS_ENV_DUMP", str(dump))
    monkeypatch.setenv("PRINTS_ENV_FILE", str(leak))
    monkeypatch.chdir(REPO)  # the base interpreter imports tests.fake_backends from here
    pool = W.Pool(timeout_s=60, python=sys.executable if base else None,
                  env={"BASE_ONLY": "1", "GH_TOKEN": TOKEN} if base else None)
    with pool:
        out = pool.execute(PRINTS_ENV, model, _feeds(model))
    assert out.status == W.RUN_ERROR, out.error
    seen = json.loads(dump.read_text())
    assert not {"GITHUB_TOKEN", "GH_TOKEN", "ACTIONS_RUNTIME_TOKEN", "DLGATE_TEST_PASSWORD"} & set(seen)
    assert TOKEN not in json.dumps(seen) and PASSWORD not in json.dumps(seen)
    assert seen["PRINTS_ENV_FILE"] == str(leak) and ("BASE_ONLY" in seen) is base
    text = json.dumps(out.error)
    assert TOKEN not in text and PASSWORD not in text
    assert out.error["message"].startswith("environment:\nfile: *** ***") and "file: *** ***" in out.error["log"]
    assert os.environ["GITHUB_TOKEN"] == TOKEN and os.environ["DLGATE_TEST_PASSWORD"] == PASSWORD


# ---------------------------------------------------------------- the gate, end to end


def test_the_token_reaches_neither_the_compiler_nor_any_output_when_the_gate_publishes(tmp_path):
    """`dlgate run` publishing through the campaign's `issues:` key, with GITHUB_TOKEN set, runs
    a compiler that prints its environment and fails with it: the token (and another secret)
    appears in no file of the output folder, not in dlgate's output, and in no request body
    GitHub received, while the issues are published with the token."""
    leak = tmp_path / "leak.txt"
    leak.write_text(f"read from elsewhere: {TOKEN} {PASSWORD}")
    out = tmp_path / "out"
    with FakeGitHub(token=TOKEN) as gh:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(yaml.safe_dump({
            "campaign": "leak", "models": 2, "max_nodes": 3, "dtypes": ["float32"], "crosscheck": False,
            "operators": ["Sigmoid", "Add", "Relu"], "backends": [{"name": "tests.fake_backends:PrintsEnv"}],
            "reduce_seconds": 20, "issues": {"repo": "acme/tvm", "api_url": gh.url}}))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "PYTHONPATH": REPO,
               "GITHUB_TOKEN": TOKEN, "DLGATE_TEST_PASSWORD": PASSWORD, "PRINTS_ENV_FILE": str(leak),
               "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/tvm", "GITHUB_RUN_ID": "77"}
        res = subprocess.run([sys.executable, "-m", "dlgate", "run", "--config", str(cfg), "--seed", "leak",
                              "--out", str(out), "--no-progress"], env=env, cwd=REPO, capture_output=True, text=True,
                             timeout=600)
        assert res.returncode == 1, res.stdout + res.stderr
        assert gh.issues, res.stdout + res.stderr  # published: the token reached the client
        assert any(h.get("Authorization") == f"Bearer {TOKEN}" for _, _, h in gh.requests)
        bodies = [b for m, _, b in gh.bodies if m == "POST"]
    for b in bodies:
        assert TOKEN not in b and PASSWORD not in b and "GITHUB_TOKEN=" not in b
    assert any("environment:" in b and "file: read from elsewhere: *** ***" in b for b in bodies)
    for text in (res.stdout, res.stderr):
        assert TOKEN not in text and PASSWORD not in text
    files = [p for p in glob.glob(os.path.join(out, "**", "*"), recursive=True) if os.path.isfile(p)]
    names = {os.path.basename(p) for p in files}
    assert {"results.jsonl", "verdict.json", "junit.xml", "summary.md", "repro.py", "repro.json"} <= names, names
    seen_env = False
    for path in files:
        data = open(path, "rb").read()
        assert TOKEN.encode() not in data and PASSWORD.encode() not in data, path
        assert b"GITHUB_TOKEN=" not in data and b"DLGATE_TEST_PASSWORD=" not in data, path  # never in its env
        seen_env |= b"PRINTS_ENV_FILE=" in data
    assert seen_env, "the compiler's environment printout reached the reports"
