"""Fused primitives backed by the CUDA kernels of ``kernels/*.cu``.

On a CuPy device each forward is one kernel launch and each first-order backward one (or,
for layer normalisation, two) more; on other devices the same math runs through the NumPy
reference in :mod:`gradtape.backend.kernels`. Every primitive is differentiable to any
order:

* ``fused_X`` (forward kernel) has a rule that calls ``fused_X_grad`` (backward kernel);
* ``fused_X_grad`` has a rule that differentiates the same function written with gradtape's
  ordinary ops (a tape over a tape), so a second-order derivative passes through the
  backward kernel and higher orders through the composite.

Public functions: :func:`fused_bias_act`, :func:`fused_log_softmax`,
:func:`fused_softmax_cross_entropy`, :func:`fused_sparse_softmax_cross_entropy`,
:func:`fused_layer_norm`.
"""
from __future__ import annotations

from math import prod as _prod

import numpy as np

from ..backend import kernels as K
from ..registry import apply, defop
from ..tensor import Tensor
from ._util import as_tensor, device_array, dtype_name

__all__ = ["fused_bias_act", "fused_log_softmax", "fused_softmax_cross_entropy",
           "fused_sparse_softmax_cross_entropy", "fused_layer_norm", "ACTIVATIONS"]

ACTIVATIONS = tuple(K.ACTIVATIONS)


# --- differentiating a gradient primitive through its composite ----------------------------

def _device_of(array):
    """The device a raw array lives on (rules on raw arrays get no device)."""
    from ..backend import CPU, physical_gpu
    if isinstance(array, np.ndarray):
        return CPU
    dev = getattr(array, "_device", None)          # strict device arrays
    if dev is not None:
        return dev
    if K.is_cupy_array(array):
        return physical_gpu(array.device.id)
    raise TypeError(f"fused ops: cannot tell the device of a {type(array).__name__}")


def _second_order(composite, n_inputs, inner_wrt, outer_wrt):
    """A rule for a gradient primitive ``P(g, *inputs, **attrs)``.

    ``P`` returns the gradients of ``sum(g * composite(*inputs, **attrs))`` with respect to
    the inputs at positions ``inner_wrt`` (one output, or a tuple when several). The rule
    differentiates ``sum(v * P)`` with respect to ``g`` and the inputs at ``outer_wrt`` by
    recording ``composite`` under two tapes, so it works on raw arrays and, when an outer
    tape records the sweep, on tensors (giving third and higher derivatives).
    """
    def rule(ops, needs, v, ans, g, *rest, **attrs):
        from ..ops.reduce import reduce_sum
        from ..tape import GradientTape
        inputs = rest[:n_inputs]
        raw = getattr(ops, "raw", False)
        if raw:
            dev = _device_of(g)

            def wrap(a):
                return None if a is None else Tensor(a, dev) if not isinstance(a, Tensor) else a
            g = wrap(g)
            inputs = [wrap(a) for a in inputs]
            vs = tuple(wrap(a) for a in v) if isinstance(v, tuple) else (wrap(v),)
        else:
            inputs = list(inputs)
            vs = tuple(v) if isinstance(v, tuple) else (v,)
        sources = [g] + [inputs[i] for i in outer_wrt]
        with GradientTape(persistent=False) as outer:
            outer.watch(sources)
            with GradientTape() as inner:
                inner.watch([inputs[i] for i in inner_wrt])
                y = composite(*inputs, **attrs)
                s = reduce_sum(y * g)
            grads = inner.gradient(s, [inputs[i] for i in inner_wrt])
            total = None
            for gk, vk in zip(grads, vs):
                if gk is None or vk is None:
                    continue
                term = reduce_sum(gk * vk)
                total = term if total is None else total + term
        if total is None:
            return (None,) * (1 + len(rest))
        res = outer.gradient(total, sources)
        out = [res[0] if needs[0] else None] + [None] * len(rest)
        for k, i in enumerate(outer_wrt):
            if needs[1 + i]:
                out[1 + i] = res[1 + k]
        if raw:
            out = [None if r is None else r._value for r in out]
        return tuple(out)
    return rule


