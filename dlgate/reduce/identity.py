"""A failure's identity across runs: its fingerprint and its cluster.

Everything that compares failures between runs (the baseline, "known", "fixed", the
corpus, issues) uses these two, never the operator set of an unreduced model:

* **fingerprint**: one distinct bug. Decided from the *reduced* case: the backend, the
  verdict class, the reduced operators in order with their input dtypes and the regime of
  each attribute that survived reduction, and, for errors and crashes, the normalized
  error text. Two bugs in one operator under different attribute regimes get two; one bug
  reached through many graphs reduces to the same few operators and gets one.
* **cluster**: fingerprints that share one cause whatever the operator: for errors and
  crashes the backend, class, message template (operator names, intrinsics and dtypes
  masked) and innermost frames; a wrong answer carries no message, so its cluster is its
  fingerprint. A timeout, a memory cap or a death by signal (:func:`wordless`) carries only
  the worker's own fixed words, the same for every hang or segfault of a backend, so its
  cluster is likewise its reduced operators' (backend, class, signal, typed pattern): two
  hangs in other operators are two clusters, and a baseline that knows one does not
  know the other.
* **cause**: what the report counts and gives one row: for errors and crashes the cluster,
  with a frame named after the operator the message names masked
  (:func:`dlgate.oracle.signature.cause`: twin checks in ``InferTypeQuantize`` and
  ``InferTypeDequantize`` are one row);
  for a wrong answer the backend, class, operators (an operator with sibling operators,
  :attr:`dlgate.ops.base.OpSpec.siblings`, by their shared name) with their attribute
  regimes but not their dtypes (nor a regime that is only a length), and the wrong-value
  pattern (:func:`dlgate.oracle.compare.pattern`; ``selected`` for operators that only move
  values, where the pattern is the data's): one converter bug met in several dtypes and in
  sibling operators (ReduceMax and ReduceMin wrong alike) is one cause listing them all,
  while another wrong-value pattern or other operators stay another cause. An error that an
  earlier operator's wrong dtype or shape made (:func:`upstream_cause`) takes that wrong
  answer's cause. A wordless failure's cause is its class and signal with the operators up
  to dtype and siblings (one hang met in two dtypes is one row). Novelty is never decided
  on it: the baseline and "known" keep fingerprints and clusters.
"""
from __future__ import annotations

import hashlib

from dlgate.graph.ir import Graph
from dlgate.ops.registry import get
from dlgate.oracle import signature as S
from dlgate.oracle import verdict as V


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


#: Error types the worker writes itself for a compiler that said nothing: no answer within the
#: timeout, resident memory over the cap, the process dead of a signal (``dlgate.exec.worker``).
_WORKER_WORDS = ("Timeout", "OutOfMemory", "Crash")


def wordless(error: dict | None) -> bool:
    """Whether a failure's error holds none of the compiler's words or frames, only the
    worker's fixed ones: then its message tells one hang (or segfault) from another no more
    than a wrong answer's absent message does."""
    return bool(error) and error.get("type") in _WORKER_WORDS and not error.get("frames")


def _wordless_class(verdict: str, error: dict | None) -> str | None:
    """A wordless failure's class as its cluster and cause name it (``crash (SIGSEGV)``,
    ``timeout``); None for any other failure."""
    if not wordless(error):
        return None
    return verdict + (f" ({error['signal']})" if error.get("signal") else "")


def pattern(graph: Graph) -> str:
    """The graph's operators in topological order, e.g. ``Conv>Relu``."""
    return ">".join(get(n.op).onnx_op for n in graph.nodes)


def _bin_number(x) -> str:
    if isinstance(x, bool):
        return str(x).lower()
    if x == 0:
        return "0"
    if isinstance(x, int):
        return "1" if x == 1 else ("-1" if x == -1 else (">1" if x > 1 else "<-1"))
    return "+" if x > 0 else "-"


def regime(value) -> str:
    """The coarse class of an attribute value that decides which code path a compiler
    takes: strings and booleans exactly, numbers by sign and whether they are 0 or 1, lists
    element-wise (so ``pads=[0,0,1,1]`` and ``pads=[1,1,0,0]`` differ, sizes do not)."""
    if isinstance(value, (bool, int, float)):
        return _bin_number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        if len(value) > 8:
            return f"[{len(value)}]"
        return "[" + ",".join(regime(v) for v in value) + "]"
    return type(value).__name__


def typed_pattern(graph: Graph, matter: list | None = None) -> str:
    """Each operator with its input dtypes and attribute regimes, in topological order:
    ``Selu(float16;alpha=+,gamma=+)>Tan(float16)``. ``matter``, when the reducer found it,
    names per operator the attributes the failure depends on; the others are left out."""
    out = []
    for i, n in enumerate(graph.nodes):
        dts = ",".join(graph.tensors[t].dtype for t in n.inputs)
        keep = n.attrs if matter is None else {k: v for k, v in n.attrs.items() if k in matter[i]}
        attrs = ",".join(f"{k}={regime(v)}" for k, v in sorted(keep.items()))
        out.append(f"{get(n.op).onnx_op}({dts}{';' + attrs if attrs else ''})")
    return ">".join(out)


def _sized(value) -> bool:
    """Whether ``value``'s regime says nothing but sizes: a list longer than 8 (its regime is
    its length, and the reducer never probes it) or a list of such lists."""
    if not isinstance(value, (list, tuple)):
        return False
    return len(value) > 8 or (len(value) > 0 and all(_sized(v) for v in value))


