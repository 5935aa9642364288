"""Elementwise math: each primitive's forward and its reverse rule side by side."""
from __future__ import annotations

import contextlib
import math as _pymath
import operator

import numpy as np

from ..backend import device_of
from ..registry import STATE, InvalidArgumentError, apply, apply1, apply2, defop, op_error
from ..tape import record_binary, record_unary
from ..tensor import Tensor, _next_id, _speedups
from ._util import as_tensor, binary, dtype_name, operand

__all__ = [
    "add", "subtract", "multiply", "divide", "truediv", "negative", "abs", "sign", "exp", "log",
    "sqrt", "square", "pow", "maximum", "minimum", "where", "tanh", "sigmoid", "sin", "cos",
    "tan", "clip_by_value", "log1p", "expm1", "rsqrt", "reciprocal", "softplus",
    "squared_difference", "erf", "erfc", "floor", "ceil", "round", "floordiv", "floormod", "mod",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "logical_not", "logical_xor", "is_nan", "is_inf", "is_finite", "add_n",
    "divide_no_nan", "atan", "asin", "acos", "sinh", "cosh", "log_sigmoid", "xlogy",
    "real", "imag", "conj", "angle", "complex",
]


_new_tensor = object.__new__   # Tensor creation without the __init__ frame (hot paths)


# --- helpers to declare ops --------------------------------------------------------------

def _unary(name, forward, vjp, *, float_only=True, save_inputs=False, save_output=True,
           quiet=False, nondiff=False, ufunc=None, complex_ok=False, complex_rule=False):
    """Declare a one-input elementwise op; ``ufunc`` names the namespace function the forward
    is, so the fast path calls it without the forward's Python frame."""
    if quiet:
        base = forward

        def forward(xp, x, _f=base):
            with _quiet(xp):
                return _f(xp, x)
    op = defop(name, forward, vjp, save_inputs=save_inputs, save_output=save_output,
               nondiff=nondiff, complex_rule=complex_rule)
    kinds = "fc" if complex_ok else "f"
    sparse_map = name in _SPARSE_MAPPED

    def fn(x, name=None):
        if type(x) is Tensor:
            # fast path: a plain tensor on a device that needs no switching
            v = x._value
            dev = x._device
            if not dev.needs_switch and (not float_only or v.dtype.kind == "f"):
                try:
                    out = _new_tensor(Tensor)
                    out._value = getattr(dev.xp, ufunc)(v) if ufunc else forward(dev.xp, v)
                    out._device = dev
                    out._id = _next_id()
                except Exception as exc:
                    raise op_error(op, (x,), exc) from None
                if STATE.active:
                    record_unary(op, x, out, None, v)
                return out
        else:
            if sparse_map and type(x).__name__ == "SparseTensor":
                return _map_sparse(fn, x, op.name)
            x = as_tensor(x, op.name)
        if float_only and x._value.dtype.kind not in kinds:
            raise TypeError(f"{op.name}: expected a floating-point"
                            f"{' or complex' if complex_ok else ''} tensor, got {dtype_name(x)}")
        return apply1(op, x)
    fn.__name__ = fn.__qualname__ = name
    if _speedups is not None and ufunc and not quiet:
        fn = _speedups.unary(op, fn, ufunc, float_only)
    return op, fn


# the unary ops TF applies to a SparseTensor's values (each maps 0 to 0), giving a SparseTensor
_SPARSE_MAPPED = frozenset({"abs", "negative", "square", "sqrt", "sin", "tan", "atan", "asin",
                            "tanh", "sign", "erf"})


def _map_sparse(fn, sp, opname):
    from ..sparse import SparseTensor
    if not isinstance(sp, SparseTensor):
        raise TypeError(f"{opname}: expected a tensor, got {type(sp).__name__}")
    return sp.with_values(fn(sp.values))