# --- bias + activation ---------------------------------------------------------------------

def _composite_bias_act(x, b=None, *, activation):
    from . import math as m
    z = x + b if b is not None else x
    if activation == "linear":
        return z
    if activation == "relu":
        return m.maximum(z, 0.0)
    if activation == "gelu":
        return 0.5 * z * (1.0 + m.erf(z * float(K._INV_SQRT_2)))
    if activation == "gelu_tanh":
        return 0.5 * z * (1.0 + m.tanh(float(K._SQRT_2_OVER_PI) * (z + 0.044715 * z * z * z)))
    if activation == "silu":
        return z * m.sigmoid(z)
    if activation == "tanh":
        return m.tanh(z)
    return m.sigmoid(z)


def _bias_act_fwd(xp, x, b=None, *, activation):
    return K.bias_act_forward(xp, x, b, activation)


def _bias_act_vjp(ops, needs, g, ans, x, b=None, *, activation):
    if b is None:
        return (ops.fused_bias_act_grad(g, x, activation=activation),)
    dz = ops.fused_bias_act_grad(g, x, b, activation=activation)
    return (dz if needs[0] else None, dz if needs[1] else None)   # b: summed by the engine


def _bias_act_grad_fwd(xp, g, x, b=None, *, activation):
    return K.bias_act_backward(xp, g, x, b, activation)


def _bias_act_grad_vjp(ops, needs, v, ans, g, x, b=None, *, activation):
    n = 1 if b is None else 2
    rule = _second_order(_composite_bias_act, n, inner_wrt=(0,),
                         outer_wrt=tuple(range(n)))
    if b is None:
        return rule(ops, needs, v, ans, g, x, activation=activation)
    return rule(ops, needs, v, ans, g, x, b, activation=activation)


_bias_act = defop("fused_bias_act", _bias_act_fwd, _bias_act_vjp, save_output=False,
                  broadcasts=True, batch_rule=False)
_bias_act_grad = defop("fused_bias_act_grad", _bias_act_grad_fwd, _bias_act_grad_vjp,
                       save_output=False, broadcasts=True, batch_rule=False)


# Activations whose derivative is a function of their output (linear, relu, tanh, sigmoid)
# save the output instead of the input, as PyTorch's do: the next layer's matmul keeps that
# output anyway, so a layer holds one activation-sized array on the tape instead of two.

def _bias_act_out_vjp(ops, needs, g, ans, x=None, b=None, *, activation):
    dz = ops.fused_act_grad_out(g, ans, activation=activation)
    if b is None and len(needs) == 1:
        return (dz,)
    return (dz if needs[0] else None, dz if needs[1] else None)   # b: summed by the engine


def _act_grad_out_fwd(xp, g, y, *, activation):
    return K.act_backward_from_output(xp, g, y, activation)


def _act_grad_out_vjp(ops, needs, v, ans, g, y, *, activation):
    # P(g, y) = g * d(y): dP/dg = d(y); dP/dy = g * d'(y) with d' = 0 (linear, relu),
    # -2y (tanh), 1 - 2y (sigmoid)
    dg = ops.fused_act_grad_out(v, y, activation=activation) if needs[0] else None
    dy = None
    if needs[1] and activation in ("tanh", "sigmoid"):
        slope = -2.0 * y if activation == "tanh" else 1.0 - 2.0 * y
        dy = v * g * slope
    return dg, dy


_bias_act_out = defop("fused_bias_act_out", _bias_act_fwd, _bias_act_out_vjp,
                      save_inputs=False, save_output=True, broadcasts=True, batch_rule=False)
_act_grad_out = defop("fused_act_grad_out", _act_grad_out_fwd, _act_grad_out_vjp,
                      save_output=False, batch_rule=False)


def _float_tensor(x, opname):
    x = as_tensor(x, opname)
    if x._value.dtype.kind != "f":
        raise TypeError(f"{opname}: expected a floating-point tensor, got {dtype_name(x)}")
    return x


