"""Which cases of a batch are made invalid, and the case that runs then."""
from __future__ import annotations

import hashlib
import random

from dlgate.check import Prepared
from dlgate.invalid.oracle import inputs
from dlgate.invalid.registry import NotDisrupted, disrupt
from dlgate.seeds import sub_seed


def chosen(seed: int, share: float) -> bool:
    """Whether the case of ``seed`` is made invalid under an ``invalid_share`` of ``share``:
    a draw of its own stream, so the valid cases of a batch are the same at any share."""
    return share > 0 and random.Random(sub_seed(seed, "invalid-share")).random() < share


def make_invalid(case, meta: dict) -> Prepared | None:
    """The invalid form of generated ``case`` (a :class:`dlgate.case.Case`; ``meta`` its
    metadata), ready to run: its model with one rule broken (``meta["invalid"]`` says which,
    where, and what was redrawn), random inputs of its input types. None when no rule can
    be broken there, or breaking one failed (a defect of dlgate's, said as such);
    ``meta["not_invalid"]`` then says why, and the case runs as generated."""
    try:
        d = disrupt(case.model_bytes, sub_seed(case.seed, "invalid"))
    except NotDisrupted as e:
        meta["not_invalid"] = str(e)[:500]
        return None
    except Exception as e:  # a defect of dlgate's own (onnx's inference on an odd model): the run goes on
        meta["not_invalid"] = f"a defect in dlgate's disruption ({type(e).__name__}: {str(e)[:300]})"
        return None
    meta = dict(meta, invalid=d.info, model_sha256=hashlib.sha256(d.model).hexdigest())
    search = {"valid": True, "method": "invalid-model", "steps": 0, "restarts": 0, "seconds": 0.0, "reason": "",
              "hit_time_cap": False}
    return Prepared(case.id, meta, case.graph, d.model, inputs(case.graph, sub_seed(case.seed, "invalid-inputs")),
                    search)