def _binary(name, forward, vjp, *, save_inputs=True, save_output=False, nondiff=False,
            quiet=False, float_only=False, pyop=None):
    """Declare a two-input broadcasting op; ``pyop`` is the Python operator the forward is
    (``operator.mul`` ...), so the fast path calls it without the forward's Python frame."""
    if quiet:
        base = forward

        def forward(xp, x, y, _f=base):
            with _quiet(xp):
                return _f(xp, x, y)
    op = defop(name, forward, vjp, save_inputs=save_inputs, save_output=save_output,
               broadcasts=True, nondiff=nondiff)

    def fn(x, y, name=None):
        if type(x) is Tensor:
            # fast path: a plain tensor with a Python number or a tensor of the same
            # dtype and device
            dev = x._device
            xv = x._value
            ty = type(y)
            if ty is Tensor:
                yv = y._value
                fast = y._device is dev and (xv.dtype is yv.dtype or xv.dtype == yv.dtype)
            elif ty is float:
                yv = y
                fast = xv.dtype.kind == "f"
            elif ty is int:
                yv = y
                fast = xv.dtype.kind in "fiu"
            else:
                fast = False
            if fast and not dev.needs_switch and not (float_only and xv.dtype.kind != "f"):
                try:
                    out = _new_tensor(Tensor)
                    out._value = pyop(xv, yv) if pyop else forward(dev.xp, xv, yv)
                    out._device = dev
                    out._id = _next_id()
                except Exception as exc:
                    raise op_error(op, (x, y), exc) from None
                if STATE.active:
                    record_binary(op, x, y, out, None, xv, yv)
                return out
        x, y = binary(op.name, x, y)
        if float_only:
            ref = x if isinstance(x, Tensor) else y
            if ref._value.dtype.kind != "f":
                raise TypeError(f"{op.name}: expected floating-point tensors, got "
                                f"{dtype_name(ref)}")
        return apply2(op, x, y)
    fn.__name__ = fn.__qualname__ = name
    if _speedups is not None and pyop in _C_OPERATORS:
        _C_BINARY[name] = (op, fn, _C_OPERATORS[pyop], float_only)
        fn = _speedups.binary(op, fn, _C_OPERATORS[pyop], float_only, False)
    return op, fn


# the Python operators the C fast path knows, and each C-backed binary op's pieces (for the
# reflected operator methods)
_C_OPERATORS = {operator.add: "add", operator.sub: "sub", operator.mul: "mul",
                operator.truediv: "truediv"}
_C_BINARY: dict = {}


def _quiet(xp):
    """Silence IEEE warnings (1/0 -> inf, log(0) -> -inf), as TensorFlow does."""
    errstate = getattr(xp, "errstate", None)
    if errstate is None:
        return _NULL
    return errstate(all="ignore")


_NULL = contextlib.nullcontext()


# --- arithmetic --------------------------------------------------------------------------

_add, add = _binary("add", lambda xp, x, y: x + y,
                    lambda ops, needs, g, ans, x, y: (g, g), save_inputs=False, pyop=operator.add)
_sub, subtract = _binary("subtract", lambda xp, x, y: x - y,
                         lambda ops, needs, g, ans, x, y: (g, -g if needs[1] else None),
                         save_inputs=False, pyop=operator.sub)


def _mul_vjp(ops, needs, g, ans, x, y):
    return (g * y if needs[0] else None, g * x if needs[1] else None)


_mul, multiply = _binary("multiply", lambda xp, x, y: x * y, _mul_vjp, pyop=operator.mul)


def _div_vjp(ops, needs, g, ans, x, y):
    return (g / y if needs[0] else None, g * (-x / y / y) if needs[1] else None)


def _div_fwd(xp, x, y):
    return x / y


_div, _divide = _binary("divide", _div_fwd, _div_vjp, quiet=True)


def divide(x, y, name=None):
    """``x / y``; integer tensors are divided as floats (float64), as TensorFlow does."""
    x, y = binary("divide", x, y)
    ref = x if isinstance(x, Tensor) else y
    if ref._value.dtype.kind not in "fc":
        from .core import cast
        import numpy as np
        dt = np.float64 if ref._value.dtype.itemsize > 2 else np.float32
        x = cast(as_tensor(x, "divide"), dt)
        y = cast(as_tensor(operand("divide", y, ref) if not isinstance(y, Tensor) else y,
                           "divide"), dt)
    return apply2(_div, x, y)


truediv = divide


def _neg_vjp(ops, needs, g, ans, x):
    return (-g,)


