"""Loss terms for restricted-domain operators (NNSmith, Table 2).

A predicate is rewritten to ``f(x) <= 0`` or ``f(x) < 0`` and turned into a loss that is
positive exactly when some element violates it: ``sum(max(f(x), 0))``, or with ``+eps``
for strict inequalities. Losses are computed in float64 so float16 graphs search well.
"""
from __future__ import annotations

import torch

EPS = 1e-10

#: Largest x for which exp(x) stays finite, with margin, per dtype.
LOG_MAX = {"float16": 10.0, "float32": 80.0, "float64": 700.0}


def _f(x):
    return x.double()


def le0(x):
    """Loss for ``x <= 0``."""
    return _f(x).clamp(min=0).sum()


def lt0(x):
    """Loss for ``x < 0``."""
    return (_f(x) + EPS).clamp(min=0).sum()


def ge0(x):
    """Loss for ``x >= 0``."""
    return le0(-_f(x))


def gt0(x):
    """Loss for ``x > 0``."""
    return lt0(-_f(x))


def log_max(x) -> float:
    return LOG_MAX.get(str(x.dtype).replace("torch.", ""), 80.0)


# -- proxy derivatives (NNSmith §3.3) ------------------------------------------------------
# Forward values are exactly those of the plain operator; only the backward pass differs,
# so gradients reach the search's parameters through flat or stepwise regions.
# The specs use them only when their input requires grad (i.e. inside the input search).

#: Gradient slope on a flat region (NNSmith's SLOPE, like LeakyReLU).
PROXY_SLOPE = 0.1


class _ProxyRelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.relu(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.where(x > 0, g, g * PROXY_SLOPE)


class _ProxyClip(torch.autograd.Function):
    """``min(max(x, lo), hi)`` (each bound optional) as Clip's torch implementation computes it."""

    @staticmethod
    def forward(ctx, x, lo, hi):
        y = x
        inside = torch.ones_like(x, dtype=torch.bool)
        if lo is not None:
            y = torch.maximum(y, torch.tensor(lo, dtype=x.dtype))
            inside &= x >= lo
        if hi is not None:
            y = torch.minimum(y, torch.tensor(hi, dtype=x.dtype))
            inside &= x <= hi
        ctx.save_for_backward(inside)
        return y if y is not x else x.clone()

    @staticmethod
    def backward(ctx, g):
        (inside,) = ctx.saved_tensors
        return torch.where(inside, g, g * PROXY_SLOPE), None, None


def _straight_through(fn):
    class _ST(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return fn(x)

        @staticmethod
        def backward(ctx, g):
            return g

    return _ST


_ProxyFloor = _straight_through(torch.floor)
_ProxyCeil = _straight_through(torch.ceil)
_ProxyRound = _straight_through(torch.round)


def proxy_relu(x):
    """``torch.relu`` with slope 0.1 instead of 0 for ``x <= 0``."""
    return _ProxyRelu.apply(x)


def proxy_clip(x, lo=None, hi=None):
    """Clip with slope 0.1 outside ``[lo, hi]``."""
    return _ProxyClip.apply(x, lo, hi)


def proxy_floor(x):
    """``torch.floor`` with an identity (straight-through) gradient."""
    return _ProxyFloor.apply(x)


def proxy_ceil(x):
    """``torch.ceil`` with an identity (straight-through) gradient."""
    return _ProxyCeil.apply(x)


def proxy_round(x):
    """``torch.round`` (half to even) with an identity (straight-through) gradient."""
    return _ProxyRound.apply(x)
