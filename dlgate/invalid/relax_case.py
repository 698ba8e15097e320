"""Which cases of a TVM campaign's invalid models are broken at the Relax level
(:mod:`dlgate.invalid.relax`) rather than in ONNX, and the case that runs then. Apart from
the backend's module so that a worker hosting it imports none of the gate's side."""
from __future__ import annotations

import random

from dlgate.backends.base import BackendSpec
from dlgate.check import Prepared
from dlgate.invalid import case as IC
from dlgate.invalid.oracle import inputs as invalid_inputs
from dlgate.invalid.relax import describe
from dlgate.seeds import sub_seed

#: The backend a campaign runs a Relax-level invalid case on (its entry point: verdicts,
#: summaries and JUnit say ``tvm-relax-invalid[cpu]``). Runs journaled before it had one say
#: ``dlgate.invalid.relax:TVMRelaxInvalid[cpu]`` (:data:`PATH`), which loads as it did.
BACKEND = "tvm-relax-invalid"
#: The backend's ``module:Class`` path, the label of its verdicts in runs journaled before
#: :data:`BACKEND` was registered.
PATH = "dlgate.invalid.relax:TVMRelaxInvalid"
#: Of a TVM campaign's invalid models (``invalid_share``), the share broken at the Relax level
#: rather than in ONNX: the two Relax rules against ONNX's six, so that each rule gets about
#: the same share of the invalid models.
RELAX_SHARE = 0.25


def chosen(seed: int, invalid_share: float) -> bool:
    """Whether the case of ``seed`` is a Relax-level invalid case in a TVM campaign with
    ``invalid_share``: one of the invalid cases (:func:`dlgate.invalid.case.chosen`), and of
    those, :data:`RELAX_SHARE` by a draw of its own stream."""
    return IC.chosen(seed, invalid_share) and random.Random(sub_seed(seed, "invalid-relax")).random() < RELAX_SHARE


def specs_of(importer_specs: list) -> list:
    """The Relax-level invalid backend at the device, pipeline and options of each TVM spec."""
    return [BackendSpec(BACKEND, s.device, s.opt_level, s.options) for s in importer_specs]


def make_invalid(case, meta: dict) -> Prepared | None:
    """The Relax-level invalid form of generated ``case`` (a :class:`dlgate.case.Case`):
    its graph's direct module with one parameter of ``main`` declared wrongly, the rule
    drawn here exactly as the worker draws it (:func:`describe`), run on random inputs of the
    graph's input types. Its ONNX model is the valid one, unchanged: only the direct path
    takes the broken module. None, with ``meta["not_relax_invalid"]`` saying why, where the
    direct path cannot lower the graph, ``main`` has no tensor parameter, or TVM's inference
    refuses the body under the wrong declaration as the module is built (the case then
    breaks an ONNX rule instead). Imports TVM in the calling process."""
    try:
        info = describe(case.graph)
    except Exception as e:  # noqa: BLE001 - NoRelaxLowering, no tensor parameter, or TVM's own inference
        # refusing the body under the wrong declaration while the module is built (a float64
        # constant divided by the parameter declared int32): no module to run
        meta["not_relax_invalid"] = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[-1][:300]}"
        return None
    info = dict(info, level="relax", checker="not run: the ONNX model is valid, the Relax module is not")
    meta = dict(meta, invalid=info)
    search = {"valid": True, "method": "invalid-model", "steps": 0, "restarts": 0, "seconds": 0.0, "reason": "",
              "hit_time_cap": False}
    return Prepared(case.id, meta, case.graph, case.model_bytes,
                    invalid_inputs(case.graph, sub_seed(case.seed, "invalid-inputs")), search)