def _like(opname, ref: Tensor, other, what):
    """``other`` as a tensor of ``ref``'s dtype on ``ref``'s device (or a clear error)."""
    if not isinstance(other, Tensor):
        other = Tensor(device_array(other, ref._device, dtype=ref._value.dtype), ref._device)
    if other._value.dtype != ref._value.dtype:
        raise TypeError(f"{opname}: {what} has dtype {dtype_name(other)}, the input "
                        f"{dtype_name(ref)}; use gt.cast")
    if other._device is not ref._device:
        from ..backend import DeviceError
        raise DeviceError(f"{opname}: {what} is on {other._device}, the input on {ref._device}")
    return other


def fused_bias_act(x, b=None, activation: str = "relu", name=None) -> Tensor:
    """``activation(x + b)`` in one kernel (``b`` of shape ``[C]`` added along the last axis
    of ``x``, or None). ``activation``: linear, relu, gelu (exact, erf), gelu_tanh, silu,
    tanh, sigmoid. The gradient is one more kernel; second derivatives are supported."""
    x = _float_tensor(x, "fused_bias_act")
    if activation not in K.ACTIVATIONS:
        raise ValueError(f"fused_bias_act: unknown activation {activation!r}; use one of "
                         f"{', '.join(ACTIVATIONS)}")
    attrs = {"activation": activation}
    op = _bias_act_out if activation in K.FROM_OUTPUT else _bias_act
    if b is None:
        return apply(op, (x,), attrs)
    b = _like("fused_bias_act", x, b, "the bias")
    c = x._value.shape[-1] if x._value.ndim else 1
    if b._value.ndim != 1 or b._value.shape[0] != c:
        raise ValueError(f"fused_bias_act: the bias must have shape ({c},) to match the last "
                         f"axis of x {tuple(x._value.shape)}, got {tuple(b._value.shape)}")
    return apply(op, (x, b), attrs)


# --- log-softmax ------------------------------------------------------------------------------

def _log_softmax_fwd(xp, x):
    return K.log_softmax(xp, x)


def _log_softmax_vjp(ops, needs, g, ans, x):
    last = (g.ndim - 1,)
    total = ops.reduce_sum(g, axis=last, keepdims=True, in_shape=tuple(g.shape))
    return (g - ops.exp(ans) * total,)


_log_softmax = defop("fused_log_softmax", _log_softmax_fwd, _log_softmax_vjp,
                     save_inputs=False, save_output=True)


def fused_log_softmax(logits, name=None) -> Tensor:
    """Log-softmax over the last axis, one kernel launch (one block per row) on a GPU."""
    x = _float_tensor(logits, "fused_log_softmax")
    if x._value.ndim == 0:
        raise ValueError("fused_log_softmax: logits must have at least one axis")
    return apply(_log_softmax, (x,))


# --- softmax cross-entropy --------------------------------------------------------------------

def _rows_expand(ops, g):
    return ops.reshape(g, shape=tuple(g.shape) + (1,), in_shape=tuple(g.shape))


def _composite_sparse_xent(labels, logits):
    from . import reduce as r
    from .shape import one_hot
    c = logits._value.shape[-1]
    picked = r.reduce_sum(logits * one_hot(labels, c, dtype=logits.dtype), axis=-1)
    return r.reduce_logsumexp(logits, axis=-1) - picked


def _composite_dense_xent(labels, logits):
    from . import reduce as r
    lse = r.reduce_logsumexp(logits, axis=-1, keepdims=True)
    return r.reduce_sum(labels * (lse - logits), axis=-1)


def _sparse_fwd(xp, labels, logits):
    return K.softmax_xent_sparse(xp, logits, labels, want_loss=True)[0]


def _sparse_vjp(ops, needs, g, ans, labels, logits):
    return (None, ops.fused_sparse_softmax_cross_entropy_grad(g, labels, logits)
            if needs[1] else None)


def _sparse_grad_fwd(xp, g, labels, logits):
    return K.softmax_xent_sparse(xp, logits, labels, scale=g, want_loss=False,
                                 want_grad=True)[1]


_sparse_grad_vjp = _second_order(_composite_sparse_xent, 2, inner_wrt=(1,), outer_wrt=(1,))

