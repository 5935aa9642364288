"""Neural-network primitives: activations, softmax and cross-entropies, bias_add, l2_loss,
convolution and pooling, each forward next to its reverse rule.

Rules are written with Python operators and ``ops.<primitive>`` so a recording outer tape
gets second derivatives. Hot rules also take a fast path on raw arrays (``ops.raw``): the
same arithmetic with in-place updates, fewer temporaries.

Layout conventions follow TensorFlow: images are NHWC, filters HWIO.
"""
from __future__ import annotations

import functools
import math as _pymath

import numpy as np

from ..backend import device_of
from ..backend import kernels as K
from ..registry import InvalidArgumentError, apply, apply1, defop
from ..tensor import Tensor, _speedups
from ._util import as_tensor, device_array, dtype_name, normalize_axis, operand
from .core import sum_leading
from .math import _sigmoid_fwd

__all__ = [
    "relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "swish", "softsign",
    "softmax", "log_softmax", "sigmoid_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits", "sparse_softmax_cross_entropy_with_logits", "l2_loss",
    "bias_add", "conv1d", "conv2d", "conv2d_transpose", "max_pool2d", "avg_pool2d", "max_pool",
    "avg_pool", "moments", "batch_normalization", "l2_normalize",
    "dropout", "embedding_lookup", "in_top_k", "weighted_cross_entropy_with_logits",
    "log_poisson_loss", "crelu", "weighted_moments", "normalize_moments", "depth_to_space",
    "space_to_depth", "local_response_normalization", "lrn", "atrous_conv2d",
    "conv1d_transpose", "conv3d", "conv3d_transpose", "max_pool3d", "avg_pool3d", "convolution",
    "conv_transpose", "pool", "sufficient_statistics",
    "zero_fraction",
]


def _float_input(x, opname: str) -> Tensor:
    if not isinstance(x, Tensor):
        x = as_tensor(x, opname)
    if x._value.dtype.kind != "f":
        raise TypeError(f"{opname}: expected a floating-point tensor, got {dtype_name(x)}")
    return x


def _same_float(opname, ref: Tensor, other, what):
    """``other`` as a tensor of ``ref``'s float dtype and device (labels, biases)."""
    if isinstance(other, Tensor):
        if other._value.dtype != ref._value.dtype:
            raise TypeError(f"{opname}: {what} has dtype {dtype_name(other)}, the logits/value "
                            f"have {dtype_name(ref)}; use gt.cast")
        if other._device is not ref._device:
            raise ValueError(f"{opname}: {what} is on {other._device}, the other input on "
                             f"{ref._device}")
        return other
    out = operand(opname, other, ref)
    if not isinstance(out, Tensor):
        out = Tensor(ref._device.asarray(np.asarray(out), dtype=ref._value.dtype), ref._device)
    return out


def _neg_axis(axis, ndim, opname):
    if axis is None:
        axis = -1
    ax = normalize_axis(axis, ndim, opname)
    if len(ax) != 1:
        raise ValueError(f"{opname}: axis must be a single int, got {axis!r}")
    return ax[0] - ndim if ndim else -1


# --- relu family ----------------------------------------------------------------------------

def _relu_fwd(xp, x):
    return xp.maximum(x, 0)


def _relu_vjp(ops, needs, g, ans, x):
    # TF's ReluGrad: the gradient is 0 at the kink (and relu'' = 0 everywhere).
    return (ops.relu_grad(g, ans),)


def _relu_grad_fwd(xp, g, y):
    return g * (y > 0)


def _relu_grad_vjp(ops, needs, v, ans, g, y):
    # As TF's ReluGrad gradient: linear in g, zero (not unconnected) in y. ``v`` has y's
    # shape (plus any leading cotangent axes), so zeros_like(v) fits both cases.
    return (ops.relu_grad(v, y) if needs[0] else None,
            ops.zeros_like(v) if needs[1] else None)


_relu = defop("relu", _relu_fwd, _relu_vjp, save_inputs=False, save_output=True)
_relu_grad = defop("relu_grad", _relu_grad_fwd, _relu_grad_vjp, save_output=False)
if _speedups is not None:
    _speedups.set_rule("relu", _relu_vjp)   # the sweep computes g * (y > 0) itself


def relu(features, name=None) -> Tensor:
    """``max(features, 0)``; the gradient is 0 at 0 (as TensorFlow)."""
    return apply1(_relu, _float_input(features, "relu"))


def _relu6_fwd(xp, x):
    return xp.minimum(xp.maximum(x, 0), 6)


def _relu6_vjp(ops, needs, g, ans, x):
    return (ops.relu6_grad(g, ans),)


def _relu6_grad_fwd(xp, g, y):
    return g * ((y > 0) & (y < 6))


def _relu6_grad_vjp(ops, needs, v, ans, g, y):
    return (ops.relu6_grad(v, y) if needs[0] else None,
            ops.zeros_like(v) if needs[1] else None)


_relu6 = defop("relu6", _relu6_fwd, _relu6_vjp, save_inputs=False, save_output=True)
_relu6_grad = defop("relu6_grad", _relu6_grad_fwd, _relu6_grad_vjp, save_output=False)


def relu6(features, name=None) -> Tensor:
    """``min(max(features, 0), 6)``; the gradient is 0 at both kinks."""
    return apply1(_relu6, _float_input(features, "relu6"))


def _leaky_fwd(xp, x, alpha):
    if 0 <= alpha <= 1:
        return xp.maximum(x, x * alpha)
    return xp.where(x > 0, x, x * alpha)


def _leaky_vjp(ops, needs, g, ans, x, alpha):
    return (ops.leaky_relu_grad(g, x, alpha=alpha),)


def _leaky_grad_fwd(xp, g, x, alpha):
    # Gradient alpha at 0 (TF's LeakyReluGrad tests features > 0).
    return xp.where(x > 0, g, g * alpha)


def _leaky_grad_vjp(ops, needs, v, ans, g, x, alpha):
    return (ops.leaky_relu_grad(v, x, alpha=alpha) if needs[0] else None,
            ops.zeros_like(v) if needs[1] else None)


_leaky = defop("leaky_relu", _leaky_fwd, _leaky_vjp, save_inputs=True, save_output=False)
_leaky_grad = defop("leaky_relu_grad", _leaky_grad_fwd, _leaky_grad_vjp, save_output=False)


def leaky_relu(features, alpha=0.2, name=None) -> Tensor:
    """``features`` where positive, ``alpha * features`` elsewhere."""
    x = _float_input(features, "leaky_relu")
    return apply1(_leaky, x, {"alpha": float(alpha)})


def _elu_fwd(xp, x):
    return xp.where(x > 0, x, xp.expm1(xp.minimum(x, 0)))


def _elu_vjp(ops, needs, g, ans, x):
    return (ops.where(ans > 0, g, g * (ans + 1)),)


_elu = defop("elu", _elu_fwd, _elu_vjp, save_inputs=False, save_output=True)


def elu(features, name=None) -> Tensor:
    """``features`` where positive, ``exp(features) - 1`` elsewhere."""
    return apply1(_elu, _float_input(features, "elu"))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _selu_fwd(xp, x):
    return _SELU_SCALE * xp.where(x > 0, x, _SELU_ALPHA * xp.expm1(xp.minimum(x, 0)))


def _selu_vjp(ops, needs, g, ans, x):
    # TF's SeluGrad tests outputs < 0: the gradient at 0 is scale.
    return (ops.where(ans < 0, g * (ans + _SELU_SCALE * _SELU_ALPHA), g * _SELU_SCALE),)


_selu = defop("selu", _selu_fwd, _selu_vjp, save_inputs=False, save_output=True)


def selu(features, name=None) -> Tensor:
    """Scaled exponential linear unit (Klambauer et al., 2017)."""
    return apply1(_selu, _float_input(features, "selu"))


# --- smooth activations -----------------------------------------------------------------------

_INV_SQRT2 = 1.0 / _pymath.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / _pymath.sqrt(2.0 * _pymath.pi)
_GELU_K = _pymath.sqrt(2.0 / _pymath.pi)
_GELU_A = 0.044715


def _gelu_fwd(xp, x, approximate):
    if approximate:
        t = xp.tanh(_GELU_K * (x + _GELU_A * (x * x * x)))
        t += 1
        t *= x
        t *= 0.5
        return t
    # 0.5 * x * erfc(-x / sqrt(2)): accurate in the negative tail, where 1 + erf cancels
    e = _erfc(xp, x * -_INV_SQRT2)
    e *= x
    e *= 0.5
    return e


def _erfc(xp, x):
    return device_of(xp, x).erfc(x)


def _gelu_vjp(ops, needs, g, ans, x, approximate):
    if approximate:
        x2 = x * x
        t = ops.tanh(_GELU_K * (x + _GELU_A * (x2 * x)))
        d = 0.5 * (1 + t) + (0.5 * _GELU_K) * x * (1 - t * t) * (1 + (3 * _GELU_A) * x2)
        return (g * d,)
    cdf = 0.5 * ops.erfc(x * -_INV_SQRT2)   # (1 + erf would cancel in the negative tail)
    pdf = ops.exp(x * x * -0.5) * _INV_SQRT_2PI
    return (g * (cdf + x * pdf),)


_gelu = defop("gelu", _gelu_fwd, _gelu_vjp, save_inputs=True, save_output=False)


def gelu(features, approximate=False, name=None) -> Tensor:
    """Gaussian error linear unit: ``x * Phi(x)``, or its tanh approximation."""
    x = _float_input(features, "gelu")
    return apply1(_gelu, x, {"approximate": bool(approximate)})


def _silu_fwd(xp, x, beta):
    s = _sigmoid_fwd(xp, x * beta if beta != 1.0 else x)
    s *= x
    return s


def _silu_vjp(ops, needs, g, ans, x, beta):
    s = ops.sigmoid(x * beta if beta != 1.0 else x)
    return (g * (s * (1 + (x * beta) * (1 - s))),)


_silu = defop("silu", _silu_fwd, _silu_vjp, save_inputs=True, save_output=False)


def silu(features, beta=1.0, name=None) -> Tensor:
    """``features * sigmoid(beta * features)`` (also called swish)."""
    x = _float_input(features, "silu")
    return apply1(_silu, x, {"beta": float(beta)})


swish = silu


def softsign(features, name=None) -> Tensor:
    """``features / (1 + |features|)``."""
    from .math import abs as _abs
    x = _float_input(features, "softsign")
    return x / (_abs(x) + 1)


# --- softmax family ---------------------------------------------------------------------------

def _softmax_fwd(xp, x, axis):
    e = x - x.max(axis=axis, keepdims=True)
    xp.exp(e, out=e)
    e /= e.sum(axis=axis, keepdims=True)
    return e


def _reduce_keep(ops, t, axis):
    """``sum(t, axis, keepdims=True)`` through the ``reduce_sum`` primitive."""
    return ops.reduce_sum(t, axis=(t.ndim + axis,), keepdims=True, in_shape=tuple(t.shape))


def _softmax_vjp(ops, needs, g, ans, x, axis):
    # dx = y * (g - sum(g * y))
    if ops.raw:
        gx = g * ans
        s = gx.sum(axis=axis, keepdims=True)
        ops.xp.subtract(g, s, out=gx)
        gx *= ans
        return (gx,)
    gy = g * ans
    return (gy - ans * _reduce_keep(ops, gy, axis),)


_softmax = defop("softmax", _softmax_fwd, _softmax_vjp, save_inputs=False, save_output=True)


def softmax(logits, axis=None, name=None) -> Tensor:
    """``exp(logits) / sum(exp(logits), axis)``, computed without overflow."""
    x = _float_input(logits, "softmax")
    if x._value.ndim == 0:
        raise ValueError("softmax: logits must have rank >= 1, got a scalar")
    return apply1(_softmax, x, {"axis": _neg_axis(axis, x._value.ndim, "softmax")})


def _log_softmax_fwd(xp, x, axis):
    y = x - x.max(axis=axis, keepdims=True)
    t = xp.exp(y)
    s = t.sum(axis=axis, keepdims=True)
    del t
    y -= xp.log(s)
    return y


def _log_softmax_vjp(ops, needs, g, ans, x, axis):
    # dx = g - softmax * sum(g)
    if ops.raw:
        s = g.sum(axis=axis, keepdims=True)
        t = ops.xp.exp(ans)
        if t.shape == g.shape:
            t *= s
            ops.xp.subtract(g, t, out=t)
            return (t,)
        return (g - t * s,)
    return (g - ops.exp(ans) * _reduce_keep(ops, g, axis),)


_log_softmax = defop("log_softmax", _log_softmax_fwd, _log_softmax_vjp, save_inputs=False,
                     save_output=True)


def log_softmax(logits, axis=None, name=None) -> Tensor:
    """``logits - log(sum(exp(logits), axis))``, computed without overflow."""
    x = _float_input(logits, "log_softmax")
    if x._value.ndim == 0:
        raise ValueError("log_softmax: logits must have rank >= 1, got a scalar")
    return apply1(_log_softmax, x, {"axis": _neg_axis(axis, x._value.ndim, "log_softmax")})


# --- cross-entropies --------------------------------------------------------------------------

def _sce_fwd(xp, z, x):
    # max(x, 0) - x * z + log(1 + exp(-|x|)): no overflow for any x.
    out = xp.abs(x)
    xp.negative(out, out=out)
    xp.exp(out, out=out)
    xp.log1p(out, out=out)
    out += xp.maximum(x, 0)
    out -= x * z
    return out


def _sce_vjp(ops, needs, g, ans, z, x):
    gz = -g * x if needs[0] else None
    gx = None
    if needs[1]:
        if ops.raw:
            s = ops.sigmoid(x)
            s -= z
            gx = s * g if s.shape != g.shape else ops.xp.multiply(s, g, out=s)
        else:
            gx = (ops.sigmoid(x) - z) * g
    return gz, gx


