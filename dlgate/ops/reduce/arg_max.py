from __future__ import annotations

import torch

from dlgate.ops.reduce._shared import Arg


class ArgMax(Arg):
    onnx_op = "ArgMax"
    fn = torch.argmax

    siblings = "arg-extremum"


OPS = [ArgMax]
