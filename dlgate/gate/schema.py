"""The campaign file's JSON Schema, derived from ``config.FIELDS``, and validation against it.

``schema()`` turns the FIELDS table (kind, default, help, min/max, choices, optional) into a
JSON Schema (draft 2020-12): ``dlgate config --schema`` prints it and ``docs/campaign.schema.json``
holds a copy, so an editor (the YAML language server) completes and checks campaign files.
``validate()`` checks a parsed file with ``jsonschema`` and turns the most relevant error into
one :class:`~dlgate.gate.config.ConfigError` line naming the file, the key and what is allowed,
with a "did you mean" for a mistyped key or choice. What a schema cannot say (backend names
resolving to installed backends, known operators and dtypes, finite numbers, NUL characters,
``min_nodes <= max_nodes``) is checked in ``config`` after it.
"""
from __future__ import annotations

import functools
import json
import math
import re

from dlgate.gate import config as C

DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: The schema's identifier; it changes only when the format of campaign files does.
SCHEMA_ID = "urn:dlgate:campaign"

_BACKEND_KEYS = {
    "name": ({"type": "string", "minLength": 1}, "Backend name (`dlgate backends`) or `module:Class`."),
    "device": ({"type": "string"}, "Device, e.g. `cpu` or `cuda` (default `cpu`)."),
    "opt_level": ({"type": "string"}, "Optimization level name (`dlgate backends` lists each backend's)."),
    "options": ({"type": "object"}, "Backend options, e.g. `{intra_op_threads: 2}`; each backend checks its own."),
    "optional": ({"type": "boolean"}, "Skip this backend, with its reason, where it cannot start."),
}
_ISSUES_KEYS = {
    "repo": ({"type": "string", "pattern": "^[^/]+/[^/]+$"}, "The repository issues are opened in, `OWNER/NAME`."),
    "label": ({"type": "string", "minLength": 1, "default": "dlgate"}, "Label of dlgate's issues."),
    "max_per_run": ({"type": "integer", "minimum": 0, "default": 5}, "Most issues one run opens."),
    "api_url": ({"type": "string", "pattern": "^https?://", "default": "https://api.github.com"},
                "GitHub API base URL (GitHub Enterprise: `https://HOST/api/v3`)."),
    "memory_safety": ({"enum": ["private", "public"], "default": "private"},
                      "Where a crash that may be a memory-safety bug goes: `private`, GitHub's private vulnerability "
                      "reporting (a notice in the log and step summary where the repository takes none), or "
                      "`public`, an issue like any other failure."),
    "bisect_releases": ({"type": ["boolean", "string"], "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]*$", "default": False},
                        "Before opening an issue, find its regression range among the compiler's published releases "
                        "(`dlgate bisect-releases`: the newest release without the bug, the oldest with it), quoted in "
                        "the issue: `true` for the backend's package, a package name, or `false` (off)."),
}
_BASE_KEYS = {
    "python": ({"type": "string", "minLength": 1}, "Interpreter of the environment that holds the base build."),
    "env": ({"type": ["object", "null"], "propertyNames": {"type": "string", "minLength": 1, "pattern": "^[^=]*$"},
             "additionalProperties": {"type": ["string", "number"]}},
            "Environment variables set for the base build's workers."),
}

#: What a value at these places must be, in words (``*`` is any list index or mapping key);
#: a value error at or below one of them is reported there in these words.
_EXPECTED = {
    "backends": "a list of backends",
    "backends[*]": "`NAME[:DEVICE][@LEVEL]` or a mapping",
    "backends[*].name": "a backend name",
    "tolerances.*": "[rtol, atol], two finite non-negative numbers",
    "issues": "a mapping with repo (and label, max_per_run, api_url, memory_safety, bisect_releases)",
    "issues.repo": "OWNER/NAME",
    "issues.label": "a non-empty string",
    "issues.max_per_run": "a non-negative integer",
    "issues.api_url": "an http(s) URL",
    "issues.memory_safety": "private or public",
    "issues.bisect_releases": "true, false or a package name",
    "base": "a mapping with `python` and optionally `env`",
    "base.python": "the path of a Python interpreter",
    "base.env": "a mapping of environment variable names to values",
}
#: What the keys of a mapping name, where it is not a setting.
_KEY_NOUN = {"tolerances": "dtype"}


def _object(keys: dict, required: tuple = ()) -> dict:
    out = {"type": "object", "additionalProperties": False,
           "properties": {k: dict(s, description=d) for k, (s, d) in keys.items()}}
    if required:
        out["required"] = list(required)
    return out


def _field(f: C.Field) -> dict:
    from dlgate.oracle.compare import DEFAULT_TOLERANCES

    if f.kind == "str":
        s = {"type": "string", "minLength": 1}
    elif f.kind == "int":
        s = {"type": "integer"}
    elif f.kind == "float":
        s = {"type": "number"}
    elif f.kind == "bool":
        s = {"type": "boolean"}
    elif f.kind == "bool/auto":
        s = {"enum": [True, False, "auto"]}
    elif f.kind == "list[str]":
        s = {"type": "array", "items": {"type": "string", "minLength": 1}}
    elif f.kind == "backends":
        s = {"type": "array", "items": {"$ref": "#/$defs/backend"}}
    elif f.kind == "dict":  # tolerances
        s = {"type": "object", "additionalProperties": False,
             "properties": {dt: {"$ref": "#/$defs/tolerance"} for dt in DEFAULT_TOLERANCES}}
    elif f.kind == "issues":
        s = _object(_ISSUES_KEYS, required=("repo",))
    elif f.kind == "base":
        s = _object(_BASE_KEYS, required=("python",))
    else:
        raise AssertionError(f"config field {f.name!r}: no schema for kind {f.kind!r}")
    if f.min is not None:
        s["minimum"] = f.min
    if f.max is not None:
        s["maximum"] = f.max
    if f.choices:
        s["enum"] = list(f.choices)
    if f.optional:
        if "enum" in s:
            s["enum"] = s["enum"] + [None]
        if "type" in s:
            s["type"] = [s["type"], "null"] if isinstance(s["type"], str) else s["type"] + ["null"]
    s["description"] = f.help
    s["default"] = f.default
    return s


