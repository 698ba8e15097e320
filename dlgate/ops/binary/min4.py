from __future__ import annotations

from dlgate.ops.binary.min import Min


class Min4(Min):
    """Variadic Min with four broadcast inputs."""
    name = "Min4"
    arity = 4


OPS = [Min4]
