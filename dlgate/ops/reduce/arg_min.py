from __future__ import annotations

import torch

from dlgate.ops.reduce._shared import Arg


class ArgMin(Arg):
    onnx_op = "ArgMin"
    fn = torch.argmin

    siblings = "arg-extremum"


OPS = [ArgMin]