_neg, negative = _unary("negative", lambda xp, x: -x, _neg_vjp, float_only=False,
                        save_output=False)


def _abs_vjp(ops, needs, g, ans, x):
    if _kind(x) == "c":    # TensorFlow's: g * x / |x|, 0 at 0
        r = ops.abs(x)
        unit = x / ops.cast(ops.where(r == 0, 1, r), dtype=x.dtype, src=r.dtype)
        return (ops.cast(g, dtype=x.dtype, src=g.dtype) * unit,)
    return (g * ops.sign(x),)


def _kind(v):
    """The dtype kind of a raw array or a tensor."""
    return getattr(v, "_value", v).dtype.kind


_abs, abs = _unary("abs", lambda xp, x: xp.abs(x), _abs_vjp, float_only=False,
                   save_inputs=True, save_output=False, ufunc="abs", complex_rule=True)
_sign, sign = _unary("sign", lambda xp, x: xp.sign(x),
                     lambda ops, needs, g, ans, x: (ops.zeros_like(g),), float_only=False,
                     save_output=False, ufunc="sign")
_exp, exp = _unary("exp", lambda xp, x: xp.exp(x), lambda ops, needs, g, ans, x: (g * ans,),
                   quiet=True, complex_ok=True)
_log, log = _unary("log", lambda xp, x: xp.log(x), lambda ops, needs, g, ans, x: (g / x,),
                   save_inputs=True, save_output=False, quiet=True, complex_ok=True)


def _sqrt_vjp(ops, needs, g, ans, x):
    # +inf at 0 unless the upstream gradient is exactly 0 (then 0), as TF's SqrtGrad.
    return (ops.where(g == 0, 0, g * 0.5 / ans),)


_sqrt, sqrt = _unary("sqrt", lambda xp, x: xp.sqrt(x), _sqrt_vjp, quiet=True,
                     complex_ok=True)
_square, square = _unary("square", lambda xp, x: x * x,
                         lambda ops, needs, g, ans, x: (g * (2 * x),), float_only=False,
                         save_inputs=True, save_output=False)


def _pow_vjp(ops, needs, g, ans, x, y):
    gx = gy = None
    if needs[0]:
        gx = g * y * x ** (y - 1)
    if needs[1]:
        pos = x > 0
        gy = g * ans * ops.where(pos, ops.log(ops.where(pos, x, 1)), 0)
    return gx, gy


def _pow_fwd(xp, x, y):
    return x ** y


_pow = defop("pow", lambda xp, x, y: _quiet_call(xp, _pow_fwd, x, y), _pow_vjp, broadcasts=True,
             save_output=True)


def _quiet_call(xp, f, *a):
    with _quiet(xp):
        return f(xp, *a)


def pow(x, y, name=None):
    """``x ** y`` elementwise."""
    x, y = binary("pow", x, y)
    if not isinstance(x, Tensor):
        x = operand("pow", x, y) if type(x) in (int, float) else x
        x = Tensor(y._device.asarray(x, dtype=y._value.dtype), y._device) \
            if not isinstance(x, Tensor) else x
    return apply2(_pow, x, y)


def _max_vjp(ops, needs, g, ans, x, y):
    return (ops.where(x >= y, g, 0) if needs[0] else None,
            ops.where(x < y, g, 0) if needs[1] else None)


def _min_vjp(ops, needs, g, ans, x, y):
    return (ops.where(x <= y, g, 0) if needs[0] else None,
            ops.where(x > y, g, 0) if needs[1] else None)


_max, maximum = _binary("maximum", lambda xp, x, y: xp.maximum(x, y), _max_vjp)
_min, minimum = _binary("minimum", lambda xp, x, y: xp.minimum(x, y), _min_vjp)


def _where_vjp(ops, needs, g, ans, c, x, y):
    return (None, ops.where(c, g, 0) if needs[1] else None,
            ops.where(c, 0, g) if needs[2] else None)


_where = defop("where", lambda xp, c, x, y: xp.where(c, x, y), _where_vjp, broadcasts=True,
               save_output=False)