_sce = defop("sigmoid_cross_entropy_with_logits", _sce_fwd, _sce_vjp, save_output=False)


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None) -> Tensor:
    """Elementwise logistic loss ``-z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x))``, stable
    for any logits. ``labels`` and ``logits`` have the same shape."""
    opname = "sigmoid_cross_entropy_with_logits"
    if labels is None or logits is None:
        raise ValueError(f"{opname}: both labels and logits must be given")
    x = _float_input(logits, opname)
    z = _same_float(opname, x, labels, "labels")
    if tuple(z._value.shape) != tuple(x._value.shape):
        raise ValueError(f"{opname}: logits and labels must have the same shape, got "
                         f"{tuple(x._value.shape)} and {tuple(z._value.shape)}")
    return apply(_sce, (z, x))


def _expand_reduced(ops, g, axis):
    """A cotangent of a tensor reduced over ``axis`` (negative), with that axis put back."""
    pos = g.ndim + axis + 1
    shape = tuple(g.shape[:pos]) + (1,) + tuple(g.shape[pos:])
    if ops.raw:
        return g.reshape(shape)
    return ops.reshape(g, shape=shape, in_shape=tuple(g.shape))


def _softmax_ce_fwd(xp, z, x, axis):
    sh = x - x.max(axis=axis, keepdims=True)
    t = xp.exp(sh)
    lse = xp.log(t.sum(axis=axis, keepdims=True))
    del t
    sh -= lse          # log-softmax, finite for finite logits
    sh *= z
    out = xp.asarray(sh.sum(axis=axis))
    return -out


def _softmax_ce_vjp(ops, needs, g, ans, z, x, axis):
    gk = _expand_reduced(ops, g, axis)
    gz = gx = None
    if needs[0]:
        gz = -gk * ops.log_softmax(x, axis=axis)
    if needs[1]:
        # d/dx = softmax(x) * sum(z) - z  (= softmax - z for labels that are distributions)
        if ops.raw:
            p = ops.softmax(x, axis=axis)
            p *= z.sum(axis=axis, keepdims=True)
            p -= z
            gx = p * gk if p.shape != np.broadcast_shapes(p.shape, gk.shape) else \
                ops.xp.multiply(p, gk, out=p)
        else:
            zsum = _reduce_keep(ops, z, axis)
            gx = gk * (ops.softmax(x, axis=axis) * zsum - z)
    return gz, gx


_softmax_ce = defop("softmax_cross_entropy_with_logits", _softmax_ce_fwd, _softmax_ce_vjp,
                    save_output=False)


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None) -> Tensor:
    """``-sum(labels * log_softmax(logits), axis)``: one loss per example, stable for any
    finite logits. ``labels`` holds a probability distribution along ``axis``; as TF, labels
    are cast to the logits' dtype, and float16 logits are computed in float32.

    The gradient with respect to ``logits`` is ``softmax(logits) * sum(labels) - labels``:
    TensorFlow's ``softmax - labels`` whenever the labels sum to one.
    """
    from .core import cast
    opname = "softmax_cross_entropy_with_logits"
    x = _float_input(logits, opname)
    z = labels if isinstance(labels, Tensor) else as_tensor(labels, opname)
    if z._device is not x._device:
        raise ValueError(f"{opname}: labels are on {z._device}, logits on {x._device}")
    if x._value.dtype == np.float16:
        # as TF: half-precision logits are computed in float32, the loss rounded once
        return cast(softmax_cross_entropy_with_logits(labels, cast(x, np.float32), axis),
                    np.float16)
    if z._value.dtype != x._value.dtype:
        z = cast(z, x._value.dtype)                # (as TF: labels take the logits' dtype)
    if tuple(z._value.shape) != tuple(x._value.shape):
        raise ValueError(f"{opname}: logits and labels must have the same shape, got "
                         f"{tuple(x._value.shape)} and {tuple(z._value.shape)}")
    if x._value.ndim == 0:
        raise ValueError(f"{opname}: logits must have rank >= 1, got a scalar")
    return apply(_softmax_ce, (z, x), {"axis": _neg_axis(axis, x._value.ndim, opname)})


def _sparse_ce_fwd(xp, labels, x):
    n_classes = x.shape[-1]
    lab = labels.astype(xp.intp, copy=False)
    check_on_device = xp is not np
    if check_on_device:
        # A host check would synchronise the device: out-of-range rows become NaN (as TF
        # on a GPU) and gt.debugging.enable_check_numerics names the op.
        valid = (lab >= 0) & (lab < n_classes)
        lab = xp.where(valid, lab, 0)
    sh = x - x.max(axis=-1, keepdims=True)
    if sh.ndim == 2:
        # (take_along_axis's index building costs more than the op on a training batch)
        picked = sh[xp.arange(sh.shape[0]), lab]
    else:
        picked = xp.take_along_axis(sh, lab[..., None], axis=-1)[..., 0]
    xp.exp(sh, out=sh)
    out = xp.asarray(xp.log(sh.sum(axis=-1)))
    out = out - picked
    if check_on_device:
        out = xp.where(valid, out, xp.asarray(float("nan"), dtype=out.dtype))
    return out


def _one_hot_raw(xp, labels, n_classes, dtype):
    return (xp.arange(n_classes) == labels[..., None]).astype(dtype)


def _sparse_ce_vjp(ops, needs, g, ans, labels, x):
    if not needs[1]:
        return None, None
    n_classes = x.shape[-1]
    gk = _expand_reduced(ops, g, -1)
    if ops.raw:
        xp = ops.xp
        p = ops.softmax(x, axis=-1)
        flat = p.reshape(-1, n_classes)
        lab = labels.reshape(-1).astype(xp.intp, copy=False)
        if xp is not np:
            lab = xp.clip(lab, 0, n_classes - 1)
        flat[xp.arange(flat.shape[0]), lab] -= 1
        if gk.shape == p.shape[:-1] + (1,):   # (the usual case: one cotangent per row)
            p *= gk
            return None, p
        return None, p * gk
    onehot = ops.one_hot(labels, depth=n_classes, on=1, off=0, axis=-1, dtype=x.dtype)
    return None, gk * (ops.softmax(x, axis=-1) - onehot)


_sparse_ce = defop("sparse_softmax_cross_entropy_with_logits", _sparse_ce_fwd, _sparse_ce_vjp,
                   save_output=False)


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None) -> Tensor:
    """``-log_softmax(logits)[..., labels]``: one loss per example, stable for any finite
    logits. ``labels`` are integer class indices in ``[0, num_classes)`` with the shape of
    ``logits`` minus its last axis."""
    opname = "sparse_softmax_cross_entropy_with_logits"
    x = _float_input(logits, opname)
    if isinstance(labels, Tensor):
        lab = labels
    else:
        arr = device_array(labels, x._device)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"{opname}: labels must be integers, got {arr.dtype}")
        lab = Tensor(arr, x._device)
    if lab._value.dtype.kind not in "iu":
        raise TypeError(f"{opname}: labels must be an integer tensor (int32 or int64), got "
                        f"{dtype_name(lab)}")
    if lab._device is not x._device:
        raise ValueError(f"{opname}: labels are on {lab._device}, logits on {x._device}")
    if x._value.ndim == 0:
        raise ValueError(f"{opname}: logits must have rank >= 1, got a scalar")
    if tuple(lab._value.shape) != tuple(x._value.shape[:-1]):
        raise ValueError(f"{opname}: labels of shape {tuple(lab._value.shape)} do not match "
                         f"logits of shape {tuple(x._value.shape)} (expected labels of shape "
                         f"{tuple(x._value.shape[:-1])})")
    n_classes = x._value.shape[-1]
    if x._device.host_visible and lab._value.size:
        lv = lab._value
        lo, hi = int(lv.min()), int(lv.max())
        if lo < 0 or hi >= n_classes:
            bad = lo if lo < 0 else hi
            raise InvalidArgumentError(
                f"{opname}: received a label value of {bad} which is outside the valid range "
                f"of [0, {n_classes}) for {n_classes} classes (logits shape "
                f"{tuple(x._value.shape)})")
    return apply(_sparse_ce, (lab, x))


# --- l2_loss, bias_add ------------------------------------------------------------------------

def _l2_fwd(xp, x):
    flat = x.reshape(-1)
    return xp.asarray(xp.dot(flat, flat) * 0.5, dtype=x.dtype)


def _l2_vjp(ops, needs, g, ans, x):
    if g.ndim:
        shape = tuple(g.shape) + (1,) * x.ndim
        g = g.reshape(shape) if ops.raw else ops.reshape(g, shape=shape, in_shape=tuple(g.shape))
    return (g * x,)


_l2 = defop("l2_loss", _l2_fwd, _l2_vjp, save_output=False)


def l2_loss(t, name=None) -> Tensor:
    """``sum(t ** 2) / 2``."""
    return apply1(_l2, _float_input(t, "l2_loss"))


def _bias_shape(bias_len, axis):
    return (bias_len,) + (1,) * (-axis - 1)


def _bias_add_fwd(xp, v, b, axis, rank):
    if axis == -1:
        return v + b
    return v + b.reshape(_bias_shape(b.shape[0], axis))


def _bias_add_vjp(ops, needs, g, ans, v, b, axis, rank):
    gb = None
    if needs[1]:
        nd = g.ndim
        lead = nd - rank
        cax = nd + axis
        if ops.raw:
            if axis == -1 and lead == 0:
                gb = sum_leading(ops.xp, g, nd - 1)
            else:
                gb = g.sum(axis=tuple(i for i in range(lead, nd) if i != cax))
        else:
            gb = ops.reduce_sum(g, axis=tuple(i for i in range(lead, nd) if i != cax),
                                keepdims=False, in_shape=tuple(g.shape))
    return (g if needs[0] else None), gb


_bias_add = defop("bias_add", _bias_add_fwd, _bias_add_vjp, save_inputs=False, save_output=False)


def bias_add(value, bias, data_format=None, name=None) -> Tensor:
    """``value + bias`` with the 1-D ``bias`` added along the channel axis: the last one
    (``data_format`` None or ``N...C``), or axis 1 (``NC...``)."""
    opname = "bias_add"
    v = _float_input(value, opname)
    b = _same_float(opname, v, bias, "bias")
    if b._value.ndim != 1:
        raise ValueError(f"{opname}: bias must be 1-D, got shape {tuple(b._value.shape)}")
    nd = v._value.ndim
    if nd < 2:
        raise InvalidArgumentError(f"{opname}: value must have rank >= 2, got shape "
                                   f"{tuple(v._value.shape)}")
    if data_format is None or (isinstance(data_format, str) and data_format.upper().startswith("N")
                               and data_format.upper().endswith("C")):
        axis = -1
    elif isinstance(data_format, str) and data_format.upper().startswith("NC"):
        axis = 1 - nd
    else:
        raise ValueError(f"{opname}: data_format must be None, 'NHWC'-like or 'NCHW'-like, got "
                         f"{data_format!r}")
    channels = v._value.shape[axis]
    if b._value.shape[0] != channels:
        raise InvalidArgumentError(f"{opname}: bias of length {b._value.shape[0]} does not "
                                   f"match the {channels} channels (axis {nd + axis}) of value "
                                   f"with shape {tuple(v._value.shape)}")
    return apply(_bias_add, (v, b), {"axis": axis, "rank": nd})


# --- convolution ------------------------------------------------------------------------------
# Geometry: for kernel tap i (of k, dilation d) and stride s with top padding p, output row o
# reads input row o * s + i * d - p. ``_tap_ranges`` gives, per tap, the output rows whose
# input row is inside the image and the first input row they read; taps never copy padding.

