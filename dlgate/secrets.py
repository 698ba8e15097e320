"""What counts as a secret, and keeping secrets out of everything dlgate hands on.

One policy for the whole program:

- :func:`scrubbed_env` is the environment a worker (the compiler under test, the base build,
  the reference) starts from: without the variables the GitHub client reads its token from,
  without any credential-like variable (a name holding TOKEN, SECRET, PASSWORD, PASSWD,
  API_KEY, APIKEY, ACCESS_KEY, PRIVATE_KEY or CREDENTIAL; the runner's ACTIONS_RUNTIME_*,
  ACTIONS_CACHE_*, ACTIONS_RESULTS_* and ACTIONS_ID_TOKEN_* service credentials), without
  the names listed in ``DLGATE_SECRET_VARS`` (comma-separated), and without any variable
  whose value looks like a GitHub token or is a copy of a secret's value.
- :func:`redact` replaces every secret value in a text by ``***``: the values of those
  variables in this process's environment (as it was when dlgate started, and as it is
  now; values of at least 8 characters), values registered with :func:`remember` (a token
  passed explicitly), and anything shaped like a GitHub token (``ghp_``, ``gho_``,
  ``ghu_``, ``ghs_``, ``ghr_`` or ``github_pat_`` followed by the token alphabet).
  :func:`redact_obj` does the same to every string in a nested structure (dict keys
  included), for JSON documents.

Named ``dlgate.secrets``; the standard library's ``secrets`` is unaffected (absolute imports).
"""
from __future__ import annotations

import os
import re
import threading

#: The variables dlgate's GitHub client reads its token from (the first is the one it uses),
#: and the other spellings tools such as ``gh`` read; removed from every worker.
TOKEN_VARS = ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_PAT", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN")
#: The variable the GitHub client reads.
TOKEN_VAR = TOKEN_VARS[0]
#: Extra names to treat as secrets (comma-separated), for credentials whose names the
#: patterns below do not catch.
EXTRA_VAR = "DLGATE_SECRET_VARS"
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL"
                          r"|^ACTIONS_(RUNTIME|CACHE|RESULTS|ID_TOKEN)_", re.IGNORECASE)
#: Names the patterns match that hold no secret: a library setting, and the list of names.
_NOT_SECRET = frozenset({"TOKENIZERS_PARALLELISM", EXTRA_VAR})
#: GitHub's token formats: classic and fine-grained personal, OAuth, user-to-server,
#: server-to-server (GITHUB_TOKEN in Actions) and refresh tokens.
TOKEN_SHAPE = re.compile(r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}")
#: Shorter values are not redacted: "true", "1" or a short word would blank out ordinary text.
MIN_LENGTH = 8
MASK = "***"

_lock = threading.Lock()
_remembered: set = set()
_cache: tuple = ((), None)


def _extra_names(env) -> set:
    return {n.strip() for n in (env.get(EXTRA_VAR) or "").split(",") if n.strip()}


def is_secret_name(name: str, env=None) -> bool:
    """Whether variable ``name`` holds a secret (``env`` supplies ``DLGATE_SECRET_VARS``;
    default: this process's environment)."""
    return _named_secret(name, _extra_names(os.environ if env is None else env))


def secret_values(env) -> list:
    """The values of ``env``'s secret variables that are long enough to redact, longest first."""
    extra = _extra_names(env)
    found = set()
    for k, v in env.items():
        if isinstance(v, str) and _named_secret(k, extra):
            found |= {v, v.strip()}
    return sorted((v for v in found if len(v) >= MIN_LENGTH), key=lambda v: (-len(v), v))


def _named_secret(name: str, extra: set) -> bool:
    return name in TOKEN_VARS or name in extra or (name.upper() not in _NOT_SECRET and bool(_SECRET_NAME.search(name)))


def scrubbed_env(env) -> dict:
    """``env`` without its secrets: secret-named variables, variables whose value looks like a
    GitHub token, and copies of a secret's value under another name. ``DLGATE_SECRET_VARS``
    is read from ``env``."""
    extra = _extra_names(env)
    values = set(secret_values(env))
    out = {}
    for k, v in env.items():
        if _named_secret(k, extra):
            continue
        if isinstance(v, str) and (TOKEN_SHAPE.search(v) or v in values or v.strip() in values):
            continue
        out[k] = v
    return out


def remember(*values: str) -> None:
    """Redact these values too from now on (e.g. a token passed to the GitHub client directly)."""
    with _lock:
        for v in values:
            if isinstance(v, str):
                _remembered.update(x for x in (v, v.strip()) if len(x) >= MIN_LENGTH)


def _pattern():
    """The compiled pattern of every secret known now (cached until that set changes)."""
    global _cache
    current = secret_values(os.environ)
    with _lock:
        _remembered.update(current)  # values seen once stay secret, even if the variable goes away
        known = tuple(sorted(_remembered, key=lambda v: (-len(v), v)))
        if _cache[0] != known or _cache[1] is None:
            alts = [re.escape(v) for v in known] + [TOKEN_SHAPE.pattern]
            _cache = (known, re.compile("|".join(alts)))
        return _cache[1]


def redact(text):
    """``text`` with every secret replaced by ``***``; anything but a string is returned as is."""
    if not isinstance(text, str) or not text:
        return text
    return _pattern().sub(MASK, text)


def redact_obj(obj):
    """A copy of ``obj`` (dicts, lists, tuples, nested) with every string redacted, keys
    included; numbers, None and other objects are kept, except that an object whose
    ``str()`` holds a secret is replaced by that string, redacted (JSON writers fall back to
    ``str()`` for them)."""
    pat = _pattern()

    def walk(o):
        if isinstance(o, str):
            return pat.sub(MASK, o) if o else o
        if isinstance(o, dict):
            return {walk(k): walk(v) for k, v in o.items()}
        if isinstance(o, list):
            return [walk(x) for x in o]
        if isinstance(o, tuple):
            return tuple(walk(x) for x in o) if type(o) is tuple else type(o)(*map(walk, o))  # namedtuples too
        if o is None or isinstance(o, (bool, int, float, bytes, bytearray)) or type(o).__module__ == "numpy":
            return o
        try:
            s = str(o)
        except Exception:  # an object that cannot even print itself carries no text to leak
            return o
        r = pat.sub(MASK, s)
        return r if r != s else o

    return walk(obj)


remember(*secret_values(os.environ))  # the environment dlgate started with