# argwhere gives [n, rank] for every rank on NumPy and CuPy, [n, 0] for a scalar (as TF);
# stacking nonzero's arrays does not (NumPy refuses a 0-d input, CuPy returns [n, 1]).
_where_idx = defop("where_indices", lambda xp, c: xp.argwhere(c).astype(xp.int64, copy=False),
                   nondiff=True)


def where(condition, x=None, y=None, name=None):
    """Elements of ``x`` where ``condition`` holds, else of ``y`` (with broadcasting).

    With only ``condition``: the coordinates of its true (non-zero) elements, shape ``[n, rank]``
    (``[n, 0]`` for a scalar condition). Their number depends on the values, so on a device
    the host cannot read, the host waits for the device.
    """
    c = as_tensor(condition, "where")
    if x is None and y is None:
        return apply1(_where_idx, c)    # any dtype: the coordinates of non-zeros, as TF
    if c._value.dtype.kind != "b":
        raise TypeError(f"where: condition must be a bool tensor, got {dtype_name(c)}")
    if x is None or y is None:
        raise ValueError("where: x and y must both be given, or neither")
    x, y = binary("where", x, y)
    if not isinstance(x, Tensor):
        x = Tensor(y._device.asarray(x, dtype=y._value.dtype), y._device)
    if not isinstance(y, Tensor):
        y = Tensor(x._device.asarray(y, dtype=x._value.dtype), x._device)
    return apply(_where, (c, x, y))


_tanh, tanh = _unary("tanh", lambda xp, x: xp.tanh(x),
                     lambda ops, needs, g, ans, x: (g * (1 - ans * ans),), ufunc="tanh",
                     complex_ok=True)


def _sigmoid_fwd(xp, x):
    # exp(-|x|) never overflows; both halves are exact to rounding. float16 is computed in
    # float32 and rounded once (as TF), not rounded at each of the three steps.
    if x.dtype == np.float16:
        return _sigmoid_fwd(xp, x.astype(np.float32)).astype(np.float16)
    if x.dtype.kind == "c":
        return 1 / (1 + xp.exp(-x))
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


_sigmoid, sigmoid = _unary("sigmoid", _sigmoid_fwd,
                           lambda ops, needs, g, ans, x: (g * (ans * (1 - ans)),),
                           complex_ok=True)
_sin, sin = _unary("sin", lambda xp, x: xp.sin(x),
                   lambda ops, needs, g, ans, x: (g * ops.cos(x),), save_inputs=True,
                   save_output=False, ufunc="sin", complex_ok=True)
_cos, cos = _unary("cos", lambda xp, x: xp.cos(x),
                   lambda ops, needs, g, ans, x: (-g * ops.sin(x),), save_inputs=True,
                   save_output=False, ufunc="cos", complex_ok=True)
_tan, tan = _unary("tan", lambda xp, x: xp.tan(x),
                   lambda ops, needs, g, ans, x: (g * (1 + ans * ans),), ufunc="tan",
                   complex_ok=True)
_atan, atan = _unary("atan", lambda xp, x: xp.arctan(x),
                     lambda ops, needs, g, ans, x: (g / (1 + x * x),), save_inputs=True,
                     save_output=False, ufunc="arctan", complex_ok=True)
_asin, asin = _unary("asin", lambda xp, x: xp.arcsin(x),
                     lambda ops, needs, g, ans, x: (g * ops.rsqrt(1 - x * x),),
                     save_inputs=True, save_output=False, quiet=True, complex_ok=True)
_acos, acos = _unary("acos", lambda xp, x: xp.arccos(x),
                     lambda ops, needs, g, ans, x: (-g * ops.rsqrt(1 - x * x),),
                     save_inputs=True, save_output=False, quiet=True, complex_ok=True)
_sinh, sinh = _unary("sinh", lambda xp, x: xp.sinh(x),
                     lambda ops, needs, g, ans, x: (g * ops.cosh(x),), save_inputs=True,
                     save_output=False, quiet=True, complex_ok=True)
_cosh, cosh = _unary("cosh", lambda xp, x: xp.cosh(x),
                     lambda ops, needs, g, ans, x: (g * ops.sinh(x),), save_inputs=True,
                     save_output=False, quiet=True, complex_ok=True)