def _tap_ranges(size, out_size, k, s, d, p):
    ranges = []
    for i in range(k):
        off = i * d - p
        lo = max(0, (-off + s - 1) // s)
        hi = min(out_size, (size - 1 - off) // s + 1) if size - 1 - off >= 0 else 0
        ranges.append((lo, hi, lo * s + off) if hi > lo else None)
    return ranges


def _out_size(size, k, s, d, pads):
    return (size + pads[0] + pads[1] - ((k - 1) * d + 1)) // s + 1


class _Geometry:
    """Output size and per-tap row/column ranges of a 2-D window op (conv or pool).

    Immutable; made through :func:`_geometry`, which keeps the recent ones (a training step
    asks for the same few geometries in every call)."""

    __slots__ = ("oh", "ow", "rows", "cols", "s", "identity", "full", "_taps", "c_args",
                 "recip_counts")

    def __init__(self, h, w, kh, kw, strides, dilations, pads):
        sh, sw = strides
        dh, dw = dilations
        self.s = strides
        # strides, dilations and the top/left padding, for the C patch loops
        self.c_args = (int(sh), int(sw), int(dh), int(dw), int(pads[0][0]), int(pads[1][0]))
        self.oh = _out_size(h, kh, sh, dh, pads[0])
        self.ow = _out_size(w, kw, sw, dw, pads[1])
        self.rows = _tap_ranges(h, self.oh, kh, sh, dh, pads[0][0])
        self.cols = _tap_ranges(w, self.ow, kw, sw, dw, pads[1][0])
        self.identity = (kh == kw == 1 and sh == sw == 1 and pads == ((0, 0), (0, 0)))
        # every tap covers every output position: patches need no zero fill
        self.full = all(r is not None and r[0] == 0 and r[1] == self.oh for r in self.rows) and \
            all(c is not None and c[0] == 0 and c[1] == self.ow for c in self.cols)
        self._taps = {}
        self.recip_counts = {}   # average pooling's window sizes, by (device, dtype)

    def taps(self, r0=0, r1=None):
        """(i, j, out rows, out cols, in rows, in cols) for output rows ``[r0, r1)``."""
        r1 = self.oh if r1 is None else r1
        found = self._taps.get((r0, r1))
        if found is None:
            found = tuple(self._make_taps(r0, r1))
            if len(self._taps) < 64:
                self._taps[(r0, r1)] = found
        return found

    def _make_taps(self, r0, r1):
        sh, sw = self.s
        for i, r in enumerate(self.rows):
            if r is None:
                continue
            lo, hi, start = r
            lo2, hi2 = max(lo, r0), min(hi, r1)
            if hi2 <= lo2:
                continue
            s_in = start + (lo2 - lo) * sh
            rin = slice(s_in, s_in + (hi2 - lo2 - 1) * sh + 1, sh)
            rout = slice(lo2 - r0, hi2 - r0)
            for j, c in enumerate(self.cols):
                if c is None:
                    continue
                clo, chi, cstart = c
                cin = slice(cstart, cstart + (chi - clo - 1) * sw + 1, sw)
                yield i, j, rout, slice(clo, chi), rin, cin


@functools.lru_cache(maxsize=256)
def _geometry_cached(h, w, kh, kw, strides, dilations, pads):
    return _Geometry(h, w, kh, kw, strides, dilations, pads)


def _geometry(h, w, kh, kw, strides, dilations, pads):
    return _geometry_cached(int(h), int(w), int(kh), int(kw), tuple(strides),
                            tuple(dilations), tuple(tuple(p) for p in pads))


def _blocks(n, oh, bytes_per_row, budget):
    """Split ``n`` images of ``oh`` output rows into blocks of at most ``budget`` bytes of
    patches: (n0, n1, r0, r1); whole images when one fits, else row bands of one image."""
    per_image = max(1, bytes_per_row * oh)
    if per_image <= budget:
        step = max(1, budget // per_image)
        for n0 in range(0, n, step):
            yield n0, min(n, n0 + step), 0, oh
        return
    rows = max(1, budget // max(1, bytes_per_row))
    for n0 in range(n):
        for r0 in range(0, oh, rows):
            yield n0, n0 + 1, r0, min(oh, r0 + rows)


def _budget(*arrays_or_sizes):
    """Patch memory allowed: the bytes of the op's inputs and output (at least 256 KiB), so
    that inputs, output and patches together stay within twice inputs plus output."""
    total = 0
    for a in arrays_or_sizes:
        total += a if isinstance(a, int) else a.nbytes
    return max(total, 1 << 18)


def _host_floats(*arrays):
    """Whether the C window loops take these: C-contiguous NumPy float32/float64 arrays of
    one dtype."""
    if _speedups is None:
        return False
    dt = arrays[0].dtype
    return dt.char in "fd" and dt.isnative and all(
        type(a) is np.ndarray and a.dtype == dt and a.flags.c_contiguous and a.flags.aligned
        for a in arrays)


def _im2col(xp, x, geo, kh, kw, n0, n1, r0, r1, buf=None):
    """Patches ``[n1 - n0, r1 - r0, OW, KH, KW, C]`` of NHWC ``x`` (zeros in the padding).

    ``buf``, the patches of an earlier block, is reused when it is large enough: blocks of
    whole images write the same positions each time, so their zero padding stays zero.
    """
    c = x.shape[3]
    shape = (n1 - n0, r1 - r0, geo.ow, kh, kw, c)
    if xp is np and _host_floats(x):
        # one C loop writes every patch element, padding zeros included
        if buf is not None and buf.shape[1:] == shape[1:] and buf.shape[0] >= shape[0]:
            p = buf[:shape[0]]
        else:
            p = np.empty(shape, dtype=x.dtype)
        _speedups.im2col(x, p, n0, r0, *geo.c_args)
        return p
    if K.window_arrays_ok(x):
        # one kernel writes every patch element, padding zeros included
        if buf is not None and buf.shape[1:] == shape[1:] and buf.shape[0] >= shape[0]:
            p = buf[:shape[0]]
        else:
            p = xp.empty(shape, dtype=x.dtype)
        K.window_im2col(xp, x, p, n0, r0, *geo.c_args)
        return p
    if buf is not None and buf.shape[1:] == shape[1:] and buf.shape[0] >= shape[0]:
        p = buf[:shape[0]]
        if not geo.full and r1 - r0 != geo.oh:
            p.fill(0)
    elif geo.full:
        p = xp.empty(shape, dtype=x.dtype)
    else:
        p = xp.zeros(shape, dtype=x.dtype)
    for i, j, rout, cout, rin, cin in geo.taps(r0, r1):
        p[:, rout, cout, i, j, :] = x[n0:n1, rin, cin, :]
    return p


def _rows(a, n0, n1, r0, r1, width):
    """``a[n0:n1, r0:r1]`` as a 2-D ``[-1, width]`` view (blocks are whole images or a band
    of one image, so the slice of a C-contiguous array is contiguous)."""
    return a[n0:n1, r0:r1].reshape(-1, width)


def _col2im_add(xp, dx, dp, geo, n0, n1, r0, r1):
    """Add patch gradients ``dp`` (as from :func:`_im2col`) into NHWC ``dx``."""
    if _host_floats(dx, dp):
        # the same adds in the same order, in one C loop
        _speedups.col2im_add(dx, dp, n0, r0, *geo.c_args)
        return
    if K.window_arrays_ok(dx, dp):
        K.window_col2im_add(xp, dx, dp, n0, r0, *geo.c_args)
        return
    for i, j, rout, cout, rin, cin in geo.taps(r0, r1):
        dx[n0:n1, rin, cin, :] += dp[:, rout, cout, i, j, :]


def _conv_fwd(xp, x, w, strides, dilations, pads):
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    geo = _geometry(h, wd, kh, kw, strides, dilations, pads)
    k = kh * kw * c
    wmat = w.reshape(k, o)
    if geo.identity:
        return xp.matmul(x.reshape(-1, c), wmat).reshape(n, h, wd, o)
    out = xp.empty((n, geo.oh, geo.ow, o), dtype=x.dtype)
    if out.size == 0:
        return out
    if K.window_arrays_ok(x):
        x = xp.ascontiguousarray(x)     # (once, not per block: the kernel reads it whole)
    budget = _budget(x, out.nbytes)
    p = None
    for n0, n1, r0, r1 in _blocks(n, geo.oh, geo.ow * k * x.itemsize, budget):
        p = _im2col(xp, x, geo, kh, kw, n0, n1, r0, r1, p)
        xp.matmul(p.reshape(-1, k), wmat, out=_rows(out, n0, n1, r0, r1, o))
    return out


def _conv_bp_input_fwd(xp, g, w, input_shape, strides, dilations, pads):
    n, h, wd, c = input_shape
    kh, kw, _, o = w.shape
    geo = _geometry(h, wd, kh, kw, strides, dilations, pads)
    k = kh * kw * c
    wmat_t = w.reshape(k, o).T
    if geo.identity:
        return xp.matmul(g.reshape(-1, o), wmat_t).reshape(input_shape)
    dx = xp.zeros(input_shape, dtype=g.dtype)
    if g.size == 0:
        return dx
    budget = _budget(g, dx.nbytes)
    buf = None
    for n0, n1, r0, r1 in _blocks(n, geo.oh, geo.ow * k * g.itemsize, budget):
        rows = (n1 - n0) * (r1 - r0) * geo.ow
        if buf is None or buf.shape[0] < rows:
            buf = xp.empty((rows, k), dtype=g.dtype)
        dp = xp.matmul(_rows(g, n0, n1, r0, r1, o), wmat_t, out=buf[:rows])
        _col2im_add(xp, dx, dp.reshape(n1 - n0, r1 - r0, geo.ow, kh, kw, c), geo, n0, n1,
                    r0, r1)
    return dx


def _conv_bp_filter_fwd(xp, x, g, filter_shape, strides, dilations, pads):
    n, h, wd, c = x.shape
    kh, kw, _, o = filter_shape
    geo = _geometry(h, wd, kh, kw, strides, dilations, pads)
    k = kh * kw * c
    if geo.identity:
        return xp.matmul(x.reshape(-1, c).T, g.reshape(-1, o)).reshape(filter_shape)
    dw = xp.zeros((k, o), dtype=x.dtype)
    if g.size == 0:
        return dw.reshape(filter_shape)
    if K.window_arrays_ok(x):
        x = xp.ascontiguousarray(x)
    budget = _budget(x, g)
    p = None
    for n0, n1, r0, r1 in _blocks(n, geo.oh, geo.ow * k * x.itemsize, budget):
        p = _im2col(xp, x, geo, kh, kw, n0, n1, r0, r1, p)
        dw += xp.matmul(p.reshape(-1, k).T, _rows(g, n0, n1, r0, r1, o))
    return dw.reshape(filter_shape)


def _conv_vjp(ops, needs, g, ans, x, w, strides, dilations, pads):
    geom = {"strides": strides, "dilations": dilations, "pads": pads}
    gx = ops.conv2d_backprop_input(g, w, input_shape=tuple(x.shape), **geom) if needs[0] else None
    gw = ops.conv2d_backprop_filter(x, g, filter_shape=tuple(w.shape), **geom) \
        if needs[1] else None
    return gx, gw


def _conv_bp_input_vjp(ops, needs, v, ans, g, w, input_shape, strides, dilations, pads):
    geom = {"strides": strides, "dilations": dilations, "pads": pads}
    gg = ops.conv2d(v, w, **geom) if needs[0] else None
    gw = ops.conv2d_backprop_filter(v, g, filter_shape=tuple(w.shape), **geom) \
        if needs[1] else None
    return gg, gw


def _conv_bp_filter_vjp(ops, needs, v, ans, x, g, filter_shape, strides, dilations, pads):
    geom = {"strides": strides, "dilations": dilations, "pads": pads}
    gx = ops.conv2d_backprop_input(g, v, input_shape=tuple(x.shape), **geom) \
        if needs[0] else None
    gg = ops.conv2d(x, v, **geom) if needs[1] else None
    return gx, gg


_conv = defop("conv2d", _conv_fwd, _conv_vjp, save_output=False, batch_rule=False)
_conv_bp_input = defop("conv2d_backprop_input", _conv_bp_input_fwd, _conv_bp_input_vjp,
                       save_output=False, batch_rule=False)
_conv_bp_filter = defop("conv2d_backprop_filter", _conv_bp_filter_fwd, _conv_bp_filter_vjp,
                        save_output=False, batch_rule=False)


def _spatial_arg(value, opname, what, default=1, channels_first=False):
    """``strides``/``dilations``/``ksize`` given as an int or a list of 1, 2 or 4 (in the
    data format's axis order) -> (h, w)."""
    if value is None:
        return (default, default)
    if isinstance(value, Tensor):
        value = value.numpy().tolist()
    if isinstance(value, (int, np.integer)):
        vals = (int(value), int(value))
    else:
        v = [int(a) for a in value]
        if len(v) == 1:
            vals = (v[0], v[0])
        elif len(v) == 2:
            vals = (v[0], v[1])
        elif len(v) == 4:
            batch, chan, h, w = (v[0], v[1], v[2], v[3]) if channels_first else \
                (v[0], v[3], v[1], v[2])
            if batch != 1 or chan != 1:
                raise ValueError(f"{opname}: {what} {v} must be 1 in the batch and channel "
                                 "dimensions")
            vals = (h, w)
        else:
            raise ValueError(f"{opname}: {what} must be an int or a list of 1, 2 or 4 ints, "
                             f"got {value!r}")
    if vals[0] < 1 or vals[1] < 1:
        raise ValueError(f"{opname}: {what} must be >= 1, got {vals}")
    return vals


def _pads(padding, size_hw, k_hw, strides, dilations, opname, channels_first=False):
    """Explicit ((top, bottom), (left, right)) padding for SAME, VALID or explicit pads
    (four pairs in the data format's axis order, or two spatial pairs)."""
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return ((0, 0), (0, 0))
        if mode == "SAME":
            out = []
            for size, k, s, d in zip(size_hw, k_hw, strides, dilations):
                eff = (k - 1) * d + 1
                o = -(-size // s)
                total = max((o - 1) * s + eff - size, 0)
                out.append((total // 2, total - total // 2))
            return tuple(out)
        raise ValueError(f"{opname}: padding must be 'SAME', 'VALID' or explicit pads, got "
                         f"{padding!r}")
    try:
        p = [[int(a), int(b)] for a, b in padding]
    except (TypeError, ValueError):
        raise ValueError(f"{opname}: padding must be 'SAME', 'VALID' or a list of "
                         f"[before, after] pairs, got {padding!r}") from None
    if len(p) == 4:
        batch_channel = (p[0], p[1]) if channels_first else (p[0], p[3])
        if any(pair != [0, 0] for pair in batch_channel):
            raise ValueError(f"{opname}: explicit padding {p} must be 0 in the batch and "
                             "channel dimensions")
        p = p[2:4] if channels_first else p[1:3]
    if len(p) != 2 or any(a < 0 or b < 0 for a, b in p):
        raise ValueError(f"{opname}: explicit padding must be 4 (or 2) non-negative "
                         f"[before, after] pairs, got {padding!r}")
    return ((p[0][0], p[0][1]), (p[1][0], p[1][1]))


def _data_format(data_format, opname, rank=4):
    channels_last = {3: ("NWC",), 4: ("NHWC",)}[rank]
    channels_first = {3: ("NCW",), 4: ("NCHW",)}[rank]
    if data_format is None:
        return False
    fmt = str(data_format).upper()
    if fmt in channels_last:
        return False
    if fmt in channels_first:
        return True
    raise ValueError(f"{opname}: data_format must be {channels_last[0]!r} or "
                     f"{channels_first[0]!r}, got {data_format!r}")


def _to_nhwc(x, channels_first):
    from .shape import transpose
    return transpose(x, (0, 2, 3, 1)) if channels_first else x


def _from_nhwc(y, channels_first):
    from .shape import transpose
    return transpose(y, (0, 3, 1, 2)) if channels_first else y


def _conv_operands(opname, input, filters, layout, filter_layout):
    """The input and filters of a convolution as float tensors of one dtype, of the rank
    ``layout`` (``"NHWC"`` ...) has."""
    x = _float_input(input, opname)
    w = _same_float(opname, x, filters, "filters")
    rank = len(layout)
    if x._value.ndim != rank:
        raise ValueError(f"{opname}: input must have rank {rank} ({layout}), got shape "
                         f"{tuple(x._value.shape)}")
    if w._value.ndim != rank:
        raise ValueError(f"{opname}: filters must have rank {rank} {filter_layout}, got shape "
                         f"{tuple(w._value.shape)}")
    return x, w


def _one_int(value, opname, what, default=1):
    """``stride``/``dilations`` of a 1-D op: an int, or a list of 1 or 3 (``[1, s, 1]``)."""
    if value is None:
        return default
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        out = int(value)
    else:
        try:
            vals = [int(v) for v in value]
        except TypeError:
            raise TypeError(f"{opname}: {what} must be an int or a list of 1 or 3 ints, got "
                            f"{value!r}") from None
        if len(vals) == 1:
            out = vals[0]
        elif len(vals) == 3 and vals[0] == 1 and vals[2] == 1:
            out = vals[1]
        else:
            raise ValueError(f"{opname}: {what} must be an int or a list of 1 or 3 ints with "
                             f"1 on the batch and channel axes, got {value!r}")
    if out <= 0:
        raise ValueError(f"{opname}: {what} must be positive, got {value!r}")
    return out


def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None,
           name=None) -> Tensor:
    """1-D convolution, as ``tf.nn.conv1d``: ``input`` ``[N, W, C]`` (``"NCW"``:
    ``[N, C, W]``), ``filters`` ``[K, C, O]``; ``padding`` ``"SAME"``, ``"VALID"`` or explicit
    ``[[0, 0], [left, right], [0, 0]]``. Computed as a conv2d of height 1 (so on a GPU by the
    window kernels)."""
    opname = "conv1d"
    if data_format not in ("NWC", "NCW", None):
        raise ValueError(f"{opname}: data_format must be 'NWC' or 'NCW', got {data_format!r}")
    x, w = _conv_operands(opname, input, filters, data_format or "NWC",
                          "[width, in_channels, out_channels]")
    s = _one_int(stride, opname, "stride")
    d = _one_int(dilations, opname, "dilations")
    if isinstance(padding, str):
        pad2 = padding
    else:
        # one [before, after] pair per axis in the data format's order, 0 on batch/channels
        shape = "[[0, 0], [0, 0], [left, right]]" if data_format == "NCW" else \
            "[[0, 0], [left, right], [0, 0]]"
        try:
            p = [[int(a), int(b)] for a, b in padding]
        except (TypeError, ValueError):
            raise ValueError(f"{opname}: padding must be 'SAME', 'VALID' or {shape}, got "
                             f"{padding!r}") from None
        channel, width = (1, 2) if data_format == "NCW" else (2, 1)
        if len(p) != 3 or p[0] != [0, 0] or p[channel] != [0, 0]:
            raise ValueError(f"{opname}: explicit padding must be {shape}, got {padding!r}")
        pad2 = [[0, 0], [0, 0], p[width], [0, 0]]
    from .shape import expand_dims, squeeze, transpose
    if data_format == "NCW":
        x = transpose(x, [0, 2, 1])
    y = conv2d(expand_dims(x, 1), expand_dims(w, 0), [1, s], pad2, dilations=[1, d])
    y = squeeze(y, [1])
    return transpose(y, [0, 2, 1]) if data_format == "NCW" else y


def _conv2d_operands(opname, input, filters, strides, dilations, data_format, layout,
                     grouped=False):
    """The checked operands of a 2-D convolution: ``(channels_first, x as NHWC, filters,
    strides, dilations)``. With ``grouped`` the input depth may be a multiple of the
    filters' (a grouped convolution, as TF's conv2d)."""
    cf = _data_format(data_format, opname)
    x, w = _conv_operands(opname, input, filters, "NCHW" if cf else "NHWC", layout)
    x = _to_nhwc(x, cf)
    c, fc = x._value.shape[3], w._value.shape[2]
    if grouped and fc and c % fc == 0 and c != fc:
        groups = c // fc
        if w._value.shape[3] % groups:
            raise InvalidArgumentError(
                f"{opname}: output depth must be evenly divisible by number of groups: "
                f"{w._value.shape[3]} vs {groups} (filters of shape {tuple(w._value.shape)}, "
                f"input depth {c})")
    elif fc != c:
        raise InvalidArgumentError(
            f"{opname}: input has {c} channels but filters of shape {tuple(w._value.shape)} "
            f"expect {fc}" + (" (or a multiple of it: a grouped convolution)" if grouped else ""))
    s = _spatial_arg(strides, opname, "strides", channels_first=cf)
    d = _spatial_arg(dilations, opname, "dilations", channels_first=cf)
    return cf, x, w, s, d


def _conv2d_geometry(opname, x, w, padding, s, d, cf):
    """``(pads, out_height, out_width)`` of a 2-D convolution of NHWC ``x`` by ``w``."""
    h, wd = x._value.shape[1:3]
    kh, kw = w._value.shape[:2]
    pads = _pads(padding, (h, wd), (kh, kw), s, d, opname, cf)
    oh = _out_size(h, kh, s[0], d[0], pads[0])
    ow = _out_size(wd, kw, s[1], d[1], pads[1])
    if oh <= 0 or ow <= 0:
        raise ValueError(f"{opname}: the {kh}x{kw} filter (dilations {d}) does not fit the "
                         f"{h}x{wd} input with padding {padding!r}")
    return pads, oh, ow


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None,
           name=None) -> Tensor:
    """2-D convolution (cross-correlation, as TF): ``input`` ``[N, H, W, C]``, ``filters``
    ``[KH, KW, C, O]`` -> ``[N, OH, OW, O]``. ``padding`` is ``"SAME"``, ``"VALID"`` or
    explicit ``[[0, 0], [top, bottom], [left, right], [0, 0]]``."""
    opname = "conv2d"
    cf, x, w, s, d = _conv2d_operands(opname, input, filters, strides, dilations, data_format,
                                      "[height, width, in_channels, out_channels]",
                                      grouped=True)
    pads, _, _ = _conv2d_geometry(opname, x, w, padding, s, d, cf)
    attrs = {"strides": s, "dilations": d, "pads": pads}
    groups = x._value.shape[3] // w._value.shape[2]
    if groups == 1:
        y = apply(_conv, (x, w), attrs)
    else:
        y = _grouped(lambda xg, wg: apply(_conv, (xg, wg), attrs), x, w, groups)
    return _from_nhwc(y, cf)


def _grouped(conv, x, w, groups, axis=-1):
    """A grouped convolution of ``x`` (channels on ``axis``) by ``w`` (``[..., C / groups,
    O]``): group ``g`` convolves input channels ``[g * C / groups, (g + 1) * C / groups)``
    into output channels ``[g * O / groups, (g + 1) * O / groups)``, as TF and Keras'
    ``groups``. ``conv(x_group, w_group)`` convolves one group."""
    from .shape import concat
    axis = axis % x._value.ndim
    cg = x._value.shape[axis] // groups
    og = w._value.shape[-1] // groups
    lead = (slice(None),) * axis
    return concat([conv(x[lead + (slice(g * cg, (g + 1) * cg),)],
                        w[..., g * og:(g + 1) * og]) for g in range(groups)], axis=axis)


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NHWC",
                     dilations=None, name=None) -> Tensor:
    """The gradient of :func:`conv2d` with respect to its input ("deconvolution"):
    ``input`` ``[N, H, W, O]``, ``filters`` ``[KH, KW, C, O]`` -> ``output_shape``
    ``[N, OH, OW, C]``."""
    opname = "conv2d_transpose"
    g = _float_input(input, opname)
    w = _same_float(opname, g, filters, "filters")
    cf = _data_format(data_format, opname)
    if isinstance(output_shape, Tensor):
        output_shape = output_shape.numpy().tolist()
    out_shape = tuple(int(v) for v in output_shape)
    if len(out_shape) != 4 or g._value.ndim != 4 or w._value.ndim != 4:
        raise ValueError(f"{opname}: input, filters and output_shape must all have rank 4, got "
                         f"{tuple(g._value.shape)}, {tuple(w._value.shape)} and {out_shape}")
    g = _to_nhwc(g, cf)
    if cf:
        out_shape = (out_shape[0], out_shape[2], out_shape[3], out_shape[1])
    n, h, wd, c = out_shape
    kh, kw, fc, o = w._value.shape
    if fc != c or g._value.shape[3] != o or g._value.shape[0] != n:
        raise ValueError(f"{opname}: filters of shape {tuple(w._value.shape)} do not connect "
                         f"input {tuple(g._value.shape)} to output_shape {out_shape}")
    s = _spatial_arg(strides, opname, "strides", channels_first=cf)
    d = _spatial_arg(dilations, opname, "dilations", channels_first=cf)
    pads = _pads(padding, (h, wd), (kh, kw), s, d, opname, cf)
    expect = (_out_size(h, kh, s[0], d[0], pads[0]), _out_size(wd, kw, s[1], d[1], pads[1]))
    if expect != tuple(g._value.shape[1:3]):
        raise ValueError(f"{opname}: output_shape {out_shape} with strides {s} and padding "
                         f"{padding!r} gives an input of spatial size {expect}, but the input "
                         f"has {tuple(g._value.shape[1:3])}")
    y = apply(_conv_bp_input, (g, w), {"input_shape": (n, h, wd, c), "strides": s,
                                       "dilations": d, "pads": pads})
    return _from_nhwc(y, cf)


# --- pooling -----------------------------------------------------------------------------------

def _pool_geo(shape, ksize, strides, pads):
    return _geometry(shape[1], shape[2], ksize[0], ksize[1], strides, (1, 1), pads)


def _max_pool_fwd(xp, x, ksize, strides, pads):
    n, h, w, c = x.shape
    geo = _pool_geo(x.shape, ksize, strides, pads)
    if xp is np and _host_floats(x):
        out = np.empty((n, geo.oh, geo.ow, c), dtype=x.dtype)
        _speedups.max_pool(x, out, ksize[0], ksize[1], *geo.c_args[:2], *geo.c_args[4:])
        return out
    if K.window_arrays_ok(x):
        out = xp.empty((n, geo.oh, geo.ow, c), dtype=x.dtype)
        K.window_max_pool(xp, x, out, ksize[0], ksize[1], *geo.c_args[:2], *geo.c_args[4:])
        return out
    out = xp.full((n, geo.oh, geo.ow, c), -xp.inf, dtype=x.dtype)
    for i, j, rout, cout, rin, cin in geo.taps():
        dst = out[:, rout, cout, :]
        xp.maximum(dst, x[:, rin, cin, :], out=dst)
    return out


def _max_pool_taps(xp, x, y, geo):
    """Per tap: (input slices, output slices, mask of windows whose first maximum is here)."""
    taken = xp.zeros(y.shape, dtype=bool)
    for i, j, rout, cout, rin, cin in geo.taps():
        hit = x[:, rin, cin, :] == y[:, rout, cout, :]
        hit &= ~taken[:, rout, cout, :]
        taken[:, rout, cout, :] |= hit
        yield (slice(None), rin, cin, slice(None)), (slice(None), rout, cout, slice(None)), hit


def _max_pool_grad_fwd(xp, g, x, y, ksize, strides, pads):
    # TF's MaxPoolGrad: each window's gradient goes to its first maximum (row-major order).
    geo = _pool_geo(x.shape, ksize, strides, pads)
    if K.window_arrays_ok(g, x, y):
        dx = xp.empty(x.shape, dtype=g.dtype)
        K.window_max_pool_grad(xp, g, x, y, dx, ksize[0], ksize[1], *geo.c_args[:2],
                               *geo.c_args[4:])
        return dx
    dx = xp.zeros(x.shape, dtype=g.dtype)
    if xp is np and _host_floats(g, x, y):
        # the same operations in the same order, in one C loop
        _speedups.max_pool_grad(g, x, y, dx, ksize[0], ksize[1], *geo.c_args[:2],
                                *geo.c_args[4:])
        return dx
    for sin, sout, hit in _max_pool_taps(xp, x, y, geo):
        dx[sin] += g[sout] * hit
    return dx


def _max_pool_gather_fwd(xp, v, x, y, ksize, strides, pads):
    geo = _pool_geo(x.shape, ksize, strides, pads)
    if K.window_arrays_ok(v, x, y):
        out = xp.empty(y.shape, dtype=v.dtype)
        K.window_max_pool_gather(xp, v, x, y, out, ksize[0], ksize[1], *geo.c_args[:2],
                                 *geo.c_args[4:])
        return out
    out = xp.zeros(y.shape, dtype=v.dtype)
    for sin, sout, hit in _max_pool_taps(xp, x, y, geo):
        out[sout] += v[sin] * hit
    return out


def _max_pool_vjp(ops, needs, g, ans, x, ksize, strides, pads):
    return (ops.max_pool2d_grad(g, x, ans, ksize=ksize, strides=strides, pads=pads),)


def _max_pool_grad_vjp(ops, needs, v, ans, g, x, y, ksize, strides, pads):
    # Linear in g; zero (not unconnected) in the pooled input and output, as TF.
    gg = ops.max_pool2d_gather(v, x, y, ksize=ksize, strides=strides, pads=pads) \
        if needs[0] else None
    return (gg, ops.zeros_like(x) if needs[1] else None,
            ops.zeros_like(y) if needs[2] else None)


def _max_pool_gather_vjp(ops, needs, v, ans, g, x, y, ksize, strides, pads):
    gg = ops.max_pool2d_grad(v, x, y, ksize=ksize, strides=strides, pads=pads) \
        if needs[0] else None
    return (gg, ops.zeros_like(x) if needs[1] else None,
            ops.zeros_like(y) if needs[2] else None)


_max_pool = defop("max_pool2d", _max_pool_fwd, _max_pool_vjp, save_inputs=True, save_output=True,
                  batch_rule=False)
_max_pool_grad = defop("max_pool2d_grad", _max_pool_grad_fwd, _max_pool_grad_vjp,
                       save_output=False, batch_rule=False)
_max_pool_gather = defop("max_pool2d_gather", _max_pool_gather_fwd, _max_pool_gather_vjp,
                         save_output=False, batch_rule=False)


def _avg_counts(xp, geo, like):
    """1 / the number of input (non-padding) elements in each window, shaped ``[OH, OW, 1]``,
    of ``like``'s dtype on ``like``'s device. Made there (no upload from the host), once per
    geometry, dtype and device; read only. Not kept while a step is being captured: the
    kernels that fill it would only run when the graph is launched (and one a graph reads
    is kept alive with the graph)."""
    from ..capture import capturing, keep_alive
    key = ("host" if xp is np else device_of(xp, like), like.dtype)
    found = geo.recip_counts.get(key)
    if found is not None:
        if capturing():
            keep_alive(found)       # a graph reading it outlives its place in the cache
        return found
    rows = xp.zeros(geo.oh)
    cols = xp.zeros(geo.ow)
    for r in geo.rows:
        if r is not None:
            rows[r[0]:r[1]] += 1
    for c in geo.cols:
        if c is not None:
            cols[c[0]:c[1]] += 1
    found = (1.0 / (rows[:, None] * cols[None, :]))[:, :, None].astype(like.dtype)
    if not capturing():
        if xp is np:
            found.flags.writeable = False
        geo.recip_counts[key] = found
    return found


def _avg_pool_fwd(xp, x, ksize, strides, pads):
    n, h, w, c = x.shape
    geo = _pool_geo(x.shape, ksize, strides, pads)
    if K.window_arrays_ok(x):
        out = xp.empty((n, geo.oh, geo.ow, c), dtype=x.dtype)
        K.window_avg_pool(xp, x, out, ksize[0], ksize[1], *geo.c_args[:2], *geo.c_args[4:])
        return out
    out = xp.zeros((n, geo.oh, geo.ow, c), dtype=x.dtype)
    for i, j, rout, cout, rin, cin in geo.taps():
        out[:, rout, cout, :] += x[:, rin, cin, :]
    out *= _avg_counts(xp, geo, x)
    return out


def _avg_pool_grad_fwd(xp, g, input_shape, ksize, strides, pads):
    geo = _pool_geo(input_shape, ksize, strides, pads)
    if K.window_arrays_ok(g):
        dx = xp.empty(input_shape, dtype=g.dtype)
        K.window_avg_pool_grad(xp, g, dx, ksize[0], ksize[1], *geo.c_args[:2], *geo.c_args[4:])
        return dx
    gs = g * _avg_counts(xp, geo, g)
    dx = xp.zeros(input_shape, dtype=g.dtype)
    for i, j, rout, cout, rin, cin in geo.taps():
        dx[:, rin, cin, :] += gs[:, rout, cout, :]
    return dx


def _avg_pool_vjp(ops, needs, g, ans, x, ksize, strides, pads, input_shape):
    return (ops.avg_pool2d_grad(g, input_shape=input_shape, ksize=ksize, strides=strides,
                                pads=pads),)


def _avg_pool_grad_vjp(ops, needs, v, ans, g, input_shape, ksize, strides, pads):
    return (ops.avg_pool2d(v, ksize=ksize, strides=strides, pads=pads, input_shape=input_shape),)


_avg_pool = defop("avg_pool2d", lambda xp, x, ksize, strides, pads, input_shape:
                  _avg_pool_fwd(xp, x, ksize, strides, pads), _avg_pool_vjp,
                  save_inputs=False, save_output=False, batch_rule=False)
_avg_pool_grad = defop("avg_pool2d_grad", _avg_pool_grad_fwd, _avg_pool_grad_vjp,
                       save_inputs=False, save_output=False, batch_rule=False)


def _pool(op, opname, input, ksize, strides, padding, data_format, rank):
    x = _float_input(input, opname)
    nd = x._value.ndim
    if rank is not None and nd != rank:
        raise ValueError(f"{opname}: input must have rank {rank}, got shape "
                         f"{tuple(x._value.shape)}")
    if nd not in (3, 4):
        raise ValueError(f"{opname}: input must have rank 3 (NWC) or 4 (NHWC), got shape "
                         f"{tuple(x._value.shape)}")
    cf = _data_format(data_format, opname, nd)
    from .shape import expand_dims, squeeze, transpose
    if nd == 3:
        # 1-D pooling: a height-1 image.
        if cf:
            x = transpose(x, (0, 2, 1))
        x = expand_dims(x, 1)

        def one(value, what):
            # an int, [k], or TF's [1, k, 1] (NWC) / [1, 1, k] (NCW)
            if not isinstance(value, (int, np.integer, Tensor)) and len(list(value)) == 3:
                v = [int(a) for a in value]
                k = v[2] if cf else v[1]
                if (v[0], v[1] if cf else v[2]) != (1, 1):
                    raise ValueError(f"{opname}: {what} {v} must be 1 in the batch and "
                                     "channel dimensions")
                return (k, k)
            return _spatial_arg(value, opname, what)
        k1 = one(ksize, "ksize")
        s1 = one(strides, "strides")
        k, s = (1, k1[1]), (1, s1[1])
    else:
        x = _to_nhwc(x, cf)
        k = _spatial_arg(ksize, opname, "ksize", channels_first=cf)
        s = _spatial_arg(strides, opname, "strides", channels_first=cf)
    shape = tuple(x._value.shape)
    if isinstance(padding, str) or op is not _max_pool:
        if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
            raise ValueError(f"{opname}: padding must be 'SAME' or 'VALID', got {padding!r}")
        pads = _pads(padding, shape[1:3], k, s, (1, 1), opname)
    else:
        pads = _explicit_pool_pads(padding, nd, cf, k, opname)
    if _out_size(shape[1], k[0], s[0], 1, pads[0]) <= 0 or \
            _out_size(shape[2], k[1], s[1], 1, pads[1]) <= 0:
        raise ValueError(f"{opname}: window {k} does not fit the input of spatial size "
                         f"{shape[1:3]} with {padding} padding")
    attrs = {"ksize": k, "strides": s, "pads": pads}
    if op is _avg_pool:
        attrs["input_shape"] = shape
    y = apply1(op, x, attrs)
    if nd == 3:
        y = squeeze(y, 1)
        return transpose(y, (0, 2, 1)) if cf else y
    return _from_nhwc(y, cf)


def _explicit_pool_pads(padding, nd, channels_first, k, opname):
    """Max pooling's explicit padding, one [before, after] pair per axis of the input (0 on
    the batch and channel axes; padding never wins the maximum), as the 2-D pads; each
    smaller than the window, as TF requires."""
    try:
        p = [[int(a), int(b)] for a, b in padding]
    except (TypeError, ValueError):
        raise ValueError(f"{opname}: padding must be 'SAME', 'VALID' or a list of [before, "
                         f"after] pairs, got {padding!r}") from None
    if len(p) != nd:
        raise ValueError(f"{opname}: explicit padding must have one [before, after] pair per "
                         f"input axis ({nd}), got {padding!r}")
    edges = (p[0], p[1]) if channels_first else (p[0], p[-1])
    spatial = p[2:] if channels_first else p[1:-1]
    if any(e != [0, 0] for e in edges):
        raise ValueError(f"{opname}: explicit padding {p} must be 0 in the batch and channel "
                         "dimensions")
    pads = ((0, 0), tuple(spatial[0])) if nd == 3 else (tuple(spatial[0]), tuple(spatial[1]))
    for (before, after), size in zip(pads, k):
        if min(before, after) < 0 or max(before, after) >= size:
            raise ValueError(f"{opname}: explicit padding {p} must be non-negative and smaller "
                             f"than the window size {k[1] if nd == 3 else k}")
    return pads


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None) -> Tensor:
    """Maximum over ``ksize`` windows of an NHWC batch; the gradient goes to each window's
    first maximum (as TF). ``padding`` may also be explicit, ``[[0, 0], [top, bottom],
    [left, right], [0, 0]]`` (each smaller than the window; the padding never wins)."""
    return _pool(_max_pool, "max_pool2d", input, ksize, strides, padding, data_format, 4)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None) -> Tensor:
    """Mean over ``ksize`` windows of an NHWC batch; with SAME padding each window averages
    only its input elements (as TF)."""
    return _pool(_avg_pool, "avg_pool2d", input, ksize, strides, padding, data_format, 4)


def max_pool(input, ksize, strides, padding, data_format=None, name=None) -> Tensor:
    """:func:`max_pool2d` for NHWC input, 1-D max pooling for NWC input, :func:`max_pool3d`
    for NDHWC input."""
    if _rank(input) == 5:
        return _pool3d(_max_pool, "max_pool", input, ksize, strides, padding,
                       data_format or "NDHWC")
    return _pool(_max_pool, "max_pool", input, ksize, strides, padding, data_format, None)


def avg_pool(input, ksize, strides, padding, data_format=None, name=None) -> Tensor:
    """:func:`avg_pool2d` for NHWC input, 1-D average pooling for NWC input,
    :func:`avg_pool3d` for NDHWC input."""
    if _rank(input) == 5:
        return _pool3d(_avg_pool, "avg_pool", input, ksize, strides, padding,
                       data_format or "NDHWC")
    return _pool(_avg_pool, "avg_pool", input, ksize, strides, padding, data_format, None)


def _rank(x):
    return x._value.ndim if isinstance(x, Tensor) else np.ndim(x)


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None) -> Tensor:
    """Maximum over ``ksize`` windows of an NWC batch (as ``tf.nn.max_pool1d``)."""
    return _pool(_max_pool, "max_pool1d", input, ksize, strides, padding, data_format, 3)


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None) -> Tensor:
    """Mean over ``ksize`` windows of an NWC batch (as ``tf.nn.avg_pool1d``)."""
    return _pool(_avg_pool, "avg_pool1d", input, ksize, strides, padding, data_format, 3)


