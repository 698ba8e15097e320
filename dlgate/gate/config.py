"""Campaign configuration: YAML files in ``configs/``, validated on load.

Every key is declared once in ``FIELDS`` (:mod:`dlgate.gate.fields`) with its type, default and help text; the same
table validates files, applies command-line overrides and renders the config reference in
docs/configuration.md (``dlgate config --reference``). An unknown key, a wrong type or an unknown
backend is a :class:`ConfigError` naming the file, the key and what is allowed.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import re
import subprocess
from dataclasses import dataclass, field

import yaml

from dlgate.gate.fields import FIELDS, ConfigError, Field, type_name
from dlgate.gate.schema import validate
from dlgate.suggest import did_you_mean
from dlgate.tir.coverage import check_settings as check_coverage

#: The most a campaign file may hold; a larger one (or ``--config /dev/zero``) is refused unread.
MAX_CONFIG_BYTES = 1 << 20

_BY_NAME = {f.name: f for f in FIELDS}
#: Keys that change the journal and were added later, with the value that behaves as runs
#: made before them did: part of a run's fingerprint only when set otherwise.
_LATER_KEYS = (("findings_per_case", 1), ("restrict_to_support", False), ("extreme_share", 0.0), ("target_share", 0.8),
               ("invalid_share", 0.0), ("rewrite_share", 0.0), ("relax_share", 0.0), ("tir_share", 0.0),
               ("tir_n_max", 4), ("tir_chains", 1), ("tir_slow_margin", 2.0), ("tir_slow_gates", False),
               ("tir_coverage_library", None), ("tir_coverage_objects", None))


@dataclass
class Campaign:
    campaign: str = "default"
    models: int = 100
    min_nodes: int = 1
    max_nodes: int = 10
    opset: int | None = None
    max_opset: int | None = None
    dynamic_share: float = 0.25
    extreme_share: float = 0.2
    target_share: float = 0.8
    invalid_share: float = 0.0
    rewrite_share: float = 0.0
    relax_share: float = 0.0
    tir_share: float = 0.0
    tir_n_max: int = 4
    tir_chains: int = 1
    tir_slow_margin: float = 2.0
    tir_slow_gates: bool = False
    tir_coverage_library: str | None = None
    tir_coverage_objects: str | None = None
    guidance: bool = True
    coverage_state: str | None = None
    operators: list | None = None
    dtypes: list | None = None
    support: list = field(default_factory=list)
    restrict_to_support: bool | str = False
    backends: list = field(default_factory=lambda: ["tvm", "onnxruntime"])
    reference: str = "torch"
    tolerances: dict = field(default_factory=dict)
    timeout_s: float = 60.0
    memory_mb: int = 4096
    search_steps: int = 24
    crosscheck: bool = True
    confirm_runs: int = 1
    baseline: str | None = None
    corpus: str | None = None
    base: dict | None = None
    reduce: bool = True
    reduce_seconds: float = 60.0
    reuse_reductions: bool = True
    base_first: bool = True
    reduce_pre_existing: bool = False
    findings_per_case: int = 4
    issues: dict | None = None
    fail_on: str = "new"
    budget: float | None = None
    source: str = "<defaults>"  # the file it came from

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("source")
        return d

    def fingerprint(self) -> str:
        """What decides the batch's content: a resumed run must match it."""
        keys = ("campaign", "models", "min_nodes", "max_nodes", "opset", "max_opset", "dynamic_share", "guidance", "operators", "dtypes", "support", "backends",
                "reference", "tolerances", "search_steps", "crosscheck")
        doc = {k: getattr(self, k) for k in keys}
        # keys a run before them behaved as at these values: its fingerprint stays the same
        doc.update({k: getattr(self, k) for k, old in _LATER_KEYS if getattr(self, k) != old})
        blob = json.dumps(doc, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _check(f: Field, value, where: str):
    """The value converted to the field's type, or a ConfigError for what the schema
    (``schema.validate``, run first) cannot say: NUL characters, NaN, ``1.0`` for an integer."""
    def bad(expected: str):
        return ConfigError(f"{where}: expected {expected}, got {type_name(value)} {value!r}")

    if value is None:
        return None
    if f.kind == "str":
        if "\0" in value:
            raise ConfigError(f"{where}: a NUL character in {value!r}")
        return value
    if f.kind in ("int", "float"):
        if f.kind == "int" and not isinstance(value, int):  # JSON Schema counts 1.0 an integer
            raise bad("an integer")
        if not math.isfinite(value):  # .nan passes a bound (nan < min is false)
            raise bad("a finite number")
        return int(value) if f.kind == "int" else float(value)
    if f.kind == "list[str]":
        if any("\0" in x for x in value):
            raise bad("a list of strings")
        return list(value)
    if f.kind == "backends":
        return [x if isinstance(x, str) else
                {k: x[k] for k in ("name", "device", "opt_level", "options", "optional") if k in x} for x in value]
    if f.kind == "issues":
        return {"repo": value["repo"], "label": value.get("label", "dlgate"),
                "max_per_run": value.get("max_per_run", 5), "api_url": value.get("api_url", "https://api.github.com"),
                "memory_safety": value.get("memory_safety", "private"),
                "bisect_releases": value.get("bisect_releases", False)}
    if f.kind == "dict":
        return _tolerances(value, where)
    if f.kind == "base":
        env = value.get("env") or {}
        for k, v in env.items():
            if "\0" in k or "\0" in str(v):
                raise ConfigError(f"{where}.env: {k!r}: not a valid environment variable (name or value)")
        return {"python": value["python"], "env": {k: str(v) for k, v in sorted(env.items())}}
    return value  # bool, bool/auto: the schema checked them


def is_optional(entry) -> bool:
    """Whether a ``backends`` entry may be skipped where it cannot run (``optional: true``,
    or a string ending in ``?``, e.g. ``tvm:cuda?`` for a GPU backend in a campaign that
    also runs on CPU runners). Every other backend, and the reference, must run: one that
    cannot is a failed gate, never a silent skip."""
    return bool(entry.get("optional")) if isinstance(entry, dict) else entry.endswith("?")


def backend_spec(entry):
    """The BackendSpec of a ``backends`` entry (a string or a mapping)."""
    from dlgate.backends.base import BackendSpec  # local: imports torch; off the CLI start-up

    if isinstance(entry, str):
        return BackendSpec.parse(entry.removesuffix("?"))

    def freeze(v):
        if isinstance(v, list):
            return tuple(freeze(i) for i in v)
        if isinstance(v, dict):
            return tuple(sorted((k, freeze(i)) for k, i in v.items()))
        return v

    opts = tuple(sorted((k, freeze(v)) for k, v in (entry.get("options") or {}).items()))
    return BackendSpec(entry["name"], entry.get("device", "cpu"), entry.get("opt_level"), opts)


def _tolerances(value: dict, where: str) -> dict:
    out = {}
    for k in sorted(value):  # dtypes and [rtol, atol] pairs: checked by the schema
        if not all(math.isfinite(x) for x in value[k]):
            raise ConfigError(f"{where}.{k}: expected [rtol, atol], two finite non-negative numbers, got {value[k]!r}")
        out[k] = (float(value[k][0]), float(value[k][1]))
    return out


def check_backend(entry, known=None):
    """The BackendSpec of a ``backends`` entry (or ``--backend`` text) once its backend,
    device, optimization level and options are known to exist; a ValueError otherwise, in
    one line with what is allowed and, for a mistyped name, device or level, the nearest
    one (``known``: the installed backends' names, default all of them)."""
    from dlgate.backends.registry import check, load, names  # local: imports torch; off the CLI start-up

    spec = backend_spec(entry)  # ValueError for a malformed NAME[:DEVICE][@LEVEL]
    known = sorted(names() if known is None else known)
    if spec.name not in known and ":" not in spec.name:  # module:Class names load below
        hint = did_you_mean(spec.name, known)
        raise ValueError(f"unknown backend {spec.name!r}{hint}{' allowed: ' if hint else '; allowed: '}"
                         f"{', '.join(known)}")
    try:
        cls = load(spec.name)
    except KeyError as e:
        raise ValueError(e.args[0]) from None
    for what, value, allowed in (("device", spec.device, cls.devices),
                                 ("optimization level", spec.opt_level, cls.opt_levels)):
        if value is not None and value not in allowed:
            hint = did_you_mean(value, allowed)
            raise ValueError(f"{spec.name} has no {what} {value!r}{hint}{' allowed: ' if hint else '; allowed: '}"
                             f"{', '.join(allowed)}")
    try:
        check(spec)  # the options
    except KeyError as e:
        raise ValueError(e.args[0]) from None
    return spec


def _check_backend(entry, where: str, backends: dict) -> None:
    try:
        check_backend(entry, backends)
    except ValueError as e:
        raise ConfigError(f"{where}: {e.args[0]}") from None


def _known_backends() -> dict:
    from dlgate.backends.registry import load, names  # local: imports torch; off the CLI start-up

    out = {}
    for n in names():
        try:
            out[n] = load(n)
        except Exception:  # a broken plug-in is not a config error unless the config names it
            continue
    return out


def build(values: dict, source: str = "<defaults>", flags: dict | None = None) -> Campaign:
    """A validated Campaign from a mapping (a parsed file plus overrides). ``flags``: the
    keys the command line set, each with the flag as the user typed it (``--fail-on``; for
    ``backends``, one ``--backend TEXT`` per entry): an error in one of them names the flag,
    not the file or the embedded default it overrode."""
    try:
        return _build(values, source)
    except ConfigError as e:
        raise _blamed(e, source, flags or {}) from None


def _build(values: dict, source: str) -> Campaign:
    if not isinstance(values, dict):
        raise ConfigError(f"{source}: expected a mapping of settings at the top level, got {type_name(values)}")
    validate(values, source)  # keys, types, ranges, choices; "did you mean" for a mistyped key
    kw = {key: _check(_BY_NAME[key], value, f"{source}: {key}") for key, value in values.items()}
    cfg = Campaign(**kw, source=source)
    if cfg.min_nodes > cfg.max_nodes:
        raise ConfigError(f"{source}: min_nodes ({cfg.min_nodes}) exceeds max_nodes ({cfg.max_nodes})")
    if not cfg.backends:
        raise ConfigError(f"{source}: backends: name at least one backend under test")
    known = _known_backends()
    for i, b in enumerate(cfg.backends):
        _check_backend(b, f"{source}: backends[{i}]", known)
    _check_backend(cfg.reference, f"{source}: reference", known)
    why = check_coverage(cfg.tir_coverage_library, cfg.tir_coverage_objects)
    if why:
        raise ConfigError(f"{source}: {why}")
    for i, b in enumerate(cfg.support):
        _check_backend(b, f"{source}: support[{i}]", known)
    if cfg.dtypes is not None:
        from dlgate import dtypes as dt  # local: imports torch; off the CLI start-up

        for i, t in enumerate(cfg.dtypes):
            if t not in dt.ALL:
                raise ConfigError(f"{source}: dtypes[{i}]: unknown dtype {t!r}; allowed: {', '.join(dt.ALL)}")
    if cfg.operators is not None:
        from dlgate.ops.registry import all_specs  # local: imports torch; off the CLI start-up

        specs = all_specs()
        for i, op in enumerate(cfg.operators):
            if op not in specs:
                raise ConfigError(f"{source}: operators[{i}]: unknown operator {op!r}; see `dlgate ops`")
    return cfg



#: The setting an error is about, at the start of ``SOURCE: WHERE: ...``: a key, an index.
_WHERE = re.compile(r"([a-z_]+)(?:\[(\d+)\])?((?:\.[a-z_]+)*)(?=:)")
_BOUNDS = re.compile(r"min_nodes \((\d+)\) exceeds max_nodes \((\d+)\)")


def _blamed(e: ConfigError, source: str, flags: dict) -> ConfigError:
    """``e`` said of the flag that set the setting it is about (see :func:`build`), else ``e``."""
    msg = str(e)
    if not msg.startswith(f"{source}: "):
        return e
    bounds = _BOUNDS.fullmatch(msg[len(source) + 2:])
    if bounds and {"min_nodes", "max_nodes"} & set(flags):  # two settings, one or both from flags
        said = [f"{flags[k]} {n}" if k in flags else f"{k} ({n}) of {source}"
                for k, n in zip(("min_nodes", "max_nodes"), bounds.groups())]
        return ConfigError(f"{said[0]} exceeds {said[1]}")
    m = _WHERE.match(msg[len(source) + 2:])
    if m is None or m.group(1) not in flags:
        return e
    flag, rest = flags[m.group(1)], msg[len(source) + 2 + m.end():]
    if isinstance(flag, (list, tuple)):
        k = int(m.group(2)) if m.group(2) is not None else None
        if k is None or k >= len(flag):
            return e
        flag = flag[k]
    return ConfigError(f"{flag}{rest}")


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, str) and key in seen:
                    raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}",
                                                            key_node.start_mark)
                seen.add(key)
        return super().construct_mapping(node, deep)