_sparse = defop("fused_sparse_softmax_cross_entropy", _sparse_fwd, _sparse_vjp,
                save_output=False, batch_rule=False)
_sparse_grad = defop("fused_sparse_softmax_cross_entropy_grad", _sparse_grad_fwd,
                     _sparse_grad_vjp, save_output=False, batch_rule=False)


def _dense_fwd(xp, labels, logits):
    return K.softmax_xent_dense(xp, logits, labels, want_loss=True)[0]


def _dense_vjp(ops, needs, g, ans, labels, logits):
    d_labels = d_logits = None
    if needs[0]:
        d_labels = -(_rows_expand(ops, g) * ops.fused_log_softmax(logits))
    if needs[1]:
        d_logits = ops.fused_softmax_cross_entropy_grad(g, labels, logits)
    return d_labels, d_logits


def _dense_grad_fwd(xp, g, labels, logits):
    return K.softmax_xent_dense(xp, logits, labels, scale=g, want_loss=False,
                                want_grad=True)[1]


_dense_grad_vjp = _second_order(_composite_dense_xent, 2, inner_wrt=(1,), outer_wrt=(0, 1))

_dense = defop("fused_softmax_cross_entropy", _dense_fwd, _dense_vjp, save_output=False,
               batch_rule=False)
_dense_grad = defop("fused_softmax_cross_entropy_grad", _dense_grad_fwd, _dense_grad_vjp,
                    save_output=False, batch_rule=False)


def _flatten_rows(opname, logits):
    from .shape import reshape
    shape = tuple(logits._value.shape)
    if len(shape) == 0:
        raise ValueError(f"{opname}: logits must have a class axis, got a scalar")
    if len(shape) == 2:
        return logits, shape[:-1]
    return reshape(logits, (_prod(shape[:-1]), shape[-1])), shape[:-1]


def _unflatten(t, lead):
    from .shape import reshape
    return t if len(lead) == 1 else reshape(t, lead)


def fused_sparse_softmax_cross_entropy(labels, logits, name=None) -> Tensor:
    """Per-example cross-entropy of ``softmax(logits)`` against integer class ``labels``
    (``labels.shape == logits.shape[:-1]``): loss and gradient each one pass per row.
    On devices the host can read, a label outside ``[0, C)`` raises; on a GPU it gives NaN
    (as TensorFlow's GPU kernel), since checking would make the host wait."""
    opname = "fused_sparse_softmax_cross_entropy"
    x = _float_tensor(logits, opname)
    lab = labels if isinstance(labels, Tensor) else Tensor(
        device_array(labels, x._device), x._device)
    if lab._value.dtype.kind not in "iu":
        raise TypeError(f"{opname}: labels must be integers, got {dtype_name(lab)}")
    if lab._device is not x._device:
        from ..backend import DeviceError
        raise DeviceError(f"{opname}: labels are on {lab._device}, logits on {x._device}")
    if tuple(lab._value.shape) != tuple(x._value.shape[:-1]):
        raise ValueError(f"{opname}: labels of shape {tuple(lab._value.shape)} do not match "
                         f"logits of shape {tuple(x._value.shape)} (expected "
                         f"{tuple(x._value.shape[:-1])})")
    c = x._value.shape[-1] if x._value.ndim else 0
    if x._device.host_visible and lab._value.size:
        lo, hi = int(lab._value.min()), int(lab._value.max())
        if lo < 0 or hi >= c:
            bad = lo if lo < 0 else hi
            raise ValueError(f"{opname}: label {bad} is outside [0, {c}) for logits of shape "
                             f"{tuple(x._value.shape)}")
    x2, lead = _flatten_rows(opname, x)
    if len(lead) != 1:
        from .shape import reshape
        lab = reshape(lab, (-1,))
    return _unflatten(apply(_sparse, (lab, x2)), lead)


