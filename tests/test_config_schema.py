"""The campaign file's JSON Schema (dlgate/gate/schema.py): derived from config.FIELDS, valid
per the draft 2020-12 metaschema, committed as docs/campaign.schema.json, and the first check of
every campaign, whose errors are one line naming the file and the key (with "did you mean")."""
import glob
import json
import os
import subprocess
import sys

import pytest
import yaml
from jsonschema import Draft202012Validator

from dlgate.cli import main
from dlgate.gate import config as C
from dlgate.gate import schema as S

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMITTED = os.path.join(REPO, "docs", "campaign.schema.json")


def test_the_schema_is_valid_per_the_metaschema_and_follows_fields():
    s = S.schema()
    Draft202012Validator.check_schema(s)  # raises SchemaError if not
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema" and s["$id"] and s["title"]
    assert s["additionalProperties"] is False and list(s["properties"]) == [f.name for f in C.FIELDS]
    for f in C.FIELDS:
        p = s["properties"][f.name]
        assert p["description"] == f.help and p["default"] == f.default, f.name
        if f.min is not None:
            assert p["minimum"] == f.min, f.name
        if f.max is not None:
            assert p["maximum"] == f.max, f.name
        if f.choices:
            assert set(f.choices) <= set(p["enum"]), f.name
        types = p.get("type", [])
        assert (None in p.get("enum", []) or "null" in types) == f.optional, f.name
    # the defaults of every key are a valid campaign, by the schema and by load()
    defaults = {f.name: f.default for f in C.FIELDS}
    Draft202012Validator(s).validate(defaults)
    assert C.build(defaults).fail_on == "new"


def test_the_schema_text_is_stable():
    assert S.schema_json() == S.schema_json()
    assert json.loads(S.schema_json()) == S.schema()


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(REPO, "configs", "*.yaml"))))
def test_every_shipped_config_validates(path):
    with open(path) as f:
        doc = yaml.safe_load(f)
    assert sorted(Draft202012Validator(S.schema()).iter_errors(doc), key=str) == []
    assert C.load(path).source == path