def depthwise_conv2d(input, filter, strides, padding, data_format="NHWC", dilations=None,
                     name=None) -> Tensor:
    """Each input channel convolved with its own filters, as ``tf.nn.depthwise_conv2d``:
    ``input`` ``[N, H, W, C]``, ``filter`` ``[KH, KW, C, M]`` -> ``[N, OH, OW, C * M]``,
    output channel ``c * M + m`` from input channel ``c``. Computed tap by tap from strided
    views (each tap's product is kept for the backward pass: about ``KH * KW`` times the
    output's memory under a tape)."""
    opname = "depthwise_conv2d"
    cf, x, w, s, d = _conv2d_operands(opname, input, filter, strides, dilations, data_format,
                                      "[height, width, in_channels, channel_multiplier]")
    n, h, wd, c = x._value.shape
    kh, kw, fc, m = w._value.shape
    if s != (1, 1) and d != (1, 1):
        raise ValueError(f"{opname}: strides {s} with dilations {d}: one of them must be 1 "
                         "(as in TensorFlow)")
    pads, oh, ow = _conv2d_geometry(opname, x, w, padding, s, d, cf)
    from .shape import expand_dims, pad, reshape
    if pads != ((0, 0), (0, 0)):
        x = pad(x, [[0, 0], list(pads[0]), list(pads[1]), [0, 0]])
    xe = expand_dims(x, -1)                                   # [N, H, W, C, 1]
    acc = None
    for i in range(kh):
        r0 = i * d[0]
        for j in range(kw):
            c0 = j * d[1]
            tap = xe[:, r0:r0 + (oh - 1) * s[0] + 1:s[0], c0:c0 + (ow - 1) * s[1] + 1:s[1]]
            term = tap * w[i, j]                               # [N, OH, OW, C, M]
            acc = term if acc is None else acc + term
    return _from_nhwc(reshape(acc, (n, oh, ow, c * m)), cf)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,
                     data_format="NHWC", dilations=None, name=None) -> Tensor:
    """A depthwise convolution then a 1x1 convolution mixing its channels, as
    ``tf.nn.separable_conv2d``: ``pointwise_filter`` ``[1, 1, C * M, O]``."""
    opname = "separable_conv2d"
    y = depthwise_conv2d(input, depthwise_filter, strides, padding, data_format, dilations)
    p = _same_float(opname, y, pointwise_filter, "pointwise_filter")
    if p._value.ndim != 4 or p._value.shape[:2] != (1, 1):
        raise ValueError(f"{opname}: pointwise_filter must have shape [1, 1, in, out], got "
                         f"{tuple(p._value.shape)}")
    return conv2d(y, p, 1, "VALID", data_format=data_format)