def load(path: str, overrides: dict | None = None, flags: dict | None = None) -> Campaign:
    """Read, validate and override a campaign file. ``overrides`` (from the command line)
    go through the same validation and win over the file; an error in one names its flag
    (``flags``, see :func:`build`)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)  # bounded: --config /dev/zero must not eat the memory
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        raise ConfigError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES >> 20} MiB; not a campaign file")
    if b"\0" in data:
        raise ConfigError(f"{path}: a binary file (NUL bytes), not a YAML campaign file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})") from None
    try:
        values = yaml.load(text, Loader=_Loader)  # a SafeLoader that also refuses duplicate keys
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ConfigError(f"{path}: not valid YAML{at}: {getattr(e, 'problem', None) or e}") from None
    except (RecursionError, ValueError) as e:  # nesting too deep; an integer of 5,000 digits, a date of month 13
        why = "nested too deeply" if isinstance(e, RecursionError) else str(e).splitlines()[0]
        raise ConfigError(f"{path}: not valid YAML: {why}") from None
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: expected a mapping of settings at the top level, got {type_name(values)}")
    values = dict(values)
    for k, v in (overrides or {}).items():
        if v is not None:
            values[k] = v
    return build(values, path, flags)


#: The campaign ``dlgate run`` uses without ``--config``: a short gate run of the installed
#: TVM against the reference on CPU.
EMBEDDED_DEFAULT = {"campaign": "default", "models": 20, "max_nodes": 10, "backends": ["tvm"], "reference": "torch"}


def embedded_default(overrides: dict | None = None, flags: dict | None = None) -> Campaign:
    values = dict(EMBEDDED_DEFAULT)
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return build(values, "<embedded default>", flags)


def reference_markdown() -> str:
    """The config reference, as a Markdown table (docs/configuration.md embeds it)."""
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for f in FIELDS:
        default = "null" if f.default is None else json.dumps(f.default)
        rows.append(f"| `{f.name}` | {f.kind} | `{default}` | {f.help} |")
    return "\n".join(rows) + "\n"


def resolve_root(seed: str | None, commit: str | None, cwd: str = ".") -> tuple:
    """(root text, where it came from): ``--seed``, else ``--commit``, else ``GITHUB_SHA``,
    else ``git rev-parse HEAD``."""
    if seed:
        return seed, "--seed"
    if commit:
        return commit, "--commit"
    sha = os.environ.get("GITHUB_SHA")
    if sha:
        return sha, "GITHUB_SHA"
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        out = None
    if out is not None and out.returncode == 0 and out.stdout.strip():
        return out.stdout.strip(), "git rev-parse HEAD"
    raise ConfigError("no seed: pass --commit SHA or --seed TEXT, set GITHUB_SHA, or run inside a git checkout")
