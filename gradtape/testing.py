"""Numerical gradient checks for gradtape functions (and users' custom gradients)."""
from __future__ import annotations

import numpy as np

from . import nest
from .tape import GradientTape
from .tensor import Tensor, constant

__all__ = ["check_grads", "numerical_vjp", "GradientCheckError"]


class GradientCheckError(AssertionError):
    """A gradient disagrees with finite differences."""


def _as64(args):
    return [np.asarray(a.numpy() if isinstance(a, Tensor) else a, dtype=np.float64) for a in args]


def _scalarize(f, weights_holder):
    """``sum(w * f(*args))`` with fixed random weights ``w`` (a random vjp direction)."""
    def g(*args):
        out = f(*args)
        outs = nest.flatten(out)
        total = None
        for k, o in enumerate(outs):
            if not isinstance(o, Tensor) or o._value.dtype.kind != "f":
                continue
            w = weights_holder.get(k)
            if w is None:
                rng = np.random.default_rng(1234 + k)
                w = weights_holder[k] = rng.standard_normal(tuple(o._value.shape))
            wt = Tensor(o._device.asarray(w.astype(o._value.dtype)), o._device)
            from .ops.reduce import reduce_sum
            term = reduce_sum(o * wt)
            total = term if total is None else total + term
        return total
    return g


def _eval(f, arrays, wrt, device, dtype):
    with _scope(device):
        args = [constant(a.astype(dtype)) if i in wrt else a for i, a in enumerate(arrays)]
    return f(*args)


def _scope(device):
    from .backend import device_scope
    import contextlib
    return device_scope(device) if device is not None else contextlib.nullcontext()


def numerical_vjp(scalar_f, arrays, wrt, eps, device=None):
    """Central-difference directional derivatives of a scalar function, in float64."""
    rng = np.random.default_rng(42)
    dirs = {i: rng.standard_normal(arrays[i].shape) for i in wrt}

    def at(sign):
        shifted = [a + sign * eps * dirs[i] if i in wrt else a for i, a in enumerate(arrays)]
        with _scope(device):
            args = [constant(a) if i in wrt else a for i, a in enumerate(shifted)]
        return float(scalar_f(*args).numpy())
    return (at(+1) - at(-1)) / (2 * eps), dirs


def _grads(scalar_f, arrays, wrt, device, dtype):
    with _scope(device):
        args = [constant(a.astype(dtype)) if i in wrt else a for i, a in enumerate(arrays)]
    with GradientTape() as tape:
        for i in wrt:
            tape.watch(args[i])
        y = scalar_f(*args)
    gs = tape.gradient(y, [args[i] for i in wrt])
    return [None if g is None else np.asarray(g.numpy(), dtype=np.float64) for g in gs]


def check_grads(f, args, order=2, wrt=None, eps=1e-6, rtol=1e-5, atol=1e-6, device=None):
    """Check the reverse-mode gradients of ``f`` (up to ``order``) against float64 central
    differences along a random direction. ``wrt`` lists the argument positions to check
    (default: every floating argument). Raises :class:`GradientCheckError`."""
    arrays = _as64(args)
    if wrt is None:
        wrt = [i for i, a in enumerate(args)
               if np.asarray(a.numpy() if isinstance(a, Tensor) else a).dtype.kind == "f"]
    wrt = list(wrt)
    holder = {}
    sf = _scalarize(f, holder)
    _check_first(sf, arrays, wrt, eps, rtol, atol, device, f)
    if order >= 2:
        # second order: d/dx <grad f(x), v> against differences of the first-order gradient
        rng = np.random.default_rng(7)
        vs = {i: rng.standard_normal(arrays[i].shape) for i in wrt}

        def gv(*targs):
            with GradientTape() as inner:
                for i in wrt:
                    inner.watch(targs[i])
                y = sf(*targs)
            gs = inner.gradient(y, [targs[i] for i in wrt])
            total = None
            for i, g in zip(wrt, gs):
                if g is None:
                    continue
                vt = Tensor(g._device.asarray(vs[i].astype(g._value.dtype)), g._device)
                from .ops.reduce import reduce_sum
                term = reduce_sum(g * vt)
                total = term if total is None else total + term
            if total is None:
                return constant(np.zeros((), dtype=np.float64))
            return total
        _check_first(gv, arrays, wrt, eps, rtol * 10, atol * 10, device, f, what="second-order")


def _check_first(sf, arrays, wrt, eps, rtol, atol, device, f, what="first-order"):
    num, dirs = numerical_vjp(sf, arrays, wrt, eps, device)
    gs = _grads(sf, arrays, wrt, device, np.float64)
    analytic = 0.0
    for i, g in zip(wrt, gs):
        if g is not None:
            if g.shape != arrays[i].shape:
                raise GradientCheckError(f"{getattr(f, '__name__', f)}: {what} gradient of "
                                         f"argument {i} has shape {g.shape}, expected "
                                         f"{arrays[i].shape}")
            analytic += float(np.sum(g * dirs[i]))
    if not np.isclose(analytic, num, rtol=rtol, atol=atol):
        raise GradientCheckError(f"{getattr(f, '__name__', f)}: {what} directional derivative "
                                 f"{analytic!r} != finite differences {num!r}")