# --- composites ---------------------------------------------------------------------------------

def moments(x, axes, shift=None, keepdims=False, name=None):
    """``(mean, variance)`` of ``x`` over ``axes`` (population variance, as TF).

    First derivatives equal TF's; unlike TF the variance does not stop the gradient through
    the mean, so second derivatives are exact too.
    """
    from .math import squared_difference
    from .reduce import reduce_mean
    from .shape import squeeze
    opname = "moments"
    t = _float_input(x, opname)
    axes_t = normalize_axis(axes, t._value.ndim, opname)
    mean = reduce_mean(t, axis=axes_t, keepdims=True)
    variance = reduce_mean(squared_difference(t, mean), axis=axes_t,
                           keepdims=True)
    if not keepdims:
        sq = list(axes_t) if axes_t is not None else list(range(t._value.ndim))
        if sq:
            mean = squeeze(mean, sq)
            variance = squeeze(variance, sq)
    return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None) -> Tensor:
    """``(x - mean) / sqrt(variance + eps) * scale + offset`` (``scale``/``offset`` may be
    None)."""
    from .math import rsqrt
    opname = "batch_normalization"
    t = _float_input(x, opname)
    inv = rsqrt(_same_float(opname, t, variance, "variance") + float(variance_epsilon))
    if scale is not None:
        inv = inv * _same_float(opname, t, scale, "scale")
    shift = -(_same_float(opname, t, mean, "mean") * inv)
    if offset is not None:
        shift = shift + _same_float(opname, t, offset, "offset")
    return t * inv + shift


