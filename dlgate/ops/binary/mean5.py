from __future__ import annotations

from dlgate.ops.binary.mean import Mean


class Mean5(Mean):
    """Variadic Mean with five broadcast inputs."""
    name = "Mean5"
    arity = 5


OPS = [Mean5]