def test_the_committed_schema_is_the_generated_one():
    with open(COMMITTED) as f:
        committed = f.read()
    assert committed == S.schema_json(), "regenerate it: dlgate config --schema > docs/campaign.schema.json"
    out = subprocess.run([sys.executable, "-m", "dlgate", "config", "--schema"], capture_output=True,
                         text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == committed
    assert json.loads(out.stdout)["$id"] == S.SCHEMA_ID


def _write(tmp_path, doc, name="bad.yaml"):
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return str(p)


@pytest.mark.parametrize("doc, words, absent", [
    # unknown key, with a suggestion; and without one (nothing close): the allowed keys
    ({"modle": 3}, ["unknown key 'modle'; did you mean 'models'?", "allowed: campaign, models"], []),
    ({"zzz": 1}, ["unknown key 'zzz'; allowed: campaign, models"], ["did you mean"]),
    ("1: 2\n", ["unknown key 1; allowed:"], ["did you mean"]),
    # wrong type, out of range, bad choice, null where not optional
    ({"models": "many"}, ["models: expected an integer, got a string 'many'"], []),
    ({"guidance": "yes"}, ["guidance: expected true or false, got a string 'yes'"], []),
    ({"max_nodes": 500}, ["max_nodes: 500 is outside the allowed range 1..200"], []),
    ({"extreme_share": -0.5}, ["extreme_share: -0.5 is outside the allowed range 0..1"], []),
    ({"fail_on": "nwe"}, ["fail_on: 'nwe' is not one of new, any, none; did you mean 'new'?"], []),
    ({"restrict_to_support": "sometimes"}, ["restrict_to_support: expected true, false or auto"], []),
    ({"timeout_s": None}, ["timeout_s: expected a number, got null"], []),
    ({"campaign": None}, ["campaign: expected a non-empty string, got null"], []),
    ({"corpus": 3}, ["corpus: expected a non-empty string or null, got an integer 3"], []),
    ({"operators": ["Relu", 7]}, ["operators[1]: expected a non-empty string, got an integer 7"], []),
    # fixed keys of nested mappings: backends, issues, base, tolerances
    ({"backends": [{"name": "tvm", "opt_levle": "zero"}]},
     ["backends[0].opt_levle: unknown key; did you mean 'opt_level'?", "allowed: name, device"], []),
    ({"backends": ["onnxruntime", {"device": "cpu"}]}, ["backends[1].name: missing; expected a backend name"], []),
    ({"backends": [{"name": "tvm", "optional": "yes"}]}, ["backends[0].optional: expected true or false"], []),
    ({"backends": [3]}, ["backends[0]: expected `NAME[:DEVICE][@LEVEL]` or a mapping, got an integer 3"], []),
    ({"issues": {"repo": "acme/tvm", "lable": "x"}}, ["issues.lable: unknown key; did you mean 'label'?"], []),
    ({"issues": {"label": "x"}}, ["issues.repo: missing; expected OWNER/NAME"], []),
    ({"issues": {"repo": "tvm"}}, ["issues.repo: expected OWNER/NAME, got a string 'tvm'"], []),
    ({"issues": {"repo": "a/b", "api_url": "ftp://x"}}, ["issues.api_url: expected an http(s) URL"], []),
    ({"issues": {"repo": "a/b", "memory_safety": "secret"}}, ["issues.memory_safety: expected private or public"],
     []),
    ({"base": {"pyton": "/usr/bin/python3"}}, ["base.pyton: unknown key; did you mean 'python'?"], []),
    ({"base": {"python": "/usr/bin/python3", "env": {"A=B": "1"}}}, ["base.env: expected a mapping of env"], []),
    ("base: {python: /usr/bin/python3, env: {1: x}}\n", ["base.env: expected a mapping of env"], []),
    ({"tolerances": {"flaot32": [1, 1]}},
     ["tolerances.flaot32: unknown dtype; did you mean 'float32'?", "allowed: float16, float32, float64"], []),
    ({"tolerances": {"float32": [1e-2, -1]}}, ["tolerances.float32: expected [rtol, atol], two finite non-"], []),
    # what only Python checks, after the schema
    ({"models": 2.0}, ["models: expected an integer, got a number 2.0"], []),
    ({"timeout_s": float("inf")}, ["timeout_s: expected a finite number, got a number inf"], []),
    ({"reduce_seconds": float("nan")}, ["reduce_seconds: expected a finite number"], []),
    ({"min_nodes": 7, "max_nodes": 3}, ["min_nodes (7) exceeds max_nodes (3)"], []),
    ({"dtypes": ["float32", "float8"]}, ["dtypes[1]: unknown dtype 'float8'"], []),
])
def test_each_error_is_one_line_with_status_2_naming_the_key(tmp_path, capsys, doc, words, absent):
    p = _write(tmp_path, doc)
    assert main(["config", p]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith(f"dlgate config: {p}: "), err
    for w in words:
        assert w in err, (w, err)
    for w in absent:
        assert w not in err, (w, err)


def test_every_key_mistyped_gets_its_suggestion(tmp_path):
    for f in C.FIELDS:
        i = len(f.name) // 2
        typo = f.name[:i - 1] + f.name[i] + f.name[i - 1] + f.name[i + 1:]  # two letters swapped
        if typo == f.name:
            continue
        with pytest.raises(C.ConfigError) as e:
            C.build({typo: f.default})
        assert f"unknown key {typo!r}; did you mean {f.name!r}?" in str(e.value)


def test_the_command_exits_2_with_one_line(tmp_path):
    p = _write(tmp_path, {"backends": [{"nmae": "tvm"}]})
    out = subprocess.run([sys.executable, "-m", "dlgate", "config", p], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == f"dlgate config: {p}: backends[0].nmae: unknown key; did you mean 'name'? allowed: " \
                         "name, device, opt_level, options, optional\n"


def test_command_line_overrides_go_through_the_schema(tmp_path):
    p = _write(tmp_path, {"models": 3, "backends": ["onnxruntime"]}, "ok.yaml")
    assert C.load(p, {"models": 9}).models == 9
    with pytest.raises(C.ConfigError, match=r"ok.yaml: max_nodes: 0 is outside the allowed range 1..200"):
        C.load(p, {"max_nodes": 0})


def test_a_file_with_the_editor_schema_comment_loads(tmp_path, capsys):
    p = _write(tmp_path, "# yaml-language-server: $schema=../docs/campaign.schema.json\n"
                         "campaign: pr\nmodels: 5\nbackends: [onnxruntime]\nopset: null\nissues: null\n", "pr.yaml")
    cfg = C.load(p)
    assert cfg.campaign == "pr" and cfg.models == 5 and cfg.opset is None and cfg.issues is None
    assert main(["config", p]) == 0
    assert json.loads(capsys.readouterr().out)["models"] == 5


def test_nested_values_are_normalized_after_the_schema(tmp_path):
    cfg = C.build({"backends": [{"name": "onnxruntime", "options": {"intra_op_threads": 2}}],
                   "issues": {"repo": "acme/tvm"}, "tolerances": {"float32": [1, 0]},
                   "base": {"python": "/usr/bin/python3", "env": {"B": 2, "A": "x"}}})
    assert cfg.backends == [{"name": "onnxruntime", "options": {"intra_op_threads": 2}}]
    assert cfg.issues == {"repo": "acme/tvm", "label": "dlgate", "max_per_run": 5, "api_url": "https://api.github.com",
                          "memory_safety": "private", "bisect_releases": False}
    assert C.build({"issues": {"repo": "acme/tvm", "memory_safety": "public"}}).issues["memory_safety"] == "public"
    assert C.build({"issues": {"repo": "acme/tvm", "bisect_releases": "onnxruntime"}}).issues["bisect_releases"] == \
        "onnxruntime"
    with pytest.raises(C.ConfigError, match="bisect_releases"):
        C.build({"issues": {"repo": "acme/tvm", "bisect_releases": "no spaces allowed"}})
    assert cfg.tolerances == {"float32": (1.0, 0.0)}
    assert cfg.base == {"python": "/usr/bin/python3", "env": {"A": "x", "B": "2"}}