def schema() -> dict:
    """The JSON Schema (draft 2020-12) of a campaign file, from ``config.FIELDS``."""
    backend = _object(_BACKEND_KEYS, required=("name",))
    backend.update(type=["string", "object"], minLength=1, description=(
        "`NAME[:DEVICE][@LEVEL]` (a `?` suffix: optional), or a mapping `{name, device, opt_level, options, "
        "optional}`."))
    tolerance = {"type": "array", "items": {"type": "number", "minimum": 0}, "minItems": 2, "maxItems": 2,
                 "description": "`[rtol, atol]`, two non-negative numbers."}
    return {
        "$schema": DIALECT,
        "$id": SCHEMA_ID,
        "title": "dlgate campaign",
        "description": "A dlgate campaign file (`configs/*.yaml`); every key is optional. Check one with "
                       "`dlgate config FILE`; `dlgate config --reference` explains every key.",
        "type": "object",
        "additionalProperties": False,
        "properties": {f.name: _field(f) for f in C.FIELDS},
        "$defs": {"backend": backend, "tolerance": tolerance},
    }


def schema_json() -> str:
    """The schema as stable text (sorted keys, two-space indent): ``docs/campaign.schema.json``."""
    return json.dumps(schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@functools.lru_cache(maxsize=1)
def _validator():
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema())  # valid per the metaschema: tests/test_config_schema.py


# -- errors in words ---------------------------------------------------------------------------------
def _where(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _pattern(path) -> str:
    return _where(["*" if isinstance(p, int) else p for p in path])


def _matches(pattern: str, path) -> bool:
    return re.fullmatch(re.escape(pattern).replace(r"\*", r"[^.\[\]]+"), _where(path)) is not None


def _got(value) -> str:
    if value is None:
        return "null"
    text = repr(value)
    return f"{C._type_name(value)} {text if len(text) <= 120 else text[:117] + '...'}"


def _words(values) -> str:
    return ", ".join(v if isinstance(v, str) else json.dumps(v) for v in values)


def _expected(s: dict) -> str:
    """What a (sub)schema allows, in words."""
    if "enum" in s:
        *head, last = [v if isinstance(v, str) else json.dumps(v) for v in s["enum"]]
        return f"{', '.join(head)} or {last}" if head else last
    names = {"integer": "an integer", "number": "a number", "boolean": "true or false", "object": "a mapping",
             "null": "null", "string": "a non-empty string" if s.get("minLength") else "a string"}
    types = [s["type"]] if isinstance(s.get("type"), str) else s.get("type", [])
    words = []
    for t in types:
        if t == "array":
            item = s.get("items", {})
            words.append("a list of strings" if item.get("type") == "string" else "a list")
        else:
            words.append(names[t])
    return " or ".join(words) or "something else"


def _message(err, root) -> str:
    path = list(err.absolute_path)
    if err.validator == "additionalProperties":
        allowed = list(err.schema.get("properties", {}))
        key = next(k for k in err.instance if k not in allowed)
        hint = C.did_you_mean(key, allowed)
        hint = hint + " allowed: " if hint else "; allowed: "
        if not path:
            return f"unknown key {key!r}{hint}{', '.join(allowed)}"
        noun = _KEY_NOUN.get(_pattern(path), "key")
        return f"{_where(path + [key])}: unknown {noun}{hint}{', '.join(allowed)}"
    if err.validator == "required":
        missing = next(k for k in err.validator_value if k not in err.instance)
        child = path + [missing]
        what = next((w for p, w in _EXPECTED.items() if _matches(p, child)), None)
        return f"{_where(child)}: missing" + (f"; expected {what}" if what else "")
    # a value error: reported where it is, or at the list that holds it (an [rtol, atol] pair), in the
    # words of _EXPECTED where they have some
    for i in range(len(path), 0, -1):
        if not all(isinstance(p, int) for p in path[i:]):
            break
        what = next((w for p, w in _EXPECTED.items() if _matches(p, path[:i])), None)
        if what is not None:
            value = root
            for p in path[:i]:
                value = value[p]
            return f"{_where(path[:i])}: expected {what}, got {_got(value)}"
    where, value = _where(path), err.instance
    if err.validator in ("minimum", "maximum"):
        if not math.isfinite(value):
            return f"{where}: expected a finite number, got {_got(value)}"
        lo, hi = err.schema.get("minimum"), err.schema.get("maximum")
        lo = f"{lo:g}" if lo is not None else "-inf"
        return f"{where}: {value} is outside the allowed range {lo}..{hi if hi is not None else 'inf'}"
    if err.validator == "enum" and all(isinstance(v, str) for v in err.validator_value if v is not None):
        choices = [v for v in err.validator_value if v is not None]
        return f"{where}: {value!r} is not one of {_words(choices)}{C.did_you_mean(value, choices)}"
    return f"{where}: expected {_expected(err.schema)}, got {_got(value)}"


def validate(values: dict, source: str) -> None:
    """Check a campaign mapping against the schema; the most relevant error as a ConfigError
    ``SOURCE: KEY: what is wrong`` (one line)."""
    from jsonschema.exceptions import best_match

    err = best_match(_validator().iter_errors(values))
    if err is not None:
        raise C.ConfigError(f"{source}: {_message(err, values)}")