def l2_normalize(x, axis=None, epsilon=1e-12, name=None) -> Tensor:
    """``x / sqrt(max(sum(x ** 2, axis), epsilon))``."""
    from .math import maximum, rsqrt, square
    from .reduce import reduce_sum
    t = _float_input(x, "l2_normalize")
    ss = reduce_sum(square(t), axis=axis, keepdims=True)
    return t * rsqrt(maximum(ss, float(epsilon)))


def dropout(x, rate, noise_shape=None, seed=None, rng=None, name=None) -> Tensor:
    """Zero each element with probability ``rate`` and scale the rest by ``1 / (1 - rate)``.

    Random bits come from ``rng`` (a :class:`gradtape.random.Generator`) when given, else from
    the global generator of ``x``'s device (``seed`` selects a reproducible op sequence, as
    TF's op-level seed). ``noise_shape`` (broadcastable to ``x``) shares one draw along the
    axes where it is 1.
    """
    from .. import random as _random
    from .math import multiply
    opname = "dropout"
    t = _float_input(x, opname)
    if isinstance(rate, Tensor):
        rate = float(rate.numpy())
    try:
        rate = float(rate)
    except (TypeError, ValueError):
        raise TypeError(f"{opname}: rate must be a float, got {type(rate).__name__}") from None
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"{opname}: rate must be a float in the range [0, 1), got {rate}")
    shape = tuple(t._value.shape)
    if noise_shape is None:
        nshape = shape
    else:
        if isinstance(noise_shape, Tensor):
            noise_shape = noise_shape.numpy().tolist()
        nshape = tuple(shape[i] if v is None else int(v) for i, v in enumerate(noise_shape))
        try:
            if np.broadcast_shapes(nshape, shape) != shape:
                raise ValueError
        except ValueError:
            raise InvalidArgumentError(f"{opname}: noise_shape {tuple(noise_shape)} does not "
                                       f"broadcast to the input shape {shape}") from None
    if rate == 0.0:
        return t
    dev = t._device
    if rng is not None:
        if rng.device is not dev:
            raise ValueError(f"{opname}: the generator is on {rng.device}, the input on {dev}")
        gen = rng
    else:
        gen = _random._generator_for(seed, dev)
    dt = t._value.dtype
    # float32 draws for every dtype: one seed gives one mask whatever the input's precision
    u = gen._random(nshape, np.dtype(np.float32))
    with dev.activate():
        mask = (u >= rate).astype(dt)
        mask *= 1.0 / (1.0 - rate)
    return multiply(t, Tensor(mask, dev))


def embedding_lookup(params, ids, max_norm=None, name=None) -> Tensor:
    """Rows of ``params`` (a tensor, or a list of row shards in order) at integer ``ids``;
    repeated ids sum their gradients. ``max_norm`` clips each looked-up row's L2 norm.

    An id outside ``[0, rows)`` raises IndexError on the CPU; on a device the host cannot
    read (a GPU) it gives a row of zeros and trains nothing, as TensorFlow's GPU kernel
    (checking would make the host wait), see :func:`gradtape.gather`."""
    from .shape import concat, gather
    opname = "embedding_lookup"
    if isinstance(params, (list, tuple)):
        if not params:
            raise ValueError(f"{opname}: params must be a tensor or a non-empty list")
        p = concat([as_tensor(v, opname) for v in params], axis=0) if len(params) > 1 \
            else as_tensor(params[0], opname)
    else:
        p = as_tensor(params, opname)
    if p._value.ndim < 1:
        raise ValueError(f"{opname}: params must have rank >= 1, got a scalar")
    if isinstance(ids, Tensor):
        idx = ids
    else:
        arr = device_array(ids, p._device)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"{opname}: ids must be integers, got {arr.dtype}")
        idx = Tensor(arr, p._device)
    if idx._value.dtype.kind not in "iu":
        raise TypeError(f"{opname}: ids must be an integer tensor, got {dtype_name(idx)}")
    try:
        out = gather(p, idx)
    except IndexError as exc:
        raise IndexError(f"{opname}: {exc}") from None
    if max_norm is not None:
        out = _clip_rows(out, float(max_norm), idx._value.ndim)
    return out


def _clip_rows(rows, max_norm, id_rank):
    """Each looked-up row (the axes after the ids') scaled to an L2 norm of at most
    ``max_norm``; rows of scalars (1-D params) are clipped in magnitude, as TF."""
    from .math import abs as _abs, maximum, sqrt
    from .reduce import reduce_sum
    if rows._value.ndim == id_rank:
        norm = _abs(rows)
    else:
        axes = list(range(id_rank, rows._value.ndim))
        norm = sqrt(reduce_sum(rows * rows, axis=axes, keepdims=True))
    return rows * (max_norm / maximum(norm, max_norm))


# --- more of tf.nn: losses, moments, rearrangements, normalization ------------------------------

def _same_shape(opname, a: Tensor, b: Tensor, what_a, what_b):
    if tuple(a._value.shape) != tuple(b._value.shape):
        raise ValueError(f"{opname}: {what_a} and {what_b} must have the same shape, got "
                         f"{tuple(a._value.shape)} and {tuple(b._value.shape)}")


def _in_top_k_fwd(xp, predictions, targets, k):
    n_classes = predictions.shape[1]
    t = targets.astype(np.int64)
    valid = (t >= 0) & (t < n_classes)
    picked = xp.take_along_axis(predictions, xp.where(valid, t, 0)[:, None], axis=1)
    more = xp.sum(predictions > picked, axis=1)
    finite = xp.all(xp.isfinite(predictions), axis=1)
    return valid & finite & (more < k)


_in_top_k = defop("in_top_k", _in_top_k_fwd, None, nondiff=True)


def in_top_k(targets, predictions, k, name=None) -> Tensor:
    """Whether each ``targets[i]`` is among the ``k`` largest ``predictions[i]``, as
    ``tf.math.in_top_k`` (TF 2 argument order): fewer than ``k`` classes score strictly
    higher (so ties count in the target's favour). A target outside ``[0, classes)`` or a row
    holding a NaN or an infinity gives False."""
    opname = "in_top_k"
    p = _float_input(predictions, opname)
    if isinstance(targets, Tensor):
        t = targets
        if t._device is not p._device:
            raise ValueError(f"{opname}: targets are on {t._device}, predictions on "
                             f"{p._device}")
    else:
        t = Tensor(device_array(targets, p._device), p._device)
    if t._value.dtype.kind not in "iu":
        raise TypeError(f"{opname}: targets must be int32 or int64, got {dtype_name(t)}")
    if p._value.ndim != 2:
        raise ValueError(f"{opname}: predictions must be 2-dimensional [batch, classes], got "
                         f"shape {tuple(p._value.shape)}")
    if t._value.ndim != 1 or t._value.shape[0] != p._value.shape[0]:
        raise ValueError(f"{opname}: targets must be a vector of the batch size "
                         f"{p._value.shape[0]}, got shape {tuple(t._value.shape)}")
    if isinstance(k, Tensor):
        k = k.numpy()
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) and not (
            isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu"):
        raise TypeError(f"{opname}: k must be an int, got {k!r}")
    return apply(_in_top_k, (p, t), {"k": int(k)})


def weighted_cross_entropy_with_logits(labels, logits, pos_weight, name=None) -> Tensor:
    """Sigmoid cross-entropy with the positive term weighted by ``pos_weight``:
    ``(1 - z) * x + (1 + (pos_weight - 1) * z) * (log1p(exp(-|x|)) + relu(-x))``, TF's
    formula (stable for large ``|x|``)."""
    from .math import abs as _abs, exp, log1p
    opname = "weighted_cross_entropy_with_logits"
    x = _float_input(logits, opname)
    z = _same_float(opname, x, labels, "labels")
    _same_shape(opname, x, z, "logits", "labels")
    w = _same_float(opname, x, pos_weight, "pos_weight")
    log_weight = 1.0 + (w - 1.0) * z
    return (1.0 - z) * x + log_weight * (log1p(exp(-_abs(x))) + relu(-x))


def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None) -> Tensor:
    """``exp(log_input) - log_input * targets``, plus with ``compute_full_loss`` the Stirling
    term ``t * log(t) - t + 0.5 * log(2 * pi * t)`` where ``targets > 1`` (as TF: zero for
    ``0 <= t <= 1``)."""
    from .math import exp, log, logical_and, where, xlogy
    opname = "log_poisson_loss"
    c = _float_input(log_input, opname)
    z = _same_float(opname, c, targets, "targets")
    _same_shape(opname, c, z, "log_input", "targets")
    result = exp(c) - c * z
    if compute_full_loss:
        stirling = xlogy(z, z) - z + 0.5 * log((2.0 * _pymath.pi) * z)    # no 0 * -inf
        small = logical_and(z >= 0.0, z <= 1.0)
        result = result + where(small, 0.0 * z, stirling)
    return result


def crelu(features, axis=-1, name=None) -> Tensor:
    """Concatenated ReLU: ``relu(concat([x, -x], axis))`` (twice the size along ``axis``)."""
    from .shape import concat
    x = _float_input(features, "crelu")
    return relu(concat([x, -x], axis=axis))


def weighted_moments(x, axes, frequency_weights, keepdims=False, name=None):
    """``(mean, variance)`` of ``x`` over ``axes`` with each element counted
    ``frequency_weights`` times (broadcast against ``x``); zero total weight gives 0, as TF's
    ``divide_no_nan``."""
    from .core import zeros_like
    from .math import divide_no_nan, squared_difference
    from .reduce import reduce_sum
    from .shape import squeeze
    opname = "weighted_moments"
    t = _float_input(x, opname)
    w = _same_float(opname, t, frequency_weights, "frequency_weights")
    ax = normalize_axis(axes, t._value.ndim, opname)
    total = reduce_sum(w + zeros_like(t), axis=ax, keepdims=True)
    mean = divide_no_nan(reduce_sum(w * t, axis=ax, keepdims=True), total)
    variance = divide_no_nan(reduce_sum(w * squared_difference(t, mean), axis=ax,
                                        keepdims=True), total)
    if not keepdims:
        sq = list(ax) if ax is not None else list(range(t._value.ndim))
        if sq:
            mean = squeeze(mean, sq)
            variance = squeeze(variance, sq)
    return mean, variance


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    """``(mean, variance)`` from sufficient statistics: ``mean_ss / counts`` (plus ``shift``
    when not None) and ``variance_ss / counts - (mean_ss / counts) ** 2``."""
    from .math import square
    opname = "normalize_moments"
    m = _float_input(mean_ss, opname)
    divisor = 1.0 / _same_float(opname, m, counts, "counts")
    shifted_mean = m * divisor
    mean = shifted_mean if shift is None else shifted_mean + _same_float(opname, m, shift,
                                                                         "shift")
    variance = _same_float(opname, m, variance_ss, "variance_ss") * divisor - \
        square(shifted_mean)
    return mean, variance


def _block_size(block_size, opname):
    if isinstance(block_size, Tensor):
        block_size = block_size.numpy()
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)):
        raise TypeError(f"{opname}: block_size must be an int, got {block_size!r}")
    if block_size < 2:
        raise ValueError(f"{opname}: block_size must be at least 2, got {block_size}")
    return int(block_size)


def _block_operands(input, block_size, data_format, opname):
    """``(x in NHWC, block size, channels_first)`` for depth_to_space / space_to_depth."""
    x = as_tensor(input, opname)
    b = _block_size(block_size, opname)
    cf = _data_format(data_format, opname)
    if x._value.ndim != 4:
        raise ValueError(f"{opname}: input must have rank 4, got shape "
                         f"{tuple(x._value.shape)}")
    return _to_nhwc(x, cf), b, cf