def fused_softmax_cross_entropy(labels, logits, name=None) -> Tensor:
    """Per-example cross-entropy ``sum(labels * -log_softmax(logits), -1)`` with label
    distributions of the logits' shape; differentiable in both. Loss and gradient are each
    one pass per row on a GPU."""
    opname = "fused_softmax_cross_entropy"
    x = _float_tensor(logits, opname)
    lab = _like(opname, x, labels, "labels")
    if tuple(lab._value.shape) != tuple(x._value.shape):
        raise ValueError(f"{opname}: labels of shape {tuple(lab._value.shape)} and logits of "
                         f"shape {tuple(x._value.shape)} differ")
    x2, lead = _flatten_rows(opname, x)
    lab2, _ = _flatten_rows(opname, lab)
    return _unflatten(apply(_dense, (lab2, x2)), lead)


# --- layer normalisation ------------------------------------------------------------------------

def _composite_layer_norm(x, gamma, beta, *, epsilon):
    from . import math as m
    from . import reduce as r
    mean = r.reduce_mean(x, axis=-1, keepdims=True)
    d = x - mean
    var = r.reduce_mean(d * d, axis=-1, keepdims=True)
    return d * m.rsqrt(var + float(epsilon)) * gamma + beta


def _ln_fwd(xp, x, gamma, beta, *, epsilon):
    return K.layer_norm_forward(xp, x, gamma, beta, epsilon)


def _ln_vjp(ops, needs, g, ans, x, gamma, beta, *, epsilon):
    dx, dgamma, dbeta = ops.fused_layer_norm_grad(g, x, gamma, epsilon=epsilon)
    return (dx if needs[0] else None, dgamma if needs[1] else None,
            dbeta if needs[2] else None)


def _ln_grad_fwd(xp, g, x, gamma, *, epsilon):
    return list(K.layer_norm_backward(xp, g, x, gamma, epsilon))


def _ln_grad_composite(x, gamma, beta, *, epsilon):
    return _composite_layer_norm(x, gamma, beta, epsilon=epsilon)


def _ln_grad_vjp(ops, needs, v, ans, g, x, gamma, *, epsilon):
    # dbeta = sum(g) does not depend on beta: a zero beta stands in for it.
    from .core import zeros_like
    rule = _second_order(_ln_grad_composite, 3, inner_wrt=(0, 1, 2), outer_wrt=(0, 1))
    if getattr(ops, "raw", False):
        beta = gamma * 0
    else:
        beta = zeros_like(gamma)
    out = rule(ops, needs + (False,), v, ans, g, x, gamma, beta, epsilon=epsilon)
    return out[:3]


_ln = defop("fused_layer_norm", _ln_fwd, _ln_vjp, save_output=False, batch_rule=False)
_ln_grad = defop("fused_layer_norm_grad", _ln_grad_fwd, _ln_grad_vjp, multi=True,
                 save_output=False, batch_rule=False)


def fused_layer_norm(x, gamma=None, beta=None, epsilon: float = 1e-3, name=None) -> Tensor:
    """Layer normalisation over the last axis: ``(x - mean) / sqrt(var + epsilon) * gamma +
    beta`` with ``gamma``, ``beta`` of shape ``[C]`` (None: ones / zeros). One kernel
    launch forward (one block per row), two backward."""
    opname = "fused_layer_norm"
    x = _float_tensor(x, opname)
    if x._value.ndim == 0:
        raise ValueError(f"{opname}: x must have at least one axis")
    c = x._value.shape[-1]
    dev = x._device
    dt = x._value.dtype
    with dev.activate():
        if gamma is None:
            gamma = Tensor(dev.xp.ones((c,), dtype=dt), dev)
        if beta is None:
            beta = Tensor(dev.xp.zeros((c,), dtype=dt), dev)
    gamma = _like(opname, x, gamma, "gamma")
    beta = _like(opname, x, beta, "beta")
    for t, what in ((gamma, "gamma"), (beta, "beta")):
        if tuple(t._value.shape) != (c,):
            raise ValueError(f"{opname}: {what} must have shape ({c},) to match x "
                             f"{tuple(x._value.shape)}, got {tuple(t._value.shape)}")
    eps = float(epsilon)
    if not eps > 0:
        raise ValueError(f"{opname}: epsilon must be positive, got {epsilon!r}")
    return apply(_ln, (x, gamma, beta), {"epsilon": eps})