def _clip_fwd(xp, x, lo, hi):
    # TensorFlow's composition max(min(x, hi), lo): with lo > hi every value becomes lo
    return xp.maximum(xp.minimum(x, hi), lo)


def _clip_vjp(ops, needs, g, ans, x, lo, hi):
    # the gradients of that composition (ties pass to x, as minimum's and maximum's do)
    under_hi = x <= hi
    kept = ops.minimum(x, hi) >= lo
    return (ops.where(under_hi, ops.where(kept, g, 0), 0) if needs[0] else None,
            ops.where(kept, 0, g) if needs[1] else None,
            ops.where(under_hi, 0, ops.where(kept, g, 0)) if needs[2] else None)


_clip = defop("clip_by_value", _clip_fwd, _clip_vjp, broadcasts=True, save_output=False)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """Clip to ``[min, max]`` (``max(min(t, max), min)``: all ``min`` when min > max); the
    gradient passes (as 1) at both bounds."""
    t = as_tensor(t, "clip_by_value")
    lo = clip_value_min if isinstance(clip_value_min, Tensor) else operand(
        "clip_by_value", clip_value_min, t)
    hi = clip_value_max if isinstance(clip_value_max, Tensor) else operand(
        "clip_by_value", clip_value_max, t)
    for b in (lo, hi):
        if isinstance(b, Tensor) and b._value.dtype != t._value.dtype:
            raise TypeError(f"clip_by_value: bounds have dtype {dtype_name(b)}, t has "
                            f"{dtype_name(t)}")
    return apply(_clip, (t, lo, hi))


_log1p, log1p = _unary("log1p", lambda xp, x: xp.log1p(x),
                       lambda ops, needs, g, ans, x: (g / (1 + x),), save_inputs=True,
                       save_output=False, quiet=True, complex_ok=True)
_expm1, expm1 = _unary("expm1", lambda xp, x: xp.expm1(x),
                       lambda ops, needs, g, ans, x: (g * (ans + 1),), quiet=True,
                       complex_ok=True)


def _rsqrt_vjp(ops, needs, g, ans, x):
    return (ops.where(g == 0, 0, g * (-0.5 * ans * ans * ans)),)


_rsqrt, rsqrt = _unary("rsqrt", lambda xp, x: 1 / xp.sqrt(x), _rsqrt_vjp, quiet=True,
                       complex_ok=True)


def _recip_vjp(ops, needs, g, ans, x):
    return (ops.where(g == 0, 0, -g * ans * ans),)


_recip, reciprocal = _unary("reciprocal", lambda xp, x: 1 / x, _recip_vjp, quiet=True,
                            complex_ok=True)


def _softplus_fwd(xp, x):
    # log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|))
    return xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))


_softplus, softplus = _unary("softplus", _softplus_fwd,
                             lambda ops, needs, g, ans, x: (g * ops.sigmoid(x),),
                             save_inputs=True, save_output=False)


def _log_sigmoid_fwd(xp, x):
    return -(xp.maximum(-x, 0) + xp.log1p(xp.exp(-xp.abs(x))))


_log_sigmoid, log_sigmoid = _unary("log_sigmoid", _log_sigmoid_fwd,
                                   lambda ops, needs, g, ans, x: (g * ops.sigmoid(-x),),
                                   save_inputs=True, save_output=False)


def _sqdiff_vjp(ops, needs, g, ans, x, y):
    d = g * (2 * (x - y))
    return (d if needs[0] else None, -d if needs[1] else None)


_sqdiff, squared_difference = _binary("squared_difference", lambda xp, x, y: (x - y) * (x - y),
                                      _sqdiff_vjp)

_TWO_OVER_SQRT_PI = 2.0 / _pymath.sqrt(_pymath.pi)


def _erf_fwd(xp, x):
    return device_of(xp, x).erf(x)


_erf, erf = _unary("erf", _erf_fwd,
                   lambda ops, needs, g, ans, x: (g * (_TWO_OVER_SQRT_PI * ops.exp(-(x * x))),),
                   save_inputs=True, save_output=False)


def _erfc_fwd(xp, x):
    return device_of(xp, x).erfc(x)