def kin_pattern(graph: Graph, matter: list | None = None) -> str:
    """:func:`typed_pattern` without dtypes and with each operator that has siblings named
    by them: ``reduce-extremum(keepdims=0)``, what a wrong answer's cause is made of. An
    attribute whose regime is only a length (GatherND's 23 or 64 constant indices) is left
    out: one bug met with two index lists is one cause. So is an attribute left out (``None``):
    the reducer has no other regime to try for it (:meth:`dlgate.reduce.reducer._Run.matter`
    keeps it unprobed), so nothing says the failure depends on its absence. TVM 0.25's Shape
    ignoring ``start`` and ``end`` reduced to ``Shape(start=None)``, ``Shape(end=None)`` and
    ``Shape()``: three rows for one converter bug."""
    out = []
    for i, n in enumerate(graph.nodes):
        spec = get(n.op)
        keep = n.attrs if matter is None else {k: v for k, v in n.attrs.items() if k in matter[i]}
        attrs = ",".join(f"{k}={regime(v)}" for k, v in sorted(keep.items()) if v is not None and not _sized(v))
        out.append(f"{spec.siblings or spec.onnx_op}({attrs})")
    return ">".join(out)


def _moves(spec) -> bool:
    """Whether an operator only moves values to other places (its spec keeps the inputs'
    range and is exact, and it is no reduction or pooling: Gather, GatherND, Slice, Expand,
    Where...). ReduceMax and MaxPool select too, but by comparing values: a bug there can
    shift every result alike, which the wrong-value pattern shows."""
    return spec.keeps_range and spec.exact_values and spec.family not in ("reduce", "pool")


def _selects(graph: Graph) -> bool:
    """Whether every operator only moves values (:func:`_moves`). Their wrong answer is an
    element taken from the wrong place, or a zero or NaN read out of place, so how the wrong
    values relate to the right ones (zero, near, far, NaN) is the data's, not the bug's: one
    negative-index bug gave four wrong-value patterns in four models."""
    return bool(graph.nodes) and all(_moves(get(n.op)) for n in graph.nodes)


def identity(verdict: str, backend_name: str, error: dict | None, graph: Graph, matter: list | None = None,
             comparison: dict | None = None) -> dict:
    """``{"fingerprint", "cluster", "cluster_text", "pattern", "typed", "text", "cause",
    "cause_text", "dtypes"}`` of a failure whose reduced case is ``graph`` (``error`` the
    candidate's error for errors and crashes, ``comparison`` its comparison for wrong
    answers; ``matter`` as in :func:`typed_pattern`). ``cluster_text`` is the cluster's
    readable key: the message template, or the typed pattern of a wrong answer;
    ``cause_text`` the cause's; ``dtypes`` the reduced operators' input dtypes."""
    typed = typed_pattern(graph, matter)
    what = _wordless_class(verdict, error)
    if verdict in V.VALUE_CLASSES:
        text = " :: ".join(("value", backend_name, verdict, typed))
        fp = cl = _hash(text)
        cl_text = f"{verdict} in {typed}"
    else:
        sig = S.signature(verdict, backend_name, error)
        text = f"error :: {sig['text']} :: {typed}"
        fp = _hash(text)
        if what is not None:  # the reduced operators tell one hang (or segfault) from another
            cl, cl_text = _hash(" :: ".join(("wordless", backend_name, what, typed))), f"{what} in {typed}"
        else:
            c = S.cluster(verdict, backend_name, error)
            cl, cl_text = c["id"], (c["text"] if error else f"{verdict} in {typed}")
    cause, cause_text = cl, cl_text
    if what is not None:  # one hang met in other dtypes or sibling operators: one row
        kin = kin_pattern(graph, matter)
        cause = _hash(" :: ".join(("cause", backend_name, what, kin)))
        cause_text = f"{what} in {kin}"
    elif verdict not in V.VALUE_CLASSES and error:  # twin checks named after their operator: one row
        c = S.cause(verdict, backend_name, error)
        cause, cause_text = c["id"], c["text"]
    if verdict in V.VALUE_CLASSES:  # ``comparison``: the reduced case's, for its wrong-value pattern
        wrong = (comparison or {}).get("pattern") or (comparison or {}).get("kind") or ""
        if _selects(graph):
            wrong = "selected"
        kin = kin_pattern(graph, matter)
        cause = _hash(" :: ".join(("cause", backend_name, verdict, kin, wrong)))
        cause_text = f"{verdict} in {kin}" + (f", {wrong}" if wrong else "")
    dtypes = sorted({graph.tensors[t].dtype for n in graph.nodes for t in n.inputs})
    return {"fingerprint": fp, "cluster": cl, "cluster_text": cl_text, "pattern": pattern(graph), "typed": typed,
            "text": text[:600], "cause": cause, "cause_text": cause_text, "dtypes": dtypes}


def upstream_cause(ident: dict, verdict: str, backend_name: str, graph: Graph, matter: list | None,
                   comparison: dict | None) -> dict:
    """What an error's identity takes from the wrong answer an earlier operator made
    (:meth:`dlgate.reduce.reducer._Run.upstream`, ``graph`` its reduction): that answer's
    cause and cause text, so the error and the wrong answer are one row, and ``upstream``
    (the wrong answer's class, typed pattern, fingerprint and cause). The error keeps its
    fingerprint and cluster: novelty is decided on them."""
    up = identity(verdict, backend_name, None, graph, matter, comparison)
    return {"cause": up["cause"], "cause_text": up["cause_text"],
            "upstream": {"verdict": verdict, "typed": up["typed"], "fingerprint": up["fingerprint"],
                         "cause": up["cause"], "error_cause": ident["cause"]}}

