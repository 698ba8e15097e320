"""Stable error signatures: what later stages deduplicate on.

A signature keeps what identifies a failure (verdict class, backend, exception type, the
message's words, the innermost frames) and normalizes away what varies between
occurrences of one bug: addresses, numbers, paths, quoted literals, tensor and node names
and shapes.
"""
from __future__ import annotations

import hashlib
import re
from functools import lru_cache

from dlgate.ops.registry import all_specs

_RULES = [
    (re.compile(r"0x[0-9a-fA-F]+"), "<addr>"),
    (re.compile(r"(/[\w.\-+]+)+/?"), "<path>"),
    (re.compile(r"\b[tn]\d+(_\w+)?\b"), "<name>"),
    # dlgate's tensor names (tmp_12, a motif's m_18) with what a compiler appends (tmp_12_q, m_18_q)
    (re.compile(r"\b(c|tmp|axes|lv|gv|v|m)_?\d+(_\w+)?\b"), "<name>"),
    (re.compile(r"_[tnm]\d+\b"), "_<name>"),  # appended to a compiler's own node name: InsertedCast_t13
    (re.compile(r"\b(lv|gv)\b"), "<name>"),  # Relax's binding names, numbered or not
    (re.compile(r"\[[\d,\s]*\]"), "<shape>"),
    (re.compile(r"\(\s*\d+(\s*,\s*\d+)*\s*,?\s*\)"), "<shape>"),
    (re.compile(r"\(\s*\)"), "<shape>"),  # a rank-0 shape: the same failure as at any other rank
    (re.compile(r"-?\b\d+(\.\d+)?([eE][-+]?\d+)?\b"), "<n>"),
    (re.compile(r"\s+"), " "),
]


def normalize(message: str, max_len: int = 300) -> str:
    """The message's first non-empty lines with variable parts replaced."""
    lines = [ln.strip() for ln in (message or "").splitlines() if ln.strip()]
    text = " | ".join(lines[:3])
    for pat, rep in _RULES:
        text = pat.sub(rep, text)
    return text.strip()[:max_len]


def signature(kind: str, backend: str, error: dict | None = None, extra: str = "") -> dict:
    """``{"id": short hash, "text": readable key}`` for a failure.

    ``backend`` is the backend's name (not its version or opt level, so one bug keeps one
    signature across upgrades); ``extra`` adds a verdict-specific key (e.g. the signal).
    """
    parts = [kind, backend]
    if error:
        parts.append(error.get("type", ""))
        parts.append(normalize(error.get("message", "")))
        parts.append(" < ".join(error.get("frames", [])[-3:]))
        if error.get("signal"):
            parts.append(error["signal"])
    if extra:
        parts.append(extra)
    text = " :: ".join(p for p in parts if p)
    return {"id": hashlib.sha256(text.encode()).hexdigest()[:16], "text": text}