def _erfc_vjp(ops, needs, g, ans, x):
    return (g * (-_TWO_OVER_SQRT_PI * ops.exp(-(x * x))),)


_erfc, erfc = _unary("erfc", _erfc_fwd, _erfc_vjp, save_inputs=True, save_output=False)


def _xlogy_fwd(xp, x, y):
    with _quiet(xp):
        return xp.where(x == 0, xp.zeros((), dtype=x.dtype), x * xp.log(y))


def _xlogy_vjp(ops, needs, g, ans, x, y):
    nz = x != 0
    gx = ops.where(nz, g * ops.log(ops.where(nz, y, 1)), 0) if needs[0] else None
    gy = ops.where(nz, g * x / ops.where(nz, y, 1), 0) if needs[1] else None
    return gx, gy


_xlogy, xlogy = _binary("xlogy", _xlogy_fwd, _xlogy_vjp, float_only=True)


def _dnn_fwd(xp, x, y):
    dt = x.dtype if hasattr(x, "dtype") else y.dtype
    with _quiet(xp):
        # (the safe divisor in the operands' dtype: a Python-number y would promote it)
        safe = xp.where(y == 0, 1, y).astype(dt, copy=False)
        return xp.where(y == 0, xp.zeros((), dtype=dt), x / safe)


def _dnn_vjp(ops, needs, g, ans, x, y):
    nz = y != 0
    ys = ops.where(nz, y, 1)
    return (ops.where(nz, g / ys, 0) if needs[0] else None,
            ops.where(nz, g * (-x / ys / ys), 0) if needs[1] else None)


_dnn, divide_no_nan = _binary("divide_no_nan", _dnn_fwd, _dnn_vjp, float_only=True)

# --- not differentiable ------------------------------------------------------------------

_floor, floor = _unary("floor", lambda xp, x: xp.floor(x), None, nondiff=True, ufunc="floor")
_ceil, ceil = _unary("ceil", lambda xp, x: xp.ceil(x), None, nondiff=True, ufunc="ceil")
# (half to even; integer tensors come back unchanged, as in TF)
_round, round = _unary("round", lambda xp, x: xp.round(x), None, nondiff=True, float_only=False)


def _check_int_divisor(xp, y, opname):
    # TF's CPU kernels refuse an integer division by zero; where the host can read the
    # divisor at no cost (NumPy) so do we (a device would have to wait for it)
    if xp is np and not np.all(y):
        raise InvalidArgumentError(f"{opname}: Integer division by zero")


def _floordiv_fwd(xp, x, y):
    if x.dtype.kind == "f":
        with _quiet(xp):
            return xp.floor(x / y)         # TF's floor(x / y), not NumPy's floor_divide
    _check_int_divisor(xp, y, "floordiv")
    return xp.floor_divide(x, y)


_floordiv, floordiv = _binary("floordiv", _floordiv_fwd, None, nondiff=True)


def _floormod_vjp(ops, needs, g, ans, x, y):
    return (g if needs[0] else None,
            -g * ops.floor(x / y) if needs[1] else None)


def _floormod_fwd(xp, x, y):
    if x.dtype.kind != "f":
        _check_int_divisor(xp, y, "floormod")
    with _quiet(xp):
        return xp.mod(x, y)


_floormod, floormod = _binary("floormod", _floormod_fwd, _floormod_vjp, save_output=False)
mod = floormod


def _cmp(name, fn):
    return _binary(name, fn, None, nondiff=True)


_eq, equal = _cmp("equal", lambda xp, x, y: x == y)
_ne, not_equal = _cmp("not_equal", lambda xp, x, y: x != y)
_lt, less = _cmp("less", lambda xp, x, y: x < y)
_le, less_equal = _cmp("less_equal", lambda xp, x, y: x <= y)
_gt, greater = _cmp("greater", lambda xp, x, y: x > y)
_ge, greater_equal = _cmp("greater_equal", lambda xp, x, y: x >= y)


def _logical(name, fn):
    op = defop(name, fn, None, nondiff=True)

    def f(x, y, name=None):
        x, y = binary(op.name, x, y)
        for v in (x, y):
            if isinstance(v, Tensor) and v._value.dtype.kind != "b":
                raise TypeError(f"{op.name}: expected bool tensors, got {dtype_name(v)}")
        return apply2(op, x, y)
    return op, f


