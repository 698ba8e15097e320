"""Diversity of a generated batch: Isra's eleven metrics and GenCoG's vertex/edge diversity.

Definitions (Isra §IV-C, operation-level metrics after GraphFuzzer; GenCoG Def. 5.1):

Graph level, averaged over graphs:
  NOO  operations in the graph
  NOT  distinct operation types in the graph
  NOP  distinct (type, type) pairs over edges that connect two operations
  NTR  distinct (type, type, type) triples over pairs of adjacent edges a -> b -> c
  NSA  distinct (type, input types, attributes) in the graph

Operation level, averaged over the operation corpus C (every operation type dlgate
specifies, or the ``ops`` given):
  OTC  1 if the type occurs
  IDC  distinct input degrees seen / input degrees the type can have
  ODC  distinct output degrees seen (number of consuming operations); a count
  SEC  distinct successor types seen / |C|
  DEC  distinct (successor, successor's successor) type pairs seen / |C|^2
  SAC  distinct (input types, attributes) seen; a count

GenCoG:
  div_V = mean over C of min(1, distinct (input types, attrs) / N_est(o)), with
          N_est(o) = in_space * (floor(log2 attr_space) + 1), GenCoG's estimator on its own
          scale (in_space = 4^5, doubled for multi-input types; attr_space = product over
          the type's attributes of the distinct values seen in the batch)
  div_E = distinct (type, type) edges seen / |C|^2

The operation type is the ONNX op type, so ``Concat`` and its three-input variant are one
type with two possible input degrees.
"""
from __future__ import annotations

import glob
import json
import math
import os
from collections import defaultdict

from dlgate import tables as T
from dlgate.ops.registry import all_specs

GRAPH_METRICS = ("NOO", "NOT", "NOP", "NTR", "NSA")
OP_METRICS = ("OTC", "IDC", "ODC", "SEC", "DEC", "SAC")
PERCENT = {"OTC", "IDC", "SEC", "DEC", "div_V", "div_E"}


def _key(x) -> str:
    return json.dumps(x, sort_keys=True, separators=(",", ":"))


def corpus(ops=None) -> dict:
    """ONNX op type -> set of possible input degrees. An idiom spec (several ONNX nodes,
    ``onnx_ops``) says nothing about its main node's input degree: it is left out."""
    out: dict = defaultdict(set)
    for spec in all_specs().values():
        if spec.onnx_ops:
            continue
        if ops is None or spec.name in ops or spec.onnx_op in ops:
            out[spec.onnx_op].add(spec.arity)
    return dict(out)


def load_graphs(directory: str) -> list:
    paths = sorted(glob.glob(os.path.join(directory, "*", "meta.json")))
    if not paths:
        raise FileNotFoundError(f"no generated cases (*/meta.json) under {directory}")
    graphs = []
    for p in paths:
        with open(p) as f:
            graphs.append(json.load(f)["graph"])
    return graphs


def compute(graphs: list, ops=None) -> dict:
    specs = all_specs()
    C = corpus(ops)
    n_c = len(C)
    per_graph = {m: 0.0 for m in GRAPH_METRICS}
    seen_types: set = set()
    in_deg: dict = defaultdict(set)
    out_deg: dict = defaultdict(set)
    succ: dict = defaultdict(set)
    succ2: dict = defaultdict(set)
    sa: dict = defaultdict(set)
    attr_values: dict = defaultdict(lambda: defaultdict(set))
    for g in graphs:
        tensors = g["tensors"]
        nodes = g["nodes"]
        types = [specs[n["op"]].onnx_op if n["op"] in specs else n["op"] for n in nodes]
        producer = {t: i for i, n in enumerate(nodes) for t in n["outputs"]}
        children = [[] for _ in nodes]
        for j, n in enumerate(nodes):
            for t in n["inputs"]:
                if t in producer:
                    children[producer[t]].append(j)
        pairs, triples, sas = set(), set(), set()
        for i, n in enumerate(nodes):
            o = types[i]
            seen_types.add(o)
            sig = _key([[tensors[t]["dtype"], tensors[t]["shape"]] for t in n["inputs"]])
            sa_key = (sig, _key(n["attrs"]))
            sas.add((o,) + sa_key)
            sa[o].add(sa_key)
            for k, v in n["attrs"].items():
                attr_values[o][k].add(_key(v))
            in_deg[o].add(len(n["inputs"]))
            out_deg[o].add(len(children[i]))
            for j in children[i]:
                pairs.add((o, types[j]))
                succ[o].add(types[j])
                for k in children[j]:
                    triples.add((o, types[j], types[k]))
                    succ2[o].add((types[j], types[k]))
        per_graph["NOO"] += len(nodes)
        per_graph["NOT"] += len(set(types))
        per_graph["NOP"] += len(pairs)
        per_graph["NTR"] += len(triples)
        per_graph["NSA"] += len(sas)
    n = max(1, len(graphs))
    res = {m: per_graph[m] / n for m in GRAPH_METRICS}
    res["OTC"] = sum(o in seen_types for o in C) / n_c
    res["IDC"] = sum(len(in_deg[o] & C[o]) / len(C[o]) for o in C) / n_c
    res["ODC"] = sum(len(out_deg[o]) for o in C) / n_c
    res["SEC"] = sum(len(succ[o] & set(C)) / n_c for o in C) / n_c
    res["DEC"] = sum(len({p for p in succ2[o] if p[0] in C and p[1] in C}) / n_c**2 for o in C) / n_c
    res["SAC"] = sum(len(sa[o]) for o in C) / n_c
    div_v = 0.0
    for o in C:
        in_space = 4**5 * (2 if max(C[o]) > 1 else 1)
        attr_space = math.prod(max(1, len(v)) for v in attr_values[o].values()) if attr_values[o] else 1
        n_est = in_space * (int(math.log2(attr_space)) + 1)
        div_v += min(1.0, len(sa[o]) / n_est)
    res["div_V"] = div_v / n_c
    res["div_E"] = len({p for o in C for p in ((o, s) for s in succ[o]) if p[1] in C}) / n_c**2
    res["graphs"] = len(graphs)
    res["corpus"] = n_c
    res["types_seen"] = sorted(seen_types)
    res["types_missing"] = sorted(set(C) - seen_types)
    return res


def summary(res: dict) -> list:
    """The batch statistics as lines and a table, for :func:`dlgate.tables.show` (the JSON
    file carries the full detail)."""
    table = T.table("metric", "value", "kind", right=("value",))
    for m in GRAPH_METRICS + OP_METRICS + ("div_V", "div_E"):
        v = res[m]
        T.row(table, m, f"{100 * v:.2f}%" if m in PERCENT else f"{v:.3f}",
              "graph (Isra)" if m in GRAPH_METRICS else "operation (Isra)" if m in OP_METRICS else "GenCoG")
    items = [f"dlgate batch statistics: {res['graphs']} graphs, corpus of {res['corpus']} operation types", table]
    if res["types_missing"]:
        items.append(f"operation types never generated: {', '.join(res['types_missing'])}")
    return items


def render(res: dict) -> str:
    """The batch statistics as plain text."""
    return T.render(*summary(res))