#: What varies between occurrences of one root cause reached through different operators
#: and dtypes: maths intrinsics and operator names (TVM's ``tirx.asinh``, ``relax.nn.conv2d``,
#: onnxruntime's node names), dtype names, quoted literals.
_TEMPLATE_RULES = [
    (re.compile(r"\b(tirx?|relax|topi|te|R|T|ir)\.[A-Za-z_][\w.]*"), "<fn>"),
    # a dtype as C++ spells it (onnxruntime's ``[with T = onnxruntime::MLFloat16]`` where the
    # float32 form says ``[with T = float]``) and a type's mangled name as ``typeid(T).name()``
    # prints it (``N11onnxruntime17PrimitiveDataTypeIfEE``): one kernel's error met in two dtypes
    (re.compile(r"\b(?:onnxruntime::)?(?:MLFloat16|BFloat16|Float8E\w+|Float4E2M1\w*|U?Int[24]x[24])\b"), "<dtype>"),
    (re.compile(r"\bN\d+[A-Za-z_]\w*E\b"), "<dtype>"),
    (re.compile(r"\b(b?float|u?int|bfloat)(\d+)?\b|\bbool\b|\bdouble\b|\bhalf\b"), "<dtype>"),
    (re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`"), "<q>"),
]


_CALL = re.compile(r"(<fn>|<expr>)\((?:[^()]|\([^()]*\))*\)")
#: Lower-case operator names that are also plain English in error messages.
_WORDS = {"and", "or", "not", "xor", "where", "less", "equal", "greater", "range", "shape", "size", "sign", "round",
          "split", "mean", "tile", "expand", "identity", "pad", "mod", "sum", "max", "min", "cast", "slice", "gather"}


@lru_cache(maxsize=1)
def _op_names() -> re.Pattern:
    """Operator names as messages spell them: ONNX's (``Sigmoid``, case kept) and their
    lower-case forms, except those that are also English words."""
    names = {s.onnx_op for s in all_specs().values()}
    names |= {n.lower() for n in names if n.lower() not in _WORDS}
    return re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\b")


def template(message: str) -> str:
    """The message's template: :func:`normalize`, then operator names, intrinsics, dtypes
    and quoted literals masked, so one cause reached through several operators (float16
    ``unknown intrinsic`` for seven maths functions) has one template."""
    # masked before it is cut to length: a longer dtype spelling must not move the cut; TVM's
    # metadata note and references are its printer's, not the failure's (_META_NOTE, _META_REF)
    text = normalize(_unprinted(message), max_len=1200)
    for pat, rep in _TEMPLATE_RULES:
        text = pat.sub(rep, text)
    text = text[:300]
    for _ in range(4):  # printed IR expressions, innermost first: R.subtract(R.const(1.0), lv)
        text, n = _CALL.subn("<expr>", text)
        if not n:
            break
    return _op_names().sub("<op>", text)


def cluster(kind: str, backend: str, error: dict | None) -> dict:
    """``{"id", "text"}`` of a failure's cluster, the group of fingerprints that share one
    cause whatever the operator: backend, verdict class, the message template and the
    innermost frames. Only errors and crashes cluster; a wrong answer has no message, so
    its cluster is its fingerprint (the caller passes ``error=None`` and uses that)."""
    parts = [kind, backend]
    if error:
        parts += [error.get("type", ""), template(error.get("message", "")),
                  " < ".join(error.get("frames", [])[-3:]), error.get("signal", "")]
    text = " :: ".join(p for p in parts if p)
    return {"id": hashlib.sha256(text.encode()).hexdigest()[:16], "text": text}


#: A name the message gives a compiler's own operator or function (``relax.quantize``), masked
#: as ``<fn>`` by the template (the first of :data:`_TEMPLATE_RULES`).
_FN_NAME = _TEMPLATE_RULES[0][0]


def _named_frames(message: str, frames: list) -> list:
    """``frames`` with the operator the message names masked where a frame's function is named
    after it: ``relax.quantize`` in the message makes ``InferTypeQuantize`` (or
    ``infer_quantize``) ``InferType<fn>``. Only a whole part of the name is masked, so
    ``InferTypeDequantize`` keeps its name for a message about ``relax.quantize``."""
    names = {m.group(0).rsplit(".", 1)[-1] for m in _FN_NAME.finditer(message or "")}
    names = {n for n in names if len(n) >= 3 and n.isidentifier()}
    if not names:
        return list(frames)
    alts = "|".join(re.escape(n[0].upper() + n[1:]) for n in sorted(names, key=len, reverse=True))
    low = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    # a part of a longer identifier only: CamelCase after a lower-case letter or digit, or
    # snake_case beside an underscore; a word on its own (``const`` in ``(const Call&``, named
    # by an ``R.const`` in the message) is not a function named after the operator
    pat = re.compile(rf"(?<=[a-z0-9])(?:{alts})(?![a-z])|(?<=_)(?:{low})(?![a-z0-9])|"
                     rf"(?<![A-Za-z0-9_])(?:{low})(?=_)")
    return [pat.sub("<fn>", f) for f in frames]


def cause(kind: str, backend: str, error: dict | None) -> dict:
    """``{"id", "text"}`` of the report row a failure's cluster belongs to: the
    :func:`cluster`, except that a frame named after the operator the message names is the
    same place for every operator. TVM 0.26 checked a rank-0 tensor's axis in
    ``InferTypeQuantize`` and in its twin ``InferTypeDequantize``, with one message
    (``relax.quantize: axis param is out of range``, ``relax.dequantize: ...``): two clusters,
    one converter bug, one row. Novelty never reads it: the baseline keeps clusters."""
    c = cluster(kind, backend, error)
    if not error:
        return c
    frames = list(error.get("frames", []))[-3:]
    masked = _named_frames(error.get("message", ""), frames)
    if masked == frames:
        return c
    return cluster(kind, backend, dict(error, frames=masked))


# -- what a failure is, whatever the build's spelling ----------------------------------------
#: Lines of a stack trace printed inside a message: Python's ``Traceback`` header and
#: ``File "...", line N, in f`` frames (TVM prints its C++ frames that way too), TVM's
#: numbered C++ frames (``  12: tvm::codegen::...``) and their ``at file.cc:N`` lines,
#: and the carets under a source line.
_TRACE = re.compile(r"^(Traceback \(most recent call last\):|File \".*\", line \d+.*|\d+: .*|at \S+:\d+|[\^~\s]+)$")
#: A source file and line: ``/onnxruntime_src/.../pool_attributes.h:88``, ``codegen_llvm.cc:1512``.
_SRC = re.compile(r"(?:[A-Za-z]:)?[\w./\\+-]*\w\.(?:h|hh|hpp|hxx|inl|c|cc|cpp|cxx|cu|cuh|py|pxi|pyx)(?::\d+)?\b")
#: After a source position, the function it is in (``onnxruntime::PoolAttributes::PoolAttributes(const
#: KernelInfoType&, ...) [with KernelInfoType = ...]``): where, not what.
_WHERE = re.compile(r"<src>\s*,?\s*(?:in\s+)?(?:[\w~]+(?:<[^<>()]*>)?::)+[\w~]+(?:\([^()]*\))?(?:\s*const)?"
                    r"(?:\s*\[with [^\]]*\])?")
#: ``ns::f(args)``: a C++ function's parameter list (its spelling follows the build's typedefs).
_CPP_CALL = re.compile(r"((?:[\w~]+::)+[\w~]+)\([^()]*\)(?:\s*const)?")
_WITH = re.compile(r"\s*\[with [^\]]*\]")
_TEMPLATE_ARGS = re.compile(r"(?<=[A-Za-z_])<(?:[^<>()]|<[^<>()]*>)*>")
#: An operator's domain before its name: ``com.microsoft.QuickGelu``, ``ai.onnx.ml.TreeEnsemble``.
_DOMAIN = re.compile(r"\b(?:com\.microsoft(?:\.nchwc|\.experimental)?|ai\.onnx(?:\.ml|\.preview\.training)?|"
                     r"org\.pytorch\.aten)\.(?=[A-Za-z])")
#: onnxruntime's node annotations: ``(node QuickGelu)``, ``(node:'QuickGelu' ep:'CPUExecutionProvider')``,
#: ``node with name 'x'``.
_NODE = re.compile(r"\(node[:\s][^()]*\)|\bnode with name '[^']*'")
#: A leading ``tvm.error.InternalError: `` or ``tvm._ffi.base.TVMError: ``: the exception's
#: class, which moves between releases.
_EXC_PREFIX = re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception): ")
#: The fields of an object's repr that name the object (kept as their value alone).
_REPR_NAMES = ("name", "op", "op_type", "dtype")
#: Fields of TVM's reprs that are the build's own bookkeeping, not what the object is.
_REPR_OWN = ("span", "ty", "struct_info_", "checked_type_", "_checked_type_", "virtual_device_", "description",
             "arguments", "attrs_type_key", "num_inputs", "support_level")
_LITERAL = re.compile(r"-?\d+(\.\d+)?|True|False|[A-Za-z_][\w.]*")
_REPR_HEAD = re.compile(r"\b([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)\((?=\s*[A-Za-z_]\w*=)")


def _reprs(text: str) -> str:
    """Object reprs with keyword fields (``ir.Op(span=None, ty=ir.Type(span=None), name="tirx.asinh",
    ...)``) reduced to their class's last name and the fields that say what the object is
    (its name, and other plain values) without the build's bookkeeping (spans, types, struct
    info, nested objects): ``Op(tirx.asinh)``, the form older releases print."""
    out, pos = [], 0
    while True:
        m = _REPR_HEAD.search(text, pos)
        if m is None:
            return "".join(out) + text[pos:]
        depth, k, start = 1, m.end(), m.end()
        while k < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[k], 0)
            k += 1
        if depth:  # cut off: keep the rest as it is
            return "".join(out) + text[pos:]
        fields, depth, cur = [], 0, []
        for ch in text[start:k - 1]:
            if ch == "," and depth == 0:
                fields.append("".join(cur))
                cur = []
                continue
            depth += {"(": 1, ")": -1, "[": 1, "]": -1, "{": 1, "}": -1}.get(ch, 0)
            cur.append(ch)
        fields.append("".join(cur))
        kept = []
        for f in fields:
            key, _, val = (x.strip() for x in f.partition("="))
            val = val.strip("'\"")
            if key in _REPR_OWN or val in ("None", "") or not _LITERAL.fullmatch(val):
                continue  # the build's bookkeeping, nothing, or a nested object's repr
            kept.append(val if key in _REPR_NAMES else f"{key}={val}")
        out.append(text[pos:m.start()] + f"{m.group(1).rsplit('.', 1)[-1]}({', '.join(kept)})")
        pos = k


#: A C++ assertion's condition before its own message (TVM's ``ICHECK(value >= 0) << "cannot make
#: uint from negative value"`` prints "Check failed: (value >= 0) is false: cannot make uint ...";
#: the release before printed the message alone): the message says what failed, the condition
#: how the source checks it. Kept where no message follows (then it is all there is).
_CHECK = re.compile(r"^(?:\w+Error: )?Check failed: (?:\(.*?\)|[^:]*?) is false: (?=\S)")


#: Advice a message ends with ("hint: use tvm.tirx.all / tvm.tirx.any instead", lengthened by
#: the next release): what to do about a failure, not what failed.
_HINT = re.compile(r",?\s*\bhint:[^|]*")


#: dlgate's own notes before a compiler's message (``dlgate/oracle/rules/``): what another run
#: of the model showed (its static-shape or unoptimized form compiles), not what this failure
#: is; a base build that fails the symbolic model in the same words fails it the same way,
#: whether or not its static form compiles.
_NOTE = re.compile(r"^(?:fails only with symbolic input dimensions \(the same model with static shapes compiles\)|"
                   r"refused only with optimizations \(at level \w+ the model compiles\)|"
                   r"the model with symbolic input dimensions is not accepted): ")
#: TVM's printer's note, put on a line of its own inside a sentence wherever a constant is printed.
_META_NOTE = re.compile(r"\s*#\s*Metadata omitted\. Use show_meta=True in script\(\) method to show it\.\s*")
#: A constant printed by its place in the module's metadata: ``metadata["relax.expr.Constant"][0]``
#: in one release is ``metadata["ir.GenericConst"][0]`` in the next; a tensor as TE prints it
#: (``metadata["te.Tensor"][0]``) is a binding (``lv18``) in another.
_META_REF = re.compile(r"\bmetadata\[[\"']?[\w.]+[\"']?\]\[\d+\]")
def _unprinted(message: str | None) -> str:
    """``message`` without TVM's printer's metadata note, its metadata references read as a
    binding (``lv``)."""
    return _META_REF.sub("lv", _META_NOTE.sub(" ", message or ""))


#: A tensor's element as TE prints it, ``T.te.tensor_load(A, ax0)``: ``A[ax0]`` in other releases.
_TENSOR_LOAD = re.compile(r"\b(?:T\.)?te\.tensor_load\(\s*([\w.]+)\s*,\s*([^()]*)\)")


def essence(message: str, max_len: int = 300) -> str:
    """What a message says, whatever build printed it: the lines of stack traces dropped;
    source positions (file and line, and the function they name), C++ parameter lists,
    template arguments and ``[with ...]`` clauses, the exception class's prefix, an assertion's
    condition before its own message (``_CHECK``), dlgate's own notes on other runs (``_NOTE``), TVM's
    metadata references and TE tensor loads (``lv``, ``lv[ax0]``), operator
    domains, onnxruntime's node annotations and object reprs' build-specific fields
    normalized away; then :func:`normalize`'s rules. Operator names, intrinsics and the
    message's words stay: two failures at different operators, or with different words,
    keep different essences."""
    lines, after_file = [], False
    message = _TENSOR_LOAD.sub(r"\1[\2]", _unprinted(message))
    for ln in message.splitlines():
        s = ln.strip()
        if not s:
            continue
        if after_file and ln[:1].isspace() and not _TRACE.match(s):
            after_file = False  # the source line a Python-style frame quotes
            continue
        after_file = s.startswith("File \"")
        if _TRACE.match(s):
            continue
        lines.append(_CHECK.sub("", _NOTE.sub("", _EXC_PREFIX.sub("", s))))
    text = " | ".join(lines[:3])
    text = _SRC.sub("<src>", _reprs(text))
    text = _WHERE.sub("<src>", text)
    text = _WITH.sub("", _CPP_CALL.sub(r"\1", text))
    for _ in range(3):
        text, n = _TEMPLATE_ARGS.subn("", text)
        if not n:
            break
    text = _NODE.sub("(node)", _DOMAIN.sub("", text))
    text = re.sub(r"\btirx\.", "tir.", text)  # TVM's TIR namespace, renamed between releases
    # a dtype as TVMScript prints it, also glued to the word before it ("for typeT.bool")
    text = re.sub(r"(?<![\w.])T\.(?=(?:b?float|u?int|bfloat|bool)\d*\b)|(?<=[a-z])T\.(?=bool\b|b?float\d|u?int\d)",
                  "", text)
    # Relax's struct info, a type from 0.26: StructInfo, TupleStructInfo, TensorStructInfo, "struct info"
    text = re.sub(r"StructInfo\b", "Type", text)
    text = re.sub(r"\bstruct info\b", "type", text)
    text = _HINT.sub("", text)
    text = re.sub(r"[\"'`]", "", text)  # quoting style
    return normalize(text, max_len * 4)[:max_len]


def share_key(kind: str, backend: str, error: dict | None) -> str:
    """What two builds' failures of one model must agree on to be the same failure: the
    class, the backend and the message's :func:`essence`; only a message with no words
    (a bare ``IndexError``, a crash by a signal) falls back on the exception's type, the
    signal, and where it was raised: the innermost two functions, after a wrapper that
    forwards to a function of its own name is taken as that function (TVM 0.26's FFI
    ``_getitem`` under ``__getitem__``, where 0.25 raised the same bare ``IndexError`` on
    the same reduced SplitToSequence in ``__getitem__`` itself). Stack frames otherwise
    differ from build to build and are left out."""
    parts = [kind, backend]
    if error:
        text = essence(error.get("message", ""))
        parts.append(text)
        if not re.search(r"[A-Za-z]{2}", text.replace("<n>", "").replace("<path>", "").replace("<src>", "")):
            names = [re.sub(r"\(.*$", "", f.split(":", 1)[-1]).split("::")[-1].split(".")[-1].strip("_")
                     for f in error.get("frames", [])]
            where = [n for i, n in enumerate(names) if i == 0 or n != names[i - 1]][-2:]
            parts += [error.get("type", ""), " < ".join(where), error.get("signal", "")]
    return " :: ".join(p for p in parts if p)