_land, logical_and = _logical("logical_and", lambda xp, x, y: xp.logical_and(x, y))
_lor, logical_or = _logical("logical_or", lambda xp, x, y: xp.logical_or(x, y))
_lxor, logical_xor = _logical("logical_xor", lambda xp, x, y: xp.logical_xor(x, y))


def _bitwise(name, fn):
    op = defop(name, fn, None, nondiff=True)

    def f(x, y, name=None):
        x, y = binary(op.name, x, y)
        for v in (x, y):
            if isinstance(v, Tensor) and v._value.dtype.kind not in "iu":
                raise TypeError(f"{op.name}: expected integer tensors, got {dtype_name(v)}")
        return apply2(op, x, y)
    return op, f


# (on integer tensors; & | ^ ~ on them are these, as in TensorFlow)
_band, bitwise_and = _bitwise("bitwise_and", lambda xp, x, y: xp.bitwise_and(x, y))
_bor, bitwise_or = _bitwise("bitwise_or", lambda xp, x, y: xp.bitwise_or(x, y))
_bxor, bitwise_xor = _bitwise("bitwise_xor", lambda xp, x, y: xp.bitwise_xor(x, y))
_lshift, left_shift = _bitwise("left_shift", lambda xp, x, y: xp.left_shift(x, y))
_rshift, right_shift = _bitwise("right_shift", lambda xp, x, y: xp.right_shift(x, y))
_binv = defop("invert", lambda xp, x: xp.invert(x), None, nondiff=True)


def bitwise_invert(x, name=None):
    """``~x`` of an integer tensor (``tf.bitwise.invert``)."""
    x = as_tensor(x, "invert")
    if x._value.dtype.kind not in "iu":
        raise TypeError(f"invert: expected an integer tensor, got {dtype_name(x)}")
    return apply1(_binv, x)


_lnot, logical_not = _unary("logical_not", lambda xp, x: xp.logical_not(x), None, nondiff=True,
                            float_only=False)
_isnan, is_nan = _unary("is_nan", lambda xp, x: xp.isnan(x), None, nondiff=True, ufunc="isnan")
_isinf, is_inf = _unary("is_inf", lambda xp, x: xp.isinf(x), None, nondiff=True, ufunc="isinf")
_isfinite, is_finite = _unary("is_finite", lambda xp, x: xp.isfinite(x), None, nondiff=True,
                              ufunc="isfinite")