def depth_to_space(input, block_size, data_format="NHWC", name=None) -> Tensor:
    """Move channel blocks into ``block_size x block_size`` spatial tiles, as
    ``tf.nn.depth_to_space``: ``[N, H, W, C]`` -> ``[N, H * b, W * b, C / b**2]``, with
    output ``[n, h * b + i, w * b + j, c]`` from input channel ``(i * b + j) * C / b**2 + c``
    (``"NCHW"``: the same on ``[N, C, H, W]``). Any dtype."""
    from .shape import reshape, transpose
    opname = "depth_to_space"
    x, b, cf = _block_operands(input, block_size, data_format, opname)
    n, h, w, c = x._value.shape
    if c % (b * b):
        raise ValueError(f"{opname}: input depth {c} must be divisible by block_size ** 2 = "
                         f"{b * b}")
    y = transpose(reshape(x, (n, h, w, b, b, c // (b * b))), (0, 1, 3, 2, 4, 5))
    return _from_nhwc(reshape(y, (n, h * b, w * b, c // (b * b))), cf)


def space_to_depth(input, block_size, data_format="NHWC", name=None) -> Tensor:
    """The inverse of :func:`depth_to_space`: ``[N, H, W, C]`` -> ``[N, H / b, W / b,
    C * b**2]`` (``H`` and ``W`` divisible by ``b``)."""
    from .shape import reshape, transpose
    opname = "space_to_depth"
    x, b, cf = _block_operands(input, block_size, data_format, opname)
    n, h, w, c = x._value.shape
    if h % b or w % b:
        raise ValueError(f"{opname}: image height {h} and width {w} must be divisible by "
                         f"block_size {b}")
    y = transpose(reshape(x, (n, h // b, b, w // b, b, c)), (0, 1, 3, 2, 4, 5))
    return _from_nhwc(reshape(y, (n, h // b, w // b, b * b * c)), cf)


def local_response_normalization(input, depth_radius=5, bias=1, alpha=1, beta=0.5,
                                 name=None) -> Tensor:
    """``input / (bias + alpha * sqr_sum) ** beta`` with ``sqr_sum`` the sum of squares over
    the channels ``[c - depth_radius, c + depth_radius]`` of a 4-D NHWC input, as
    ``tf.nn.local_response_normalization`` (also float64, which TF refuses)."""
    from .math import square
    from .shape import pad
    opname = "local_response_normalization"
    x = _float_input(input, opname)
    if x._value.ndim != 4:
        raise ValueError(f"{opname}: input must be 4-dimensional, got shape "
                         f"{tuple(x._value.shape)}")
    r = int(depth_radius)
    if r < 0:
        raise ValueError(f"{opname}: depth_radius must be >= 0, got {depth_radius}")
    c = x._value.shape[3]
    r = min(r, max(c - 1, 0))                 # a wider window only adds padding zeros
    sq = square(x)
    if r:
        padded = pad(sq, [[0, 0], [0, 0], [0, 0], [r, r]])
        acc = padded[..., 0:c]
        for i in range(1, 2 * r + 1):
            acc = acc + padded[..., i:i + c]
    else:
        acc = sq
    return x * (float(bias) + float(alpha) * acc) ** (-float(beta))


lrn = local_response_normalization


def atrous_conv2d(value, filters, rate, padding, name=None) -> Tensor:
    """:func:`conv2d` with stride 1 and dilation ``rate`` in both spatial axes (NHWC), as
    ``tf.nn.atrous_conv2d``."""
    if isinstance(rate, bool) or not isinstance(rate, (int, np.integer)):
        raise TypeError(f"atrous_conv2d: rate must be an int, got {rate!r}")
    if rate < 1:
        raise ValueError(f"atrous_conv2d: rate must be positive, got {rate}")
    return conv2d(value, filters, 1, padding, dilations=int(rate))


def conv1d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NWC",
                     dilations=None, name=None) -> Tensor:
    """The gradient of :func:`conv1d` with respect to its input: ``input`` ``[N, W, O]``,
    ``filters`` ``[K, C, O]`` -> ``output_shape`` ``[N, OW, C]`` (``"NCW"``: channels
    first). Computed as a height-1 :func:`conv2d_transpose`."""
    from .shape import expand_dims, squeeze, transpose
    opname = "conv1d_transpose"
    if data_format not in ("NWC", "NCW", None):
        raise ValueError(f"{opname}: data_format must be 'NWC' or 'NCW', got {data_format!r}")
    g = _float_input(input, opname)
    w = _same_float(opname, g, filters, "filters")
    if isinstance(output_shape, Tensor):
        output_shape = output_shape.numpy().tolist()
    out_shape = [int(v) for v in output_shape]
    if g._value.ndim != 3 or w._value.ndim != 3 or len(out_shape) != 3:
        raise ValueError(f"{opname}: input, filters and output_shape must all have rank 3, got "
                         f"{tuple(g._value.shape)}, {tuple(w._value.shape)} and "
                         f"{tuple(out_shape)}")
    if not isinstance(padding, str):
        raise ValueError(f"{opname}: padding must be 'SAME' or 'VALID', got {padding!r}")
    s = _one_int(strides, opname, "strides")
    d = _one_int(dilations, opname, "dilations")
    if data_format == "NCW":
        g = transpose(g, [0, 2, 1])
        out_shape = [out_shape[0], out_shape[2], out_shape[1]]
    y = conv2d_transpose(expand_dims(g, 1), expand_dims(w, 0),
                         [out_shape[0], 1, out_shape[1], out_shape[2]], [1, s], padding,
                         dilations=[1, d])
    y = squeeze(y, [1])
    return transpose(y, [0, 2, 1]) if data_format == "NCW" else y


# --- 3-D convolution and pooling ------------------------------------------------------------------
# Built from the 2-D primitives, so they run on every device (the GPU window kernels included)
# and their gradients (to any order) come from the 2-D rules. A 3-D convolution gathers the KD
# depth taps of each output depth into the channel axis ([N * OD, H, W, KD * C]) and makes one
# conv2d with the [KH, KW, KD * C, O] filters; SAME padding in depth is explicit zero padding.
# Pooling pools each depth slice in H and W, then the results over depth windows (a 2-D pool
# of [N, D, OH * OW, C] with windows (KD, 1)).

def _data_format3(data_format, opname):
    if data_format is None:
        return False
    fmt = str(data_format).upper()
    if fmt == "NDHWC":
        return False
    if fmt == "NCDHW":
        return True
    raise ValueError(f"{opname}: data_format must be 'NDHWC' or 'NCDHW', got {data_format!r}")


def _spatial3(value, opname, what, channels_first, short=True):
    """``(d, h, w)`` from a list of 5 (1 on the batch and channel axes) or, with ``short``,
    an int or a list of 1 or 3."""
    if value is None:
        return (1, 1, 1)
    if isinstance(value, Tensor):
        value = value.numpy().tolist()
    forms = "an int or a list of 1, 3 or 5 ints" if short else "a list of 5 ints"
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if not short:
            raise TypeError(f"{opname}: {what} must be {forms}, got {value!r}")
        vals = (int(value),) * 3
    else:
        try:
            v = [int(a) for a in value]
        except (TypeError, ValueError):
            raise TypeError(f"{opname}: {what} must be {forms}, got {value!r}") from None
        if len(v) == 5:
            batch, chan = (v[0], v[1]) if channels_first else (v[0], v[4])
            if batch != 1 or chan != 1:
                raise ValueError(f"{opname}: {what} {v} must be 1 in the batch and channel "
                                 "dimensions")
            vals = tuple(v[2:5]) if channels_first else tuple(v[1:4])
        elif short and len(v) in (1, 3):
            vals = tuple(v) * (3 // len(v))
        else:
            raise ValueError(f"{opname}: {what} must be {forms}, got {value!r}")
    if min(vals) < 1:
        raise ValueError(f"{opname}: {what} must be >= 1, got {vals}")
    return vals


def _string_pads(padding, sizes, ks, strides, dilations, opname):
    """((before, after), ...) per spatial axis for 'SAME' or 'VALID'."""
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise ValueError(f"{opname}: padding must be 'SAME' or 'VALID', got {padding!r}")
    if padding.upper() == "VALID":
        return ((0, 0),) * len(sizes)
    return _pads("SAME", sizes, ks, strides, dilations, opname)


def _to_ndhwc(x, channels_first):
    from .shape import transpose
    return transpose(x, (0, 2, 3, 4, 1)) if channels_first else x


def _from_ndhwc(y, channels_first):
    from .shape import transpose
    return transpose(y, (0, 4, 1, 2, 3)) if channels_first else y


def _depth_filters(w):
    """[KD, KH, KW, C, O] filters as [KH, KW, KD * C, O] (depth taps on the channel axis)."""
    from .shape import reshape, transpose
    kd, kh, kw, c, o = w._value.shape
    return reshape(transpose(w, (1, 2, 0, 3, 4)), (kh, kw, kd * c, o))


def _conv3d_ndhwc(x, w, s, d, pads):
    from .shape import concat, pad, reshape
    n, depth, h, wd, c = x._value.shape
    kd, _, _, _, o = w._value.shape
    if pads[0] != (0, 0):
        x = pad(x, [[0, 0], list(pads[0]), [0, 0], [0, 0], [0, 0]])
    padded = depth + pads[0][0] + pads[0][1]
    od = _out_size(depth, kd, s[0], d[0], pads[0])
    span = (od - 1) * s[0] + 1
    if kd == 1 and span == padded:
        xc = x
    else:
        taps = [x[:, i * d[0]:i * d[0] + span:s[0]] for i in range(kd)]
        xc = taps[0] if kd == 1 else concat(taps, axis=4)          # [N, OD, H, W, KD * C]
    y = apply(_conv, (reshape(xc, (n * od, h, wd, kd * c)), _depth_filters(w)),
              {"strides": tuple(s[1:]), "dilations": tuple(d[1:]), "pads": tuple(pads[1:])})
    return reshape(y, (n, od) + tuple(y._value.shape[1:]))


def _conv3d_transpose_ndhwc(g, w, input_shape, s, d, pads):
    from .shape import expand_dims, pad, reshape
    n, depth, h, wd, c = input_shape
    kd, _, _, _, o = w._value.shape
    _, od, oh, ow, _ = g._value.shape
    padded = depth + pads[0][0] + pads[0][1]
    span = (od - 1) * s[0] + 1
    xc = apply(_conv_bp_input, (reshape(g, (n * od, oh, ow, o)), _depth_filters(w)),
               {"input_shape": (n * od, h, wd, kd * c), "strides": tuple(s[1:]),
                "dilations": tuple(d[1:]), "pads": tuple(pads[1:])})
    xc = reshape(xc, (n, od, h, wd, kd, c))
    acc = None
    for i in range(kd):
        t = xc[:, :, :, :, i, :]                                   # [N, OD, H, W, C]
        if s[0] > 1 and od > 1:                                    # zeros between depths
            t = pad(expand_dims(t, 2), [[0, 0], [0, 0], [0, s[0] - 1], [0, 0], [0, 0], [0, 0]])
            t = reshape(t, (n, od * s[0], h, wd, c))[:, :span]
        before = i * d[0]
        t = pad(t, [[0, 0], [before, padded - before - span], [0, 0], [0, 0], [0, 0]])
        acc = t if acc is None else acc + t
    if pads[0] != (0, 0):
        acc = acc[:, pads[0][0]:pads[0][0] + depth]
    return acc


def conv3d(input, filters, strides, padding, data_format="NDHWC", dilations=None,
           name=None) -> Tensor:
    """3-D convolution (cross-correlation), as ``tf.nn.conv3d``: ``input`` ``[N, D, H, W,
    C]`` (``"NCDHW"``: ``[N, C, D, H, W]``), ``filters`` ``[KD, KH, KW, C, O]``; ``strides``
    and ``dilations`` lists of 5 with 1 on the batch and channel axes; ``padding`` ``"SAME"``
    or ``"VALID"``. Computed as one conv2d of the depth taps (see above)."""
    opname = "conv3d"
    cf = _data_format3(data_format, opname)
    x, w = _conv_operands(opname, input, filters, "NCDHW" if cf else "NDHWC",
                          "[depth, height, width, in_channels, out_channels]")
    x = _to_ndhwc(x, cf)
    if w._value.shape[3] != x._value.shape[4]:
        raise InvalidArgumentError(f"{opname}: input has {x._value.shape[4]} channels but "
                                   f"filters of shape {tuple(w._value.shape)} expect "
                                   f"{w._value.shape[3]}")
    s = _spatial3(strides, opname, "strides", cf, short=False)
    d = _spatial3(dilations, opname, "dilations", cf, short=False)
    sizes = tuple(x._value.shape[1:4])
    ks = tuple(w._value.shape[:3])
    pads = _string_pads(padding, sizes, ks, s, d, opname)
    if any(_out_size(sz, k, st, dl, p) <= 0 for sz, k, st, dl, p in zip(sizes, ks, s, d, pads)):
        raise ValueError(f"{opname}: the {ks} filter (dilations {d}) does not fit the input of "
                         f"spatial size {sizes} with padding {padding!r}")
    return _from_ndhwc(_conv3d_ndhwc(x, w, s, d, pads), cf)


def conv3d_transpose(input, filters, output_shape, strides, padding="SAME",
                     data_format="NDHWC", dilations=None, name=None) -> Tensor:
    """The gradient of :func:`conv3d` with respect to its input: ``input`` ``[N, D, H, W,
    O]``, ``filters`` ``[KD, KH, KW, C, O]`` -> ``output_shape`` ``[N, OD, OH, OW, C]``;
    ``strides``/``dilations`` an int or a list of 1, 3 or 5."""
    opname = "conv3d_transpose"
    cf = _data_format3(data_format, opname)
    g = _float_input(input, opname)
    w = _same_float(opname, g, filters, "filters")
    if isinstance(output_shape, Tensor):
        output_shape = output_shape.numpy().tolist()
    out_shape = tuple(int(v) for v in output_shape)
    if len(out_shape) != 5 or g._value.ndim != 5 or w._value.ndim != 5:
        raise ValueError(f"{opname}: input, filters and output_shape must all have rank 5, got "
                         f"{tuple(g._value.shape)}, {tuple(w._value.shape)} and {out_shape}")
    g = _to_ndhwc(g, cf)
    if cf:
        out_shape = (out_shape[0],) + out_shape[2:] + (out_shape[1],)
    n, c = out_shape[0], out_shape[4]
    ks, fc, o = tuple(w._value.shape[:3]), w._value.shape[3], w._value.shape[4]
    if fc != c or g._value.shape[4] != o or g._value.shape[0] != n:
        raise ValueError(f"{opname}: filters of shape {tuple(w._value.shape)} do not connect "
                         f"input {tuple(g._value.shape)} to output_shape {out_shape}")
    s = _spatial3(strides, opname, "strides", cf)
    d = _spatial3(dilations, opname, "dilations", cf)
    sizes = out_shape[1:4]
    pads = _string_pads(padding, sizes, ks, s, d, opname)
    expect = tuple(_out_size(sz, k, st, dl, p) for sz, k, st, dl, p in
                   zip(sizes, ks, s, d, pads))
    if expect != tuple(g._value.shape[1:4]):
        raise ValueError(f"{opname}: output_shape {out_shape} with strides {s} and padding "
                         f"{padding!r} gives an input of spatial size {expect}, but the input "
                         f"has {tuple(g._value.shape[1:4])}")
    return _from_ndhwc(_conv3d_transpose_ndhwc(g, w, out_shape, s, d, pads), cf)


def _pool3d(op, opname, input, ksize, strides, padding, data_format):
    from .shape import reshape
    x = _float_input(input, opname)
    if x._value.ndim != 5:
        raise ValueError(f"{opname}: input must have rank 5, got shape "
                         f"{tuple(x._value.shape)}")
    cf = _data_format3(data_format, opname)
    x = _to_ndhwc(x, cf)
    k = _spatial3(ksize, opname, "ksize", cf)
    s = _spatial3(strides, opname, "strides", cf)
    n, depth, h, w, c = x._value.shape
    pads = _string_pads(padding, (depth, h, w), k, s, (1, 1, 1), opname)
    od, oh, ow = (_out_size(sz, kk, st, 1, p) for sz, kk, st, p in
                  zip((depth, h, w), k, s, pads))
    if min(od, oh, ow) <= 0:
        raise ValueError(f"{opname}: window {k} does not fit the input of spatial size "
                         f"{(depth, h, w)} with {padding} padding")
    y = x
    if k[1:] != (1, 1) or s[1:] != (1, 1):
        attrs = {"ksize": k[1:], "strides": s[1:], "pads": tuple(pads[1:])}
        if op is _avg_pool:
            attrs["input_shape"] = (n * depth, h, w, c)
        y = apply1(op, reshape(x, (n * depth, h, w, c)), attrs)
    y = reshape(y, (n, depth, oh * ow, c))
    if k[0] != 1 or s[0] != 1:
        attrs = {"ksize": (k[0], 1), "strides": (s[0], 1), "pads": (pads[0], (0, 0))}
        if op is _avg_pool:
            attrs["input_shape"] = (n, depth, oh * ow, c)
        y = apply1(op, y, attrs)
    return _from_ndhwc(reshape(y, (n, od, oh, ow, c)), cf)


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None) -> Tensor:
    """Maximum over ``ksize`` windows of an NDHWC batch (``ksize``/``strides`` an int or a
    list of 1, 3 or 5). The gradient goes to each window's first maximum in (depth, row,
    column) order, as 2-D max pooling; TF's CPU kernel instead gives every tied maximum the
    whole gradient."""
    return _pool3d(_max_pool, "max_pool3d", input, ksize, strides, padding, data_format)


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None) -> Tensor:
    """Mean over ``ksize`` windows of an NDHWC batch; with SAME padding each window averages
    only its input elements (as TF)."""
    return _pool3d(_avg_pool, "avg_pool3d", input, ksize, strides, padding, data_format)


def convolution(input, filters, strides=None, padding="VALID", data_format=None,
                dilations=None, name=None) -> Tensor:
    """An N-D convolution, N = rank(filters) - 2 (1, 2 or 3), as ``tf.nn.convolution``:
    ``input`` ``[batch..., spatial..., C]`` (extra leading batch axes allowed),
    ``strides``/``dilations`` an int or a list of N (or N + 2) ints; strides > 1 together
    with dilations > 1 is refused, as in TF."""
    from .shape import reshape
    opname = "convolution"
    x = _float_input(input, opname)
    w = _same_float(opname, x, filters, "filters")
    nsp = w._value.ndim - 2
    if nsp not in (1, 2, 3):
        raise ValueError(f"{opname}: filters must have rank 3, 4 or 5 (1-, 2- or 3-D), got "
                         f"shape {tuple(w._value.shape)}")
    if x._value.ndim < nsp + 2:
        raise ValueError(f"{opname}: input of shape {tuple(x._value.shape)} has too few axes "
                         f"for a {nsp}-D convolution")
    if not isinstance(padding, str):
        raise TypeError(f"{opname}: padding must be 'SAME' or 'VALID', got {padding!r}")
    fmt = {1: "NWC", 2: "NHWC", 3: "NDHWC"}[nsp]
    cf = data_format is not None and str(data_format).upper().startswith("NC")
    if data_format is not None and str(data_format).upper() not in (fmt, "NC" + fmt[1:-1]):
        raise ValueError(f"{opname}: data_format must be {fmt!r} or {'NC' + fmt[1:-1]!r} for "
                         f"{nsp}-D filters, got {data_format!r}")

    def spatial(value, what):
        if value is None:
            return (1,) * nsp
        if isinstance(value, Tensor):
            value = value.numpy().tolist()
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            v = (int(value),) * nsp
        else:
            v = tuple(int(a) for a in value)
            if len(v) == nsp + 2:
                edges = (v[0], v[1]) if cf else (v[0], v[-1])
                if edges != (1, 1):
                    raise ValueError(f"{opname}: {what} {list(v)} must be 1 in the batch and "
                                     "channel dimensions")
                v = v[2:] if cf else v[1:-1]
            elif len(v) == 1:
                v = v * nsp
            elif len(v) != nsp:
                raise ValueError(f"{opname}: {what} must be an int or a list of {nsp} ints, "
                                 f"got {value!r}")
        if min(v) < 1:
            raise ValueError(f"{opname}: all values of {what} must be positive, got {list(v)}")
        return v
    s = spatial(strides, "strides")
    d = spatial(dilations, "dilations")
    if max(s) > 1 and max(d) > 1:
        raise ValueError(f"{opname}: strides > 1 not supported in conjunction with dilations "
                         f"> 1, got strides={list(s)} and dilations={list(d)}")
    shape = tuple(x._value.shape)
    lead = shape[:len(shape) - nsp - 1]
    if len(lead) > 1:
        x = reshape(x, (-1,) + shape[len(lead):])
    fmt = "NC" + fmt[1:-1] if cf else fmt
    if nsp == 1:
        y = conv1d(x, w, s[0], padding, data_format=fmt, dilations=d[0])
    elif nsp == 2:
        y = conv2d(x, w, list(s), padding, data_format=fmt, dilations=list(d))
    else:
        five = (lambda v: [1, 1] + list(v)) if cf else (lambda v: [1] + list(v) + [1])
        y = conv3d(x, w, five(s), padding, data_format=fmt, dilations=five(d))
    if len(lead) > 1:
        y = reshape(y, lead + tuple(y._value.shape[1:]))
    return y


def conv_transpose(input, filters, output_shape, strides, padding="SAME", data_format=None,
                   dilations=None, name=None) -> Tensor:
    """The transposed convolution of the rank ``output_shape`` gives (3, 4 or 5: 1-, 2- or
    3-D), as ``tf.nn.conv_transpose``: :func:`conv1d_transpose`, :func:`conv2d_transpose`
    or :func:`conv3d_transpose` with their default data formats."""
    if isinstance(output_shape, Tensor):
        output_shape = output_shape.numpy().tolist()
    rank = len(output_shape)
    op = {3: conv1d_transpose, 4: conv2d_transpose, 5: conv3d_transpose}.get(rank)
    if op is None:
        raise ValueError(f"conv_transpose: output_shape must have 3, 4 or 5 entries (a 1-, 2- "
                         f"or 3-D convolution), got {list(output_shape)}")
    fmt = {3: "NWC", 4: "NHWC", 5: "NDHWC"}[rank] if data_format is None else data_format
    return op(input, filters, output_shape, strides, padding, data_format=fmt,
              dilations=dilations)


def pool(input, window_shape, pooling_type, strides=None, padding="VALID", data_format=None,
         dilations=None, name=None) -> Tensor:
    """N-D max or average pooling (N = ``len(window_shape)``: 1, 2 or 3), as ``tf.nn.pool``:
    ``pooling_type`` ``"MAX"`` or ``"AVG"``; ``strides`` a list of N (1 by default).
    ``dilations`` > 1 (1- and 2-D) spreads each window's taps apart; as TF, only with
    ``"VALID"`` padding and strides 1."""
    opname = "pool"
    if isinstance(window_shape, (int, np.integer)):
        window_shape = [window_shape]
    window = [int(v) for v in window_shape]
    n = len(window)
    if n not in (1, 2, 3):
        raise ValueError(f"{opname}: window_shape must have 1, 2 or 3 entries, got "
                         f"{window_shape!r}")
    kind = str(pooling_type).upper()
    if kind not in ("MAX", "AVG"):
        raise ValueError(f"{opname}: pooling_type must be 'MAX' or 'AVG', got "
                         f"{pooling_type!r}")
    stride = [1] * n if strides is None else [int(v) for v in strides]
    dil = [1] * n if dilations is None else [int(v) for v in dilations]
    if len(stride) != n or len(dil) != n:
        raise ValueError(f"{opname}: strides and dilations must have {n} entries (one per "
                         f"window dimension), got {strides!r} and {dilations!r}")
    x = _float_input(input, opname)
    if x._value.ndim != n + 2:
        raise ValueError(f"{opname}: input must have rank {n + 2} for a {n}-D window, got "
                         f"shape {tuple(x._value.shape)}")
    if any(v != 1 for v in dil):
        if min(dil) < 1:
            raise ValueError(f"{opname}: dilations must be positive, got {dil}")
        if any(v != 1 for v in stride):
            raise ValueError(f"{opname}: strides > 1 are not supported together with "
                             f"dilations > 1, got strides={stride} and dilations={dil}")
        if not isinstance(padding, str) or padding.upper() != "VALID":
            raise ValueError(f"{opname}: pooling with {padding!r} padding is not supported "
                             f"with dilations > 1, got dilations={dil}; use 'VALID'")
        if n == 3:
            raise ValueError(f"{opname}: dilations > 1 are supported for 1- and 2-D pooling, "
                             f"got a 3-D window {window}")
        return _dilated_pool(x, window, dil, kind, data_format, opname)
    if n == 3:
        op = max_pool3d if kind == "MAX" else avg_pool3d
        return op(x, window, stride, padding, data_format=data_format or "NDHWC")
    op = max_pool if kind == "MAX" else avg_pool
    return op(x, window, stride, padding, data_format=data_format)


def _dilated_pool(x, window, dilations, kind, data_format, opname):
    """VALID pooling of 1- or 2-D windows whose taps lie ``dilations`` apart (stride 1), as
    TF's space-to-batch: output ``o = a + d * m`` of each phase ``a`` (per axis) is the
    stride-1 pool of the phase's subsampled input ``x[a::d]`` at ``m``; the phases' results
    are interleaved back."""
    from .shape import expand_dims, pad, reshape, squeeze, stack, transpose
    n = len(window)
    cf = _data_format(data_format, opname, n + 2)
    if n == 1:                                          # as a height-1 image
        x = expand_dims(transpose(x, (0, 2, 1)) if cf else x, 1)
        window, dilations = [1] + window, [1] + dilations
    else:
        x = _to_nhwc(x, cf)
    _, h, w, _ = x._value.shape
    out_hw = [size - (k - 1) * d for size, k, d in zip((h, w), window, dilations)]
    if min(out_hw) <= 0:
        raise ValueError(f"{opname}: the window {window[-n:]} with dilations {dilations[-n:]} "
                         f"does not fit the input of spatial size {(h, w)[-n:]}")
    op = _max_pool if kind == "MAX" else _avg_pool
    dh, dw = dilations
    mh, mw = -(-out_hw[0] // dh), -(-out_hw[1] // dw)       # outputs per phase, at most
    rows = []
    for a in range(dh):
        cols = []
        for b in range(dw):
            lh, lw = -(-(out_hw[0] - a) // dh), -(-(out_hw[1] - b) // dw)
            if lh > 0 and lw > 0:
                phase = x[:, a::dh, b::dw]
                attrs = {"ksize": tuple(window), "strides": (1, 1), "pads": ((0, 0), (0, 0))}
                if op is _avg_pool:
                    attrs["input_shape"] = tuple(phase._value.shape)
                y = apply1(op, phase, attrs)
                y = pad(y, [[0, 0], [0, mh - lh], [0, mw - lw], [0, 0]])
            else:                                       # a phase past the output's end
                y = pad(x[:, :0, :0] + 0.0, [[0, 0], [0, mh], [0, mw], [0, 0]])
            cols.append(y)
        rows.append(stack(cols, axis=3))                # [N, MH, MW, DW, C]
    y = stack(rows, axis=2)                             # [N, MH, DH, MW, DW, C]
    nb, c = x._value.shape[0], x._value.shape[3]
    y = reshape(y, (nb, mh * dh, mw * dw, c))[:, :out_hw[0], :out_hw[1]]
    if n == 1:
        y = squeeze(y, 1)
        return transpose(y, (0, 2, 1)) if cf else y
    return _from_nhwc(y, cf)


def sufficient_statistics(x, axes, shift=None, keepdims=False, name=None):
    """``(count, mean_ss, var_ss, shift)`` of ``x`` over ``axes``, as
    ``tf.nn.sufficient_statistics``: the number of elements reduced (a scalar of ``x``'s
    dtype), the sum of ``x - shift`` and the sum of ``(x - shift) ** 2`` (of ``x`` and
    ``x ** 2`` when ``shift`` is None), and ``shift`` (None if not given)."""
    from .math import square, squared_difference
    from .reduce import reduce_sum
    opname = "sufficient_statistics"
    t = _float_input(x, opname)
    ax = normalize_axis(axes, t._value.ndim, opname)
    shape = t._value.shape
    count = 1
    for a in (range(len(shape)) if ax is None else ax):
        count *= int(shape[a])
    counts = Tensor(t._device.asarray(np.asarray(count, dtype=t._value.dtype)), t._device)
    if shift is not None:
        shift = _same_float(opname, t, shift, "shift")
        m_ss, v_ss = t - shift, squared_difference(t, shift)
    else:
        m_ss, v_ss = t, square(t)
    return (counts, reduce_sum(m_ss, axis=ax, keepdims=keepdims),
            reduce_sum(v_ss, axis=ax, keepdims=keepdims), shift)


def zero_fraction(value, name=None) -> Tensor:
    """The fraction of the elements of ``value`` that are zero, a float32 scalar, as
    ``tf.nn.zero_fraction`` (NaN for an empty tensor)."""
    from .core import cast
    from .math import equal
    from .reduce import reduce_mean
    t = as_tensor(value, "zero_fraction")
    return reduce_mean(cast(equal(t, 0), np.float32))
