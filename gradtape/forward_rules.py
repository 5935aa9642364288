"""Explicit forward-mode (JVP) rules for the hot primitives.

Each rule is ``jvp(ops, t, ans, *inputs, **attrs)`` with ``t`` one tangent per input
(``None`` where an input has none) and returns the output tangent; see
:mod:`gradtape.forward`. Rules use Python operators and ``ops.<primitive>`` only, so they
run on raw arrays and, when an outer tape or accumulator records them, on tensors. Ops
without a rule here get their tangents from the transpose of their reverse rule.
"""
from __future__ import annotations

import numpy as np

from .registry import REGISTRY

__all__ = ["FORWARD_RULES"]


def _plus(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _minus(a, b):
    if b is None:
        return a
    if a is None:
        return -b
    return a - b


def _or_zero(ops, t, like):
    return t if t is not None else ops.zeros_like(like)


# --- arithmetic --------------------------------------------------------------------------

def _add_jvp(ops, t, ans, x, y):
    return _plus(t[0], t[1])


def _subtract_jvp(ops, t, ans, x, y):
    return _minus(t[0], t[1])


def _multiply_jvp(ops, t, ans, x, y):
    return _plus(None if t[0] is None else t[0] * y, None if t[1] is None else x * t[1])


def _divide_jvp(ops, t, ans, x, y):
    # d(x / y) = (dx - (x / y) dy) / y
    return _minus(t[0], None if t[1] is None else ans * t[1]) / y


def _negative_jvp(ops, t, ans, x):
    return -t[0]


def _square_jvp(ops, t, ans, x):
    return t[0] * (2 * x)


def _pow_jvp(ops, t, ans, x, y):
    tx = None
    if t[0] is not None:
        tx = t[0] * (y * x ** (y - 1))
    ty = None
    if t[1] is not None:
        pos = x > 0
        ty = t[1] * (ans * ops.where(pos, ops.log(ops.where(pos, x, 1)), 0))
    return _plus(tx, ty)


def _squared_difference_jvp(ops, t, ans, x, y):
    return (2 * (x - y)) * _minus(t[0], t[1])


def _maximum_jvp(ops, t, ans, x, y):
    # Ties go to the first argument, as in the reverse rule.
    return ops.where(x >= y, t[0] if t[0] is not None else 0, t[1] if t[1] is not None else 0)


def _minimum_jvp(ops, t, ans, x, y):
    return ops.where(x <= y, t[0] if t[0] is not None else 0, t[1] if t[1] is not None else 0)


def _where_jvp(ops, t, ans, c, x, y):
    return ops.where(c, t[1] if t[1] is not None else 0, t[2] if t[2] is not None else 0)


# --- elementwise functions ---------------------------------------------------------------

def _exp_jvp(ops, t, ans, x):
    return t[0] * ans


def _log_jvp(ops, t, ans, x):
    return t[0] / x


def _tanh_jvp(ops, t, ans, x):
    return t[0] * (1 - ans * ans)


def _sigmoid_jvp(ops, t, ans, x):
    return t[0] * (ans * (1 - ans))


def _sqrt_jvp(ops, t, ans, x):
    # Exactly 0 where the tangent is 0 (the reverse rule's guard), else t / (2 sqrt(x)).
    return ops.where(t[0] == 0, 0, t[0] * 0.5 / ans)


def _abs_jvp(ops, t, ans, x):
    if _kind(x) == "c":      # d|z| = real(conj(z) dz) / |z| (0 at 0)
        num = ops.real(ops.conj(x) * t[0])
        return ops.where(ans == 0, 0, num / ops.where(ans == 0, 1, ans))
    return t[0] * ops.sign(x)


def _kind(v):
    return getattr(v, "_value", v).dtype.kind


def _tan_jvp(ops, t, ans, x):
    return t[0] * (1 + ans * ans)


def _sinh_jvp(ops, t, ans, x):
    return t[0] * ops.cosh(x)


def _cosh_jvp(ops, t, ans, x):
    return t[0] * ops.sinh(x)


def _rsqrt_jvp(ops, t, ans, x):
    return ops.where(t[0] == 0, 0, t[0] * (-0.5 * ans * ans * ans))


def _reciprocal_jvp(ops, t, ans, x):
    return ops.where(t[0] == 0, 0, -t[0] * ans * ans)


# between real and complex values (linear, except angle)
def _real_jvp(ops, t, ans, x):
    return ops.real(t[0])


def _imag_jvp(ops, t, ans, x):
    return ops.imag(t[0]) if _kind(x) == "c" else None


def _conj_jvp(ops, t, ans, x):
    return ops.conj(t[0])


def _angle_jvp(ops, t, ans, x):
    # d arg(z) = imag(dz / z) = imag(conj(z) dz) / |z|^2
    if _kind(x) != "c":
        return None
    num = ops.imag(ops.conj(x) * t[0])
    den = ops.real(ops.conj(x) * x)
    return num / ops.where(den == 0, 1, den)


def _complex_jvp(ops, t, ans, re, im, dtype):
    zero_re = t[0] if t[0] is not None else ops.zeros_like(t[1])
    zero_im = t[1] if t[1] is not None else ops.zeros_like(t[0])
    return ops.complex(zero_re, zero_im, dtype=dtype)


def _sin_jvp(ops, t, ans, x):
    return t[0] * ops.cos(x)


def _cos_jvp(ops, t, ans, x):
    return -t[0] * ops.sin(x)


def _log1p_jvp(ops, t, ans, x):
    return t[0] / (1 + x)


def _expm1_jvp(ops, t, ans, x):
    return t[0] * (ans + 1)


def _softplus_jvp(ops, t, ans, x):
    return t[0] * ops.sigmoid(x)


def _identity_jvp(ops, t, ans, x):
    return t[0]


def _cast_jvp(ops, t, ans, x, dtype, src):
    if np.dtype(src).kind not in "fc" or np.dtype(dtype).kind not in "fc":
        return None
    return ops.cast(t[0], dtype=dtype, src=src)


# --- linear ops: the tangent goes through the op itself -----------------------------------

def _linear(name):
    def jvp(ops, t, ans, x, **attrs):
        return getattr(ops, name)(t[0], **attrs)
    jvp.__name__ = f"_{name}_jvp"
    return jvp


def _pad_jvp(ops, t, ans, x, paddings, value, in_shape):
    return ops.pad(t[0], paddings=paddings, value=0, in_shape=in_shape)


def _concat_jvp(ops, t, ans, *xs, axis, sizes):
    return ops.concat(*[_or_zero(ops, ti, xi) for ti, xi in zip(t, xs)], axis=axis, sizes=sizes)


def _stack_jvp(ops, t, ans, *xs, axis):
    return ops.stack(*[_or_zero(ops, ti, xi) for ti, xi in zip(t, xs)], axis=axis)


def _split_jvp(ops, t, ans, x, sizes, axis):
    return tuple(ops.split(t[0], sizes=sizes, axis=axis))


def _unstack_jvp(ops, t, ans, x, axis):
    return tuple(ops.unstack(t[0], axis=axis))


# --- products ----------------------------------------------------------------------------

def _matmul_jvp(ops, t, ans, a, b, transpose_a=False, transpose_b=False):
    kw = {"transpose_a": transpose_a, "transpose_b": transpose_b} \
        if (transpose_a or transpose_b) else {}
    return _plus(None if t[0] is None else ops.matmul(t[0], b, **kw),
                 None if t[1] is None else ops.matmul(a, t[1], **kw))


def _einsum_jvp(ops, t, ans, *operands, ins, out):
    total = None
    for i, ti in enumerate(t):
        if ti is None:
            continue
        args = list(operands)
        args[i] = ti
        total = _plus(total, ops.einsum(*args, ins=ins, out=out))
    return total


FORWARD_RULES = {
    "add": _add_jvp,
    "subtract": _subtract_jvp,
    "multiply": _multiply_jvp,
    "divide": _divide_jvp,
    "negative": _negative_jvp,
    "square": _square_jvp,
    "pow": _pow_jvp,
    "squared_difference": _squared_difference_jvp,
    "maximum": _maximum_jvp,
    "minimum": _minimum_jvp,
    "where": _where_jvp,
    "exp": _exp_jvp,
    "log": _log_jvp,
    "tanh": _tanh_jvp,
    "sigmoid": _sigmoid_jvp,
    "sqrt": _sqrt_jvp,
    "abs": _abs_jvp,
    "tan": _tan_jvp,
    "sinh": _sinh_jvp,
    "cosh": _cosh_jvp,
    "rsqrt": _rsqrt_jvp,
    "reciprocal": _reciprocal_jvp,
    "real": _real_jvp,
    "imag": _imag_jvp,
    "conj": _conj_jvp,
    "angle": _angle_jvp,
    "complex": _complex_jvp,
    "sin": _sin_jvp,
    "cos": _cos_jvp,
    "log1p": _log1p_jvp,
    "expm1": _expm1_jvp,
    "softplus": _softplus_jvp,
    "identity": _identity_jvp,
    "cast": _cast_jvp,
    "reshape": _linear("reshape"),
    "transpose": _linear("transpose"),
    "reduce_sum": _linear("reduce_sum"),
    "reduce_mean": _linear("reduce_mean"),
    "broadcast_to": _linear("broadcast_to"),
    "sum_to": _linear("sum_to"),
    "sum_to_batched": _linear("sum_to_batched"),
    "tile": _linear("tile"),
    "cumsum": _linear("cumsum"),
    "getitem": _linear("getitem"),
    "getitem_grad": _linear("getitem_grad"),
    "pad": _pad_jvp,
    "concat": _concat_jvp,
    "stack": _stack_jvp,
    "split": _split_jvp,
    "unstack": _unstack_jvp,
    "matmul": _matmul_jvp,
    "einsum": _einsum_jvp,
}

for _name, _rule in FORWARD_RULES.items():
    _op = REGISTRY.get(_name)
    if _op is not None and _op.jvp is None:
        _op.jvp = _rule