def add_n(inputs, name=None):
    """Sum of a list of tensors of the same shape and dtype."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("add_n: inputs must be a non-empty list")
    total = as_tensor(inputs[0], "add_n")
    for t in inputs[1:]:
        t = as_tensor(t, "add_n")
        if tuple(t._value.shape) != tuple(total._value.shape):
            raise ValueError(f"add_n: shapes {tuple(total._value.shape)} and "
                             f"{tuple(t._value.shape)} differ")
        total = add(total, t)
    return total



# --- complex numbers ------------------------------------------------------------------------
# Gradients follow TensorFlow: for a real loss L of z = x + iy the gradient is dL/dx + i dL/dy.
# These rules cross between real and complex values, so they are written for that convention
# themselves (complex_rule); holomorphic ops get it from Op.complex_view.

def _complex_dtype(dt):
    return np.complex128 if np.dtype(dt) == np.float64 else np.complex64


def _real_fwd(xp, x):
    return xp.real(x) if x.dtype.kind == "c" else x


def _real_vjp(ops, needs, g, ans, x):
    return (ops.cast(g, dtype=x.dtype, src=g.dtype),) if _kind(x) == "c" else (g,)


def _imag_fwd(xp, x):
    return xp.imag(x) if x.dtype.kind == "c" else xp.zeros_like(x)


def _imag_vjp(ops, needs, g, ans, x):
    if _kind(x) != "c":
        return (None,)
    return (ops.complex(ops.zeros_like(g), g, dtype=x.dtype),)


def _conj_vjp(ops, needs, g, ans, x):
    return (ops.conj(g),)


def _angle_fwd(xp, x):
    if x.dtype.kind == "c":
        return xp.angle(x)
    return xp.where(x < 0, np.pi, 0.0).astype(x.dtype)


def _angle_vjp(ops, needs, g, ans, x):
    # TensorFlow's: -g / (imag(x) + i real(x))
    if _kind(x) != "c":
        return (None,)
    swapped = ops.complex(ops.imag(x), ops.real(x), dtype=x.dtype)
    return (-ops.cast(g, dtype=x.dtype, src=g.dtype) / swapped,)


def _complex_fwd(xp, re, im, dtype):
    return (re.astype(dtype) + im.astype(dtype) * 1j).astype(dtype, copy=False)


def _complex_vjp(ops, needs, g, ans, re, im, dtype):
    return (ops.real(g) if needs[0] else None, ops.imag(g) if needs[1] else None)


_real = defop("real", _real_fwd, _real_vjp, save_output=False, complex_rule=True)
_imag = defop("imag", _imag_fwd, _imag_vjp, save_output=False, complex_rule=True)
_conj = defop("conj", lambda xp, x: xp.conj(x) if x.dtype.kind == "c" else x, _conj_vjp,
              save_inputs=False, save_output=False, complex_rule=True)
_angle = defop("angle", _angle_fwd, _angle_vjp, save_output=False, complex_rule=True)
_complex = defop("complex", _complex_fwd, _complex_vjp, save_inputs=False, save_output=False,
                 broadcasts=True, complex_rule=True)


def real(input, name=None):
    """The real part of a complex tensor (a real tensor is returned as it is)."""
    return apply1(_real, as_tensor(input, "real"))


def imag(input, name=None):
    """The imaginary part of a complex tensor (zeros for a real tensor)."""
    return apply1(_imag, as_tensor(input, "imag"))


def conj(x, name=None):
    """The complex conjugate (a real tensor is returned as it is)."""
    x = as_tensor(x, "conj")
    if x._value.dtype.kind not in "fc":
        raise TypeError(f"conj: expected a floating-point or complex tensor, got {dtype_name(x)}")
    return apply1(_conj, x)


def angle(input, name=None):
    """The argument of each complex element, in (-pi, pi] (0 or pi for a real tensor)."""
    x = as_tensor(input, "angle")
    if x._value.dtype.kind not in "fc":
        raise TypeError(f"angle: expected a floating-point or complex tensor, got "
                        f"{dtype_name(x)}")
    return apply1(_angle, x)


def complex(real, imag, name=None):
    """``real + i * imag``: float32 parts give complex64, float64 parts complex128."""
    re, im = binary("complex", real, imag)     # (same dtypes, one device)
    if not isinstance(re, Tensor):
        re = Tensor(im._device.asarray(re, dtype=im._value.dtype), im._device)
    if not isinstance(im, Tensor):
        im = Tensor(re._device.asarray(im, dtype=re._value.dtype), re._device)
    if re._value.dtype not in (np.float32, np.float64):
        raise TypeError(f"complex: real and imag must be float32 or float64, got "
                        f"{dtype_name(re)}")
    return apply(_complex, (re, im), {"dtype": np.dtype(_complex_dtype(re._value.dtype))})


# Python operators on tensors call the op functions directly (one frame less per op).
def _swap(fn):
    def reflected(self, other):
        return fn(other, self)
    reflected.__name__ = f"reflected_{fn.__name__}"
    c = _C_BINARY.get(fn.__name__)
    if c is not None:
        op, _, pyop, float_only = c
        return _speedups.binary(op, reflected, pyop, float_only, True)
    return reflected


Tensor.__add__ = add
Tensor.__radd__ = _swap(add)
Tensor.__sub__ = subtract
Tensor.__rsub__ = _swap(subtract)
Tensor.__mul__ = multiply
Tensor.__rmul__ = _swap(multiply)
Tensor.__neg__ = negative

if _speedups is not None:
    # the backward sweep runs these rules itself (the same array operations, no frame)
    for _op in (_add, _sub, _mul, _neg, _tanh):
        _speedups.set_rule(_op.name, _op.vjp)
