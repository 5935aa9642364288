"""``keras.ops``: Keras 3's backend-agnostic ops (``tf.keras.ops``) on gradtape tensors.

    from gradtape.keras import ops
    probs = ops.softmax(logits, axis=-1)
    loss = ops.mean(ops.square(y - ops.stop_gradient(target)), axis=-1)
    small = ops.image.resize(images, (64, 64))

Every name has Keras' signature and the semantics of Keras' TensorFlow backend, dtype rules
included: operands of different dtypes are promoted by Keras' lattice
(``keras.backend.result_type``, JAX's rules: ``int32`` with ``float16`` is ``float16``,
``uint8`` with ``int8`` is ``int16``); Python ``int`` and ``float`` operands of the
arithmetic ops are "weak" (``ops.add(int8_tensor, 3)`` stays ``int8``,
``ops.multiply(int32_tensor, 0.5)`` is ``float32``); float functions of integers give
floatx (``ops.mean``, ``ops.sqrt``, ``ops.exp`` of ``int32`` are ``float32``); ``ops.sum``
of ``bool``/``int8`` is ``int32``; ``ops.argmax`` and friends give ``int32``. Results are
gradtape tensors on their inputs' device, differentiable with :class:`gradtape.GradientTape`
wherever Keras' are.

The sub-namespaces of ``keras.ops`` are here too: ``ops.numpy``, ``ops.nn``, ``ops.linalg``
and ``ops.image`` (only there: ``resize``, ``affine_transform``, ``map_coordinates`` ...).
Called on a symbolic ``keras.Input`` (or a layer's output in a functional model), an op
records a node of the model, as in Keras.

Not provided: ``image.elastic_transform``. ``sparse=True`` arguments raise.
"""
from __future__ import annotations

import builtins
import contextlib
import functools
import itertools
import math as _pymath
import re
import sys
import types

import numpy as np

from . import nest as _nest
from .dtypes import as_dtype
from .ops import core as _core, extra as _extra, linalg as _la, math as _m, nn as _nn
from .ops import reduce as _r, scatter as _sc, shape as _sh, sorting as _so
from .linalg import matrix_transpose as _mT
from .registry import apply as _apply, defop as _defop
from .tensor import Tensor, convert_to_tensor as _gt_convert

# A module standing as a package: ``import gradtape.keras_ops.nn`` finds the namespaces
# registered in ``sys.modules`` at the end of this file.
__path__: list = []

_bool = builtins.bool
_int = builtins.int
_float = builtins.float
_min = builtins.min
_max = builtins.max
_abs = builtins.abs
_sum = builtins.sum
_range = builtins.range
_round = builtins.round
_slice = builtins.slice
_map = builtins.map
_any = builtins.any
_all = builtins.all


def _floatx():
    from .layers import _FLOATX
    return _FLOATX[0]


def _epsilon():
    from .constraints import _EPSILON
    return _EPSILON[0]


# --- dtypes: Keras' names and its promotion lattice -----------------------------------------

_INT_TYPES = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64")
_FLOAT_TYPES = ("bfloat16", "float16", "float32", "float64")
_ALLOWED = ("bool",) + _INT_TYPES + _FLOAT_TYPES


def _standardize(dtype):
    """Keras' name for a dtype (``None``: floatx; Python ``int``: ``"int64"``, ``float``:
    ``"float32"``), as ``keras.backend.standardize_dtype``."""
    if dtype is None:
        return _floatx()
    if dtype is _int or dtype == "int":
        return "int64"
    if dtype is _float:
        return "float32"
    if dtype is _bool:
        return "bool"
    name = getattr(dtype, "name", None)
    if not isinstance(name, str):
        name = getattr(dtype, "__name__", dtype)
    if isinstance(name, str) and name == "bool_":
        name = "bool"
    if not isinstance(name, str) or name not in _ALLOWED:
        try:
            name = as_dtype(dtype).name
        except TypeError:
            raise ValueError(f"Invalid dtype: {dtype}") from None
        if name not in _ALLOWED:
            raise ValueError(f"Invalid dtype: {dtype}")
    return name


def _lattice_upper_bounds():
    u1, u2, u4, u8, i1, i2, i4, i8 = _INT_TYPES
    bf, f2, f4, f8 = _FLOAT_TYPES
    lattice = {"bool": ["int"], u1: [i2, u2], u2: [i4, u4], u4: [i8, u8], u8: ["float"],
               "int": [u1, i1], i1: [i2], i2: [i4], i4: [i8], i8: ["float"],
               "float": [bf, f2], bf: [f4], f2: [f4], f4: [f8], f8: []}
    bounds = {n: {n} for n in lattice}
    for n in lattice:
        while True:
            new = set().union(*(lattice[b] for b in bounds[n]))
            if new <= bounds[n]:
                break
            bounds[n] |= new
    return bounds


_UPPER = _lattice_upper_bounds()


@functools.lru_cache(512)
def _least_upper_bound(*nodes):
    n = set(nodes)
    common = set.intersection(*(_UPPER[x] for x in n))
    lub = (common & n) or {c for c in common if common <= _UPPER[c]}
    if len(lub) != 1:
        raise ValueError(f"Input dtypes {tuple(str(x) for x in nodes)} have no available "
                         "implicit dtype promotion path. Try explicitly casting inputs to the "
                         "desired output type.")
    return lub.pop()


def _weak(name, weak):
    if not weak or name == "bool":
        return name
    return "float" if "float" in name else "int"


def _result_type(*dtypes):
    """The dtype Keras' promotion gives ``dtypes`` (dtypes, dtype names, tensors' dtypes, or
    the Python types ``int``/``float``, which are weak), as ``keras.backend.result_type``:
    ``("int32", "float16")`` give ``"float16"``, ``("int8", int)`` give ``"int8"``,
    ``("int32", float)`` give floatx."""
    if not dtypes:
        return _floatx()
    dtypes = [_floatx() if d is None else d for d in dtypes]
    names = [_standardize(d) for d in dtypes]
    weak = [d is _int or d is _float for d in dtypes]
    if len(names) == 1:
        out, out_weak = names[0], weak[0]
    elif len(set(names)) == 1 and not _all(weak):
        out, out_weak = names[0], False
    elif _all(weak):
        out, out_weak = _least_upper_bound(*set(names)), True
    else:
        out = _least_upper_bound(*{_weak(n, w) for n, w in zip(names, weak)})
        out_weak = out in ("int", "float")
    out_weak = out != "bool" and out_weak
    if out_weak or out in ("int", "float"):
        prec = _floatx()[-2:]
        out = "bool" if out == "bool" else ("int" + prec if out[0] == "i" else
                                            "uint" + prec if out[0] == "u" else "float" + prec)
    return "uint32" if out == "uint64" else out


def _dn(x) -> str:
    """The Keras dtype name of a tensor."""
    return as_dtype(x._value.dtype).name


def _is_int(name):
    return "int" in name


def _is_float(name):
    return "float" in name


# --- conversion -------------------------------------------------------------------------------

def _tensor(x, dtype=None) -> Tensor:
    """``x`` as a tensor, cast to ``dtype`` when given (Keras' ``convert_to_tensor``: Python
    floats are float32, ints int32, NumPy arrays keep their dtype)."""
    if isinstance(x, Tensor):
        if dtype is not None and _dn(x) != dtype:
            return _core.cast(x, dtype)
        return x
    if dtype is not None and not (_is_int(dtype) or dtype == "bool"):
        if isinstance(x, (list, tuple)) and _nest_has_tensor(x):
            return _core.cast(_gt_convert(x), dtype)
        return _gt_convert(np.asarray(x, dtype=dtype) if not _is_native(x) else x,
                           dtype=dtype)
    t = _gt_convert(x)
    if dtype is not None and _dn(t) != dtype:
        t = _core.cast(t, dtype)
    return t


def _is_native(x):
    from .backend import current_device
    return current_device().is_native(x) and not isinstance(x, np.ndarray)


def _nest_has_tensor(x):
    return _any(isinstance(v, Tensor) for v in _nest.flatten(x))


def _cast(x, dtype):
    x = _tensor(x)
    return x if _dn(x) == dtype else _core.cast(x, dtype)


def _dtype_of(v):
    """What Keras' promotion sees of an operand: a tensor's or array's dtype, else the
    Python type (``int``/``float`` weak)."""
    if isinstance(v, Tensor):
        return _dn(v)
    d = getattr(v, "dtype", None)
    return d if d is not None else type(v)


def _near(*values):
    """A scope that puts new tensors on the device of the first tensor of ``values`` (the
    current device's scope when there is none, or it is that device)."""
    from .backend import current_device, device_scope
    for v in values:
        if isinstance(v, Tensor):
            if v._device is not current_device():
                return device_scope(v._device)
            break
    return contextlib.nullcontext()


def _promote(x1, x2, *extra):
    """``x1`` and ``x2`` as tensors of their promoted dtype; Python ints and floats are weak
    (``extra``: more dtypes for the promotion, e.g. ``float``)."""
    with _near(x1, x2):
        return _promote_here(x1, x2, *extra)


def _promote_here(x1, x2, *extra):
    if not isinstance(x1, (_int, _float)):
        x1 = _tensor(x1)
    if not isinstance(x2, (_int, _float)):
        x2 = _tensor(x2)
    dtype = _result_type(_dtype_of(x1), _dtype_of(x2), *extra)
    return _tensor(x1, dtype), _tensor(x2, dtype), dtype


def _promote_tensors(x1, x2, *extra):
    """Both converted first (Python numbers are then int32/float32), then promoted."""
    with _near(x1, x2):
        x1, x2 = _tensor(x1), _tensor(x2)
    dtype = _result_type(_dn(x1), _dn(x2), *extra)
    return _cast(x1, dtype), _cast(x2, dtype), dtype


def _const(like: Tensor, value, dtype=None):
    """A constant on ``like``'s device (``dtype``: ``like``'s by default)."""
    dt = as_dtype(dtype).np if dtype is not None else like._value.dtype
    dev = like._device
    return Tensor(dev.asarray(np.asarray(value, dtype=dt)), dev)


def _axes(axis, ndim):
    """``axis`` (int, sequence or None) as a tuple of non-negative ints (None stays None)."""
    if axis is None:
        return None
    if isinstance(axis, Tensor):
        axis = axis.numpy().tolist()
    if isinstance(axis, (list, tuple)):
        return tuple(_int(a) % _max(ndim, 1) for a in axis)
    return (_int(axis) % _max(ndim, 1),)


def _axis_arg(axis):
    """``axis`` for the reducers: an int, a list, or None."""
    if isinstance(axis, tuple):
        return list(axis)
    return axis


def _shape_tuple(shape):
    if isinstance(shape, Tensor):
        return tuple(_int(s) for s in shape.numpy().reshape(-1).tolist())
    if isinstance(shape, (_int, np.integer)):
        return (_int(shape),)
    return tuple(_int(s) for s in shape)


def _xp_op(name, forward, multi=False):
    """A non-differentiable primitive running ``forward(xp, *arrays, **attrs)`` on the device."""
    op = _defop("keras_ops." + name, forward, nondiff=True, multi=multi)

    def run(*args, **attrs):
        return _apply(op, args, attrs)
    return run


_signbit = _xp_op("signbit", lambda xp, x: xp.signbit(x))
_gcd = _xp_op("gcd", lambda xp, a, b: xp.gcd(a, b))
_lcm = _xp_op("lcm", lambda xp, a, b: xp.lcm(a, b))
_bitcast = _xp_op("view", lambda xp, x, dtype: xp.ascontiguousarray(x).view(dtype))
_nonzero = _xp_op("nonzero", lambda xp, x: tuple(i.astype(np.int32) for i in xp.nonzero(x)),
                  multi=True)


def _unique_fwd(xp, x, axis):
    vals, index, inverse, counts = xp.unique(x, return_index=True, return_inverse=True,
                                             return_counts=True, axis=axis)
    return (vals, index.astype(np.int32), inverse.reshape(-1).astype(np.int32),
            counts.astype(np.int32))


_unique4 = _xp_op("unique", _unique_fwd, multi=True)


# --- core ---------------------------------------------------------------------------------------

def cast(x, dtype):
    """``x`` as ``dtype`` (floats to ints truncate toward zero)."""
    return _core.cast(_tensor(x), _standardize(dtype))


def saturate_cast(x, dtype):
    """``x`` clipped to the range of ``dtype``, then cast."""
    dtype = _standardize(dtype)
    x = _tensor(x)
    in_dtype = _dn(x)

    def limits(name):
        if name == "bool":
            return 0, 1
        info = np.iinfo(name) if _is_int(name) else np.finfo(name)
        return info.min, info.max
    in_min, in_max = limits(in_dtype)
    out_min, out_max = limits(dtype)
    lo = np.maximum(in_min, out_min).astype(in_dtype)
    if lo < out_min:
        lo = np.nextafter(lo, 0, dtype=in_dtype)
    hi = np.minimum(in_max, out_max).astype(in_dtype)
    if hi > out_max:
        hi = np.nextafter(hi, 0, dtype=in_dtype)
    if in_dtype == "bool":
        x = _core.cast(x, "int32")
        lo, hi = np.int32(lo), np.int32(hi)
    return _core.cast(clip(x, lo.item(), hi.item()), dtype)


def convert_to_tensor(x, dtype=None, sparse=None, ragged=None):
    """``x`` (array, number, list, tensor) as a tensor of ``dtype`` (a tensor of another
    dtype is cast). ``sparse``/``ragged`` are accepted (a dense ``x`` stays dense)."""
    return _tensor(x, None if dtype is None else _standardize(dtype))


def convert_to_numpy(x):
    """``x`` as a NumPy array (a tensor is copied to the host)."""
    if isinstance(x, Tensor):
        return np.array(x.numpy())
    return np.array(x)


def is_tensor(x):
    """Whether ``x`` is a gradtape tensor (or Variable)."""
    return isinstance(x, Tensor)


def dtype(x):
    """The dtype name of ``x`` (``"float32"`` ...)."""
    if isinstance(x, Tensor):
        return _dn(x)
    return _standardize(x.dtype)


def shape(x):
    """The shape of ``x`` as a tuple of ints."""
    if isinstance(x, Tensor):
        return tuple(x._value.shape)
    if hasattr(x, "shape") and not isinstance(x, np.ndarray):
        return tuple(x.shape)
    return tuple(_tensor(x)._value.shape)


def stop_gradient(variable):
    """``variable``'s value, with no gradient flowing back through it."""
    return _core.stop_gradient(_tensor(variable))


def _run_cond(pred):
    if isinstance(pred, Tensor):
        from .control_flow import _host_bool
        return _host_bool(pred, "cond")
    return _bool(pred)


def cond(pred, true_fn, false_fn):
    """``true_fn()`` if ``pred`` else ``false_fn()``."""
    return true_fn() if _run_cond(pred) else false_fn()


def switch(index, branches, *operands):
    """``branches[index](*operands)`` (``index`` clipped to the branches)."""
    i = _int(_tensor(index, "int32").numpy()) if isinstance(index, Tensor) else _int(index)
    i = _min(_max(i, 0), len(branches) - 1)
    return _nest.map_structure(lambda v: v if v is None else _tensor(v), branches[i](*operands))


def while_loop(cond, body, loop_vars, maximum_iterations=None):
    """``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)`` (at most
    ``maximum_iterations`` times); a single loop variable may be passed bare."""
    from .control_flow import while_loop as _while
    is_tuple = isinstance(loop_vars, (tuple, list))
    loop_vars = tuple(loop_vars) if is_tuple else (loop_vars,)

    def _body(*args):
        out = body(*args)
        return tuple(out) if is_tuple else (out,)
    out = _while(cond, _body, loop_vars, maximum_iterations=maximum_iterations)
    return tuple(out) if is_tuple else out[0]


def fori_loop(lower, upper, body_fun, init_val):
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)`` (``i`` an int32
    scalar tensor)."""
    if isinstance(lower, (_int, np.integer)) and isinstance(upper, (_int, np.integer)):
        val = init_val       # known bounds: no loop condition to read from the device
        for i in _range(_int(lower), _int(upper)):
            val = body_fun(_gt_convert(np.int32(i)), val)
        return val
    from .control_flow import while_loop as _while
    return _while(lambda i, val: i < upper, lambda i, val: (i + 1, body_fun(i, val)),
                  (lower, init_val))[1]


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """``carry, y = f(carry, x)`` over the slices ``x`` of ``xs`` along axis 0 (or
    ``length`` times with ``x = None``); returns ``(carry, ys stacked)``, as ``jax.lax.scan``."""
    if not callable(f):
        raise TypeError(f"`f` should be a callable. Received: f={f}")
    if not isinstance(unroll, _bool) and (not isinstance(unroll, _int) or unroll < 1):
        raise ValueError(f"`unroll` must be an positive integer or boolean. "
                         f"Received: unroll={unroll}")
    if xs is None and length is None:
        raise ValueError("Got no `xs` to scan over and `length` not provided.")
    xs_flat = [] if xs is None else [_tensor(v) for v in _nest.flatten(xs)]
    n = _int(length) if length is not None else xs_flat[0]._value.shape[0]
    rows = [_sh.unstack(v, num=v._value.shape[0]) for v in xs_flat]
    carry = _nest.map_structure(_tensor, init)
    ys = [None] * n
    for i in (_range(n - 1, -1, -1) if reverse else _range(n)):
        x = None if xs is None else _nest.pack_sequence_as(xs, [r[i] for r in rows]) \
            if _nest.is_nested(xs) else rows[0][i]
        carry, y = f(carry, x)
        ys[i] = y
    if n == 0 or ys[0] is None:
        return carry, None
    flat = [_nest.flatten(y) for y in ys]
    stacked = [_sh.stack([_tensor(r[j]) for r in flat]) for j in _range(len(flat[0]))]
    return carry, _nest.pack_sequence_as(ys[0], stacked)


def associative_scan(f, elems, reverse=False, axis=0):
    """The inclusive prefix combination of ``elems`` (a tensor or structure of tensors) by
    the associative ``f`` along ``axis`` (from the end with ``reverse``)."""
    if not callable(f):
        raise TypeError(f"`f` should be a callable. Received: f={f}")
    flat = [_tensor(e) for e in _nest.flatten(elems)]
    n = flat[0]._value.shape[axis]
    if _any(e._value.shape[axis] != n for e in flat[1:]):
        raise ValueError("Array inputs to associative_scan must have the same first "
                         f"dimension. (saw: {[tuple(e._value.shape) for e in flat]})")

    def part(e, i):
        key = [_slice(None)] * e._value.ndim
        key[axis] = _slice(i, i + 1)
        return e[tuple(key)]
    order = list(_range(n - 1, -1, -1)) if reverse else list(_range(n))
    acc = None
    outs = {}
    for i in order:
        cur = [part(e, i) for e in flat]
        if acc is None:
            acc = cur
        else:
            acc = _nest.flatten(f(_nest.pack_sequence_as(elems, acc),
                                  _nest.pack_sequence_as(elems, cur)))
        outs[i] = acc
    res = [_sh.concat([outs[i][j] for i in _range(n)], axis=axis) for j in _range(len(flat))]
    return _nest.pack_sequence_as(elems, res)


def map(f, xs):  # noqa: A001 (Keras' name)
    """``f`` applied to each slice of ``xs`` (a tensor or structure) along axis 0, stacked."""
    from .control_flow import map_fn
    return map_fn(f, _nest.map_structure(_tensor, xs))


def vectorized_map(function, elements):
    """``function`` of each slice of ``elements`` along axis 0, the results stacked."""
    from .control_flow import vectorized_map as _vmap
    return _vmap(function, elements)


def custom_gradient(f):
    """``f`` returning ``(y, grad_fn)``: ``y`` whose gradient is ``grad_fn(upstream)``."""
    from .functional import custom_gradient as _cg
    return _cg(f)


def scatter(indices, values, shape):
    """A zero tensor of ``shape`` with ``values`` added at ``indices`` (repeats sum)."""
    return _sc.scatter_nd(_tensor(indices), _tensor(values), _shape_tuple(shape))


def scatter_update(inputs, indices, updates, reduction=None):
    """``inputs`` with the slices at ``indices`` replaced by ``updates`` (``reduction``:
    ``"add"``, ``"max"``, ``"min"`` or ``"mul"`` combines them instead)."""
    if reduction is not None:
        reduction = reduction.lower()
        if reduction not in ("add", "max", "min", "mul"):
            raise ValueError(f"Invalid reduction: {reduction}. Supported values are: None, "
                             "'add', 'max', 'min', 'mul'.")
    inputs, indices, updates = _tensor(inputs), _tensor(indices), _tensor(updates)
    if reduction is None:
        return _sc.tensor_scatter_nd_update(inputs, indices, updates)
    if reduction == "add":
        return _sc.tensor_scatter_nd_add(inputs, indices, updates)
    if reduction == "max":
        return _extra.tensor_scatter_nd_max(inputs, indices, updates)
    if reduction == "min":
        return _extra.tensor_scatter_nd_min(inputs, indices, updates)
    result = inputs
    for i in _range(indices._value.shape[0]):
        idx = indices[i:i + 1]
        result = _sc.tensor_scatter_nd_update(
            result, idx, _sh.gather_nd(result, idx) * updates[i])
    return result


def _host_ints(v):
    if isinstance(v, Tensor):
        return [_int(a) for a in v.numpy().reshape(-1).tolist()]
    if isinstance(v, (_int, np.integer)):
        return [_int(v)]
    return [_int(a.numpy()) if isinstance(a, Tensor) else _int(a) for a in v]


def slice(inputs, start_indices, shape):  # noqa: A001 (Keras' name)
    """The block of ``inputs`` of ``shape`` starting at ``start_indices`` (``-1`` in
    ``shape``: to the end)."""
    return _extra.slice(_tensor(inputs), _host_ints(start_indices), _host_ints(shape))


def slice_update(inputs, start_indices, updates):
    """``inputs`` with the block at ``start_indices`` replaced by ``updates`` (the start is
    clamped so the block fits, as ``dynamic_update_slice``)."""
    inputs = _tensor(inputs)
    updates = _cast(updates, _dn(inputs))
    starts = _host_ints(start_indices)
    dims = tuple(inputs._value.shape)
    ushape = tuple(updates._value.shape)
    starts = [_min(_max(s, 0), d - u) for s, d, u in zip(starts, dims, ushape)]
    pads = [[s, d - s - u] for s, d, u in zip(starts, dims, ushape)]
    mask = np.zeros(dims, np.bool_)
    mask[tuple(_slice(s, s + u) for s, u in zip(starts, ushape))] = True
    return _m.where(_const(inputs, mask, "bool"), _sh.pad(updates, pads), inputs)


def unstack(x, num=None, axis=0):
    """The slices of ``x`` along ``axis``, as a list."""
    return _sh.unstack(_tensor(x), num=num, axis=axis)


def jvp(fun, primals, tangents, has_aux=False):
    """``(fun(*primals), J @ tangents)`` (and ``aux`` with ``has_aux``), by forward-mode
    differentiation."""
    from .forward import ForwardAccumulator
    primal_flat = [_tensor(p) for p in _nest.flatten(primals)]
    tangent_flat = [_cast(t, _dn(p)) for t, p in zip(_nest.flatten(tangents), primal_flat)]
    primals = _nest.pack_sequence_as(primals, primal_flat)
    with ForwardAccumulator(primal_flat, tangent_flat) as acc:
        if has_aux:
            out, aux = fun(*primals)
        else:
            out = fun(*primals)
        out_flat = _nest.flatten(out)
        tangents_out = [acc.jvp(o) for o in out_flat]
    tangents_out = _nest.pack_sequence_as(out, tangents_out)
    if has_aux:
        return out, tangents_out, aux
    return out, tangents_out


# --- numpy: elementwise -------------------------------------------------------------------------

def _named(fn, name, doc):
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.__module__ = __name__
    globals()[name] = fn
    return fn


def _float_dtype(x):
    """Keras' dtype for a float function of ``x``: int64 gives floatx, other ints and bool
    promote with a weak float (floatx), floats stay."""
    d = _dn(x)
    return _floatx() if d == "int64" else _result_type(d, _float)


def _float_unary(name, fn):
    def op(x):
        x = _tensor(x)
        return fn(_cast(x, _float_dtype(x)))
    return _named(op, name, f"Elementwise ``{name}``; integers and bools give floatx.")


def _exp_unary(name, fn):
    def op(x):
        x = _tensor(x)
        d = _dn(x)
        return fn(_cast(x, _floatx()) if _is_int(d) or d == "bool" else x)
    return _named(op, name, f"Elementwise ``{name}``; integers and bools give floatx.")


def _log_base(base):
    return lambda x: _m.divide(_m.log(x), _m.log(_const(x, base)))


for _name, _fn in {"arccos": _m.acos, "arccosh": _extra.acosh, "arcsin": _m.asin,
                   "arcsinh": _extra.asinh, "arctan": _m.atan, "arctanh": _extra.atanh,
                   "ceil": _m.ceil, "cos": _m.cos, "cosh": _m.cosh, "floor": _m.floor,
                   "log": _m.log, "log1p": _m.log1p, "log2": _log_base(2.0),
                   "log10": _log_base(10.0), "sin": _m.sin, "sinh": _m.sinh, "tan": _m.tan,
                   "tanh": _m.tanh, "sqrt": _m.sqrt}.items():
    _float_unary(_name, _fn)
for _name, _fn in {"exp": _m.exp, "expm1": _m.expm1,
                   "exp2": lambda x: _m.pow(_const(x, 2.0), x)}.items():
    _exp_unary(_name, _fn)


def _arith(name, fn, *extra, doc=""):
    def op(x1, x2):
        a, b, _ = _promote(x1, x2, *extra)
        return fn(a, b)
    return _named(op, name, doc or f"Elementwise ``{name}`` with Keras' dtype promotion "
                                   "(Python numbers are weak).")


def _fminmax(pick):
    def fn(a, b):
        out = pick(a, b)
        if not _is_float(_dn(a)):
            return out
        na, nb = _m.is_nan(a), _m.is_nan(b)
        out = _m.where(_m.logical_and(na, _m.logical_not(nb)), b, out)
        return _m.where(_m.logical_and(nb, _m.logical_not(na)), a, out)
    return fn


def _power(a, b):
    d = _dn(a)
    if "uint" in d:
        return _core.cast(_m.pow(_core.cast(a, "int32"), _core.cast(b, "int32")), d)
    return _m.pow(a, b)


_arith("add", _m.add)
_arith("subtract", _m.subtract)
_arith("multiply", _m.multiply)
_arith("maximum", _m.maximum)
_arith("minimum", _m.minimum)
_arith("fmax", _fminmax(_m.maximum), doc="Elementwise maximum ignoring NaNs.")
_arith("fmin", _fminmax(_m.minimum), doc="Elementwise minimum ignoring NaNs.")
_arith("floor_divide", _m.floordiv)
_arith("power", _power)
_arith("divide", _m.divide, _float, doc="``x1 / x2`` (integers give floatx).")
_arith("true_divide", _m.divide, _float, doc="``x1 / x2`` (integers give floatx).")
_arith("divide_no_nan", _m.divide_no_nan, _float, doc="``x1 / x2``, 0 where ``x2`` is 0.")


def _compare(name, fn):
    def op(x1, x2):
        a, b, _ = _promote_tensors(x1, x2)
        return fn(a, b)
    return _named(op, name, f"Elementwise ``{name}`` (bool), after Keras' promotion.")


for _name, _fn in {"equal": _m.equal, "not_equal": _m.not_equal, "greater": _m.greater,
                   "greater_equal": _m.greater_equal, "less": _m.less,
                   "less_equal": _m.less_equal}.items():
    _compare(_name, _fn)


def _bitwise(name, fn):
    def op(x, y):
        a, b, _ = _promote_tensors(x, y)
        return fn(a, b)
    return _named(op, name, f"Elementwise ``{name}`` of integers (bools: logical), after "
                            "Keras' promotion.")


for _name, _fn in {"bitwise_and": _m.bitwise_and, "bitwise_or": _m.bitwise_or,
                   "bitwise_xor": _m.bitwise_xor}.items():
    _bitwise(_name, _fn)


def _logical(name, fn):
    def op(x1, x2):
        return fn(_cast(x1, "bool"), _cast(x2, "bool"))
    return _named(op, name, f"Elementwise ``{name}`` of ``x1`` and ``x2`` taken as bools.")


for _name, _fn in {"logical_and": _m.logical_and, "logical_or": _m.logical_or,
                   "logical_xor": _m.logical_xor}.items():
    _logical(_name, _fn)


def logical_not(x):
    """Elementwise not of ``x`` taken as bools."""
    return _m.logical_not(_cast(x, "bool"))


def _shift(name, fn):
    def op(x, y):
        x = _tensor(x)
        if not isinstance(y, _int):
            x, y, _ = _promote_tensors(x, y)
        return fn(x, y)
    return _named(op, name, f"Elementwise ``{name}`` of integers.")


for _name, _fn in {"bitwise_left_shift": _m.left_shift, "left_shift": _m.left_shift,
                   "bitwise_right_shift": _m.right_shift, "right_shift": _m.right_shift}.items():
    _shift(_name, _fn)


def bitwise_invert(x):
    """Elementwise bitwise not of integers (logical not of bools)."""
    return _m.bitwise_invert(_tensor(x))


bitwise_not = _named(lambda x: bitwise_invert(x), "bitwise_not", bitwise_invert.__doc__)


def absolute(x):
    """Elementwise absolute value (unsigned ints and bools pass through)."""
    x = _tensor(x)
    d = _dn(x)
    if "uint" in d or d == "bool":
        return x
    return _m.abs(x)


abs = _named(lambda x: absolute(x), "abs", absolute.__doc__)  # noqa: A001


def fabs(x):
    """Elementwise absolute value as floats (integers give floatx)."""
    x = _tensor(x)
    d = _dn(x)
    return _m.abs(_cast(x, _floatx()) if _is_int(d) or d == "bool" else x)


def negative(x):
    """``-x``."""
    return _m.negative(_tensor(x))


def sign(x):
    """Elementwise sign (-1, 0 or 1 in ``x``'s dtype)."""
    x = _tensor(x)
    d = _dn(x)
    if d in ("uint8", "uint16", "uint32"):
        return _core.cast(_m.sign(_core.cast(x, "int32")), d)
    return _m.sign(x)


def square(x):
    """``x * x`` (bools as int32)."""
    x = _tensor(x)
    return _m.square(_cast(x, "int32") if _dn(x) == "bool" else x)


def reciprocal(x):
    """``1 / x``."""
    return _m.reciprocal(_tensor(x))


def rsqrt(x):
    """``1 / sqrt(x)``."""
    return _m.rsqrt(_tensor(x))


def erf(x):
    """The error function."""
    return _m.erf(_tensor(x))


def erfc(x):
    """The complementary error function ``1 - erf(x)``."""
    return _m.erfc(_tensor(x))


def erfinv(x):
    """The inverse error function."""
    x = _tensor(x)
    if _dn(x) == "float16":
        return _core.cast(_extra.erfinv(_core.cast(x, "float32")), "float16")
    return _extra.erfinv(x)


def cbrt(x):
    """Elementwise cube root (int64 gives float64, other integers floatx)."""
    x = _tensor(x)
    d = _dn(x)
    if d == "int64":
        x = _core.cast(x, "float64")
    elif d not in ("bfloat16", "float16", "float64"):
        x = _cast(x, _floatx())
    return _m.multiply(_m.sign(x), _m.pow(_m.abs(x), 1.0 / 3.0))


def _angle_dtype(x):
    d = _dn(x)
    if d in ("bool", "int8", "int16", "int32", "uint8", "uint16", "uint32"):
        return _floatx()
    return "float64" if d == "int64" else d


def deg2rad(x):
    """Degrees to radians."""
    x = _tensor(x)
    x = _cast(x, _angle_dtype(x))
    return _m.multiply(x, _const(x, _pymath.pi / 180.0))


def rad2deg(x):
    """Radians to degrees."""
    x = _tensor(x)
    x = _cast(x, _angle_dtype(x))
    return _m.multiply(x, _const(x, 180.0 / _pymath.pi))


def angle(x):
    """The argument of each value (``pi`` for negatives, 0 otherwise: ``x`` is real)."""
    x = _tensor(x)
    x = _cast(x, _float_dtype(x))
    return _m.where(_m.less(x, 0), _const(x, np.pi), _core.zeros_like(x))


def real(x):
    """The real part of ``x`` (``x`` itself: gradtape tensors are real)."""
    return _tensor(x)


def imag(x):
    """The imaginary part of ``x`` (zeros: gradtape tensors are real)."""
    return _core.zeros_like(_tensor(x))


def conjugate(x):
    """The complex conjugate of ``x`` (``x`` itself: gradtape tensors are real)."""
    return _tensor(x)


conj = _named(lambda x: conjugate(x), "conj", conjugate.__doc__)


def copy(x):
    """A copy of ``x``."""
    return _core.identity(_tensor(x))


def isreal(x):
    """Whether each value is real (all true: gradtape tensors are real)."""
    return _core.ones_like(_tensor(x), dtype="bool")


def _nonfloat(x):
    d = _dn(x)
    return not _is_float(d)


def isnan(x):
    """Whether each value is NaN (false for integers)."""
    x = _tensor(x)
    return _core.zeros_like(x, dtype="bool") if _nonfloat(x) else _m.is_nan(x)


def isinf(x):
    """Whether each value is infinite (false for integers)."""
    x = _tensor(x)
    return _core.zeros_like(x, dtype="bool") if _nonfloat(x) else _m.is_inf(x)


def isfinite(x):
    """Whether each value is finite (true for integers)."""
    x = _tensor(x)
    return _core.ones_like(x, dtype="bool") if _nonfloat(x) else _m.is_finite(x)


def isposinf(x):
    """Whether each value is ``+inf``."""
    x = _tensor(x)
    return _core.zeros_like(x, dtype="bool") if _nonfloat(x) else _m.equal(x, np.inf)


def isneginf(x):
    """Whether each value is ``-inf``."""
    x = _tensor(x)
    return _core.zeros_like(x, dtype="bool") if _nonfloat(x) else _m.equal(x, -np.inf)


def signbit(x):
    """Whether each value has its sign bit set (``-0.0`` included)."""
    x = _tensor(x)
    d = _dn(x)
    if d == "bool":
        return _core.zeros_like(x, dtype="bool")
    if _is_int(d):
        return _m.less(x, 0)
    return _signbit(_cast(x, "float32"))


def sinc(x):
    """``sin(pi x) / (pi x)`` (1 at 0)."""
    x = _tensor(x)
    x = _cast(x, _float_dtype(x))
    pix = _m.multiply(x, _const(x, np.pi))
    zero = _m.equal(x, 0)
    return _m.where(zero, _core.ones_like(x),
                    _m.divide(_m.sin(pix), _m.where(zero, _core.ones_like(x), pix)))


def trunc(x):
    """Values rounded toward zero."""
    x = _tensor(x)
    if not _is_float(_dn(x)):
        return x
    return _m.where(_m.less(x, 0), _m.ceil(x), _m.floor(x))


def round(x, decimals=0):  # noqa: A001 (Keras' name)
    """Values rounded to ``decimals`` places, halves to even."""
    x = _tensor(x)
    if decimals == 0:
        return _m.round(x) if _is_float(_dn(x)) else x
    d = _dn(x)
    if not _is_float(d):
        if decimals > 0:
            return x
        factor = _const(x, _pymath.pow(10, decimals), _floatx())
        y = _core.cast(x, _floatx())
    else:
        factor = _const(x, _pymath.pow(10, decimals))
        y = x
    return _cast(_m.divide(_m.round(_m.multiply(y, factor)), factor), d)


def clip(x, x_min, x_max):
    """``x`` limited to ``[x_min, x_max]`` (bools as int32)."""
    x = _tensor(x)
    if _dn(x) == "bool":
        x = _core.cast(x, "int32")
    return _m.clip_by_value(x, x_min, x_max)


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """``x`` with NaN replaced by ``nan`` and infinities by ``posinf``/``neginf`` (the
    dtype's extremes by default)."""
    x = _tensor(x)
    d = _dn(x)
    if not _is_float(d):
        return x
    info = np.finfo(d)
    x = _m.where(_m.is_nan(x), _const(x, nan), x)
    x = _m.where(_m.equal(x, np.inf), _const(x, info.max if posinf is None else posinf), x)
    return _m.where(_m.equal(x, -np.inf), _const(x, info.min if neginf is None else neginf), x)


def _promote_float_special(x1, x2):
    """Promotion where small integers give floatx and int64 float64 (hypot, heaviside)."""
    a, b, d = _promote_tensors(x1, x2)
    if d in ("int8", "int16", "int32", "uint8", "uint16", "uint32"):
        d = _floatx()
    elif d == "int64":
        d = "float64"
    return _cast(a, d), _cast(b, d)


def hypot(x1, x2):
    """``sqrt(x1**2 + x2**2)`` without overflow."""
    a, b = _promote_float_special(x1, x2)
    a, b = _m.abs(a), _m.abs(b)
    hi, lo = _m.maximum(a, b), _m.minimum(a, b)
    ratio = _m.divide_no_nan(lo, hi)
    return _m.multiply(hi, _m.sqrt(_m.add(_m.square(ratio), 1.0)))


def heaviside(x1, x2):
    """0 where ``x1 < 0``, 1 where ``x1 > 0``, ``x2`` where ``x1 == 0``."""
    a, b = _promote_float_special(x1, x2)
    return _m.where(_m.less(a, 0), _core.zeros_like(a),
                    _m.where(_m.greater(a, 0), _core.ones_like(a), b))


def arctan2(x1, x2):
    """The angle of ``(x2, x1)`` (``atan(x1 / x2)`` in the right quadrant)."""
    a, b, _ = _promote_tensors(x1, x2, _float)
    return _extra.atan2(a, b)


def logaddexp(x1, x2):
    """``log(exp(x1) + exp(x2))``, stably."""
    a, b, _ = _promote_tensors(x1, x2, _float)
    delta = _m.subtract(a, b)
    return _m.where(_m.is_nan(delta), _m.add(a, b),
                    _m.add(_m.maximum(a, b), _m.log1p(_m.exp(_m.negative(_m.abs(delta))))))


def logaddexp2(x1, x2):
    """``log2(2**x1 + 2**x2)``, stably."""
    a, b, _ = _promote_tensors(x1, x2, _float)
    delta = _m.subtract(a, b)
    ln2 = _const(a, np.log(2.0))
    soft = _m.divide(_m.log1p(_m.exp(_m.multiply(_m.negative(_m.abs(delta)), ln2))), ln2)
    return _m.where(_m.is_nan(delta), _m.add(a, b), _m.add(_m.maximum(a, b), soft))


def mod(x1, x2):
    """The remainder of floor division (the sign of ``x2``)."""
    a, b, d = _promote_tensors(x1, x2)
    if d == "bool":
        a, b = _core.cast(a, "int32"), _core.cast(b, "int32")
    return _m.floormod(a, b)


def fmod(x1, x2):
    """The remainder of truncated division (the sign of ``x1``)."""
    a, b, d = _promote_tensors(x1, x2)
    if d == "bool":
        d = "int32"
    compute = "int32" if d in ("uint8", "uint16", "uint32") else d
    a, b = _cast(a, compute), _cast(b, compute)
    return _cast(_m.multiply(_m.sign(a), _m.floormod(_m.abs(a), _m.abs(b))), d)


def gcd(x1, x2):
    """The greatest common divisor of integers."""
    a, b, d = _promote_tensors(x1, x2)
    if not _is_int(d):
        raise TypeError("Arguments to gcd must be integers.")
    return _gcd(a, b)


def lcm(x1, x2):
    """The least common multiple of integers."""
    a, b = _tensor(x1), _tensor(x2)
    if not (_is_int(_dn(a)) and _is_int(_dn(b))):
        raise TypeError(f"Arguments to lcm must be integers. Received: x1.dtype={_dn(a)}, "
                        f"x2.dtype={_dn(b)}")
    a, b, _ = _promote_tensors(a, b)
    return _lcm(a, b)


def ldexp(x1, x2):
    """``x1 * 2**x2`` (``x2`` integers)."""
    a, b = _tensor(x1), _tensor(x2)
    d = _result_type(_dn(a), _dn(b), _float)
    if _dn(b) not in _INT_TYPES:
        raise TypeError(f"ldexp exponent must be an integer type. Received: x2 dtype={_dn(b)}")
    a = _cast(a, d)
    out = _m.multiply(a, _m.pow(_const(a, 2.0), _core.cast(b, d)))
    return _m.where(_m.logical_or(_m.is_inf(a), _m.equal(a, 0)), a, out)


def nextafter(x1, x2):
    """The next representable value after ``x1`` toward ``x2``."""
    a, b = _tensor(x1), _tensor(x2)
    d = _result_type(_dn(a), _dn(b), _float)
    return _cast(_extra.nextafter(_cast(a, "float64"), _cast(b, "float64")), d)


def i0(x):
    """The modified Bessel function of the first kind, order 0."""
    x = _tensor(x)
    d = _dn(x)
    if d in ("int64", "float64"):
        d = "float64"
    elif d not in ("bfloat16", "float16"):
        d = _floatx()
    return _extra.bessel_i0(_cast(x, d))


def isclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    """Whether ``|x1 - x2| <= atol + rtol * |x2|`` elementwise."""
    a, b, d = _promote_tensors(x1, x2)
    if not _is_float(d):
        return _m.equal(a, b)
    with np.errstate(invalid="ignore"):        # (inf - inf is NaN, not a warning, as TF)
        out = _m.less_equal(_m.abs(_m.subtract(a, b)),
                            _m.add(_m.multiply(_m.abs(b), rtol), atol))
    if equal_nan:
        out = _m.logical_or(out, _m.logical_and(_m.is_nan(a), _m.is_nan(b)))
    return out


def allclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    """Whether every value of ``x1`` is close to ``x2`` (as :func:`isclose`; equal
    infinities are close)."""
    a, b, d = _promote_tensors(x1, x2)
    if not _is_float(d):
        return _r.reduce_all(_m.equal(a, b))
    finite = _m.logical_and(_m.is_finite(a), _m.is_finite(b))
    close = _m.less_equal(_m.abs(_m.subtract(a, b)), _m.add(_m.multiply(_m.abs(b), rtol), atol))
    out = _m.logical_or(_m.logical_and(finite, close), _m.equal(a, b))
    if equal_nan:
        out = _m.logical_or(out, _m.logical_and(_m.is_nan(a), _m.is_nan(b)))
    return _r.reduce_all(out)


def where(condition, x1=None, x2=None):
    """``x1`` where ``condition`` else ``x2`` (promoted; Python numbers weak); with only
    ``condition``, the indices of its true values (as :func:`nonzero`)."""
    if (x1 is None) != (x2 is None):
        raise ValueError("`x1` and `x2` either both should be `None` or both should have "
                         "non-None value.")
    c = _cast(condition, "bool")
    if x1 is None:
        return nonzero(c)
    a, b, _ = _promote(x1, x2)
    return _m.where(c, a, b)


def select(condlist, choicelist, default=0):
    """For each element, the value of ``choicelist[i]`` for the first true
    ``condlist[i]``, else ``default``."""
    if not isinstance(condlist, (list, tuple)) or not isinstance(choicelist, (list, tuple)):
        raise ValueError(f"condlist and choicelist must be lists. Received: type(condlist) = "
                         f"{type(condlist)}, type(choicelist) = {type(choicelist)}")
    if not condlist or not choicelist:
        raise ValueError(f"condlist and choicelist must not be empty. Received: condlist = "
                         f"{condlist}, choicelist = {choicelist}")
    choices = [_tensor(c) for c in choicelist]
    conds = [_cast(c, "bool") for c in condlist]
    d = _result_type(*[_dn(c) for c in choices], _dtype_of(default))
    choices = [_cast(c, d) for c in choices]
    shape_ = np.broadcast_shapes(*[tuple(t._value.shape) for t in choices + conds])
    out = _core.broadcast_to(_tensor(default, d), shape_)
    for c, v in reversed(list(zip(conds, choices))):
        out = _m.where(_core.broadcast_to(c, shape_), _core.broadcast_to(v, shape_), out)
    return out


# --- numpy: reductions ------------------------------------------------------------------------

def _sum_dtype(d):
    if d in ("bool", "int8", "int16"):
        return "int32"
    if d in ("uint8", "uint16"):
        return "uint32"
    return d


def sum(x, axis=None, keepdims=False):  # noqa: A001 (Keras' name)
    """The sum over ``axis`` (bools and small ints sum as int32)."""
    x = _tensor(x)
    d = _sum_dtype(_dn(x))
    return _cast(_r.reduce_sum(_cast(x, d), axis=_axis_arg(axis), keepdims=keepdims), d)


def prod(x, axis=None, keepdims=False, dtype=None):
    """The product over ``axis`` (bools and small ints as int32; ``dtype`` is accepted and,
    as in Keras' TensorFlow backend, not applied)."""
    x = _tensor(x)
    if dtype is None:
        x = _cast(x, _sum_dtype(_dn(x)))
    return _r.reduce_prod(x, axis=_axis_arg(axis), keepdims=keepdims)


def mean(x, axis=None, keepdims=False):
    """The mean over ``axis`` (integers and bools give float32; float16 is averaged in
    float32)."""
    x = _tensor(x)
    d = _dn(x)
    compute = _result_type(d, "float32")
    out = _r.reduce_mean(_cast(x, compute), axis=_axis_arg(axis), keepdims=keepdims)
    return out if _is_int(d) or d == "bool" else _cast(out, d)


def var(x, axis=None, keepdims=False):
    """The variance over ``axis`` (integers give floatx)."""
    x = _tensor(x)
    d = _dn(x)
    out = _r.reduce_variance(_cast(x, _result_type(d, "float32")), axis=_axis_arg(axis),
                             keepdims=keepdims)
    return _cast(out, _result_type(d, _float))


def std(x, axis=None, keepdims=False):
    """The standard deviation over ``axis`` (integers give floatx)."""
    x = _tensor(x)
    d = _dn(x)
    if _is_int(d) or d == "bool":
        x = _core.cast(x, _floatx())
    return _r.reduce_std(x, axis=_axis_arg(axis), keepdims=keepdims)


def _extreme(x, axis, keepdims, initial, is_max):
    x = _tensor(x)
    ax = _axis_arg(axis)
    boolean = _dn(x) == "bool"
    if initial is not None:
        if boolean:
            r = (_r.reduce_any if is_max else _r.reduce_all)(x, axis=ax, keepdims=keepdims)
            pick = _m.maximum if is_max else _m.minimum
            return _core.cast(pick(_core.cast(r, "int32"), _cast(initial, "int32")), "bool")
        r = (_r.reduce_max if is_max else _r.reduce_min)(x, axis=ax, keepdims=keepdims)
        return (_m.maximum if is_max else _m.minimum)(r, initial)
    if x._value.size == 0:
        from .registry import InvalidArgumentError
        raise InvalidArgumentError(f"Cannot compute the {'max' if is_max else 'min'} of an "
                                   "empty tensor.")
    if boolean:
        return (_r.reduce_any if is_max else _r.reduce_all)(x, axis=ax, keepdims=keepdims)
    return (_r.reduce_max if is_max else _r.reduce_min)(x, axis=ax, keepdims=keepdims)


def max(x, axis=None, keepdims=False, initial=None):  # noqa: A001 (Keras' name)
    """The maximum over ``axis`` (at least ``initial`` when given)."""
    return _extreme(x, axis, keepdims, initial, True)


def min(x, axis=None, keepdims=False, initial=None):  # noqa: A001 (Keras' name)
    """The minimum over ``axis`` (at most ``initial`` when given)."""
    return _extreme(x, axis, keepdims, initial, False)


def amax(x, axis=None, keepdims=False):
    """The maximum over ``axis``."""
    return _extreme(x, axis, keepdims, None, True)


def amin(x, axis=None, keepdims=False):
    """The minimum over ``axis``."""
    return _extreme(x, axis, keepdims, None, False)


def all(x, axis=None, keepdims=False):  # noqa: A001 (Keras' name)
    """Whether every value over ``axis`` is true (nonzero)."""
    return _r.reduce_all(_cast(x, "bool"), axis=_axis_arg(axis), keepdims=keepdims)


def any(x, axis=None, keepdims=False):  # noqa: A001 (Keras' name)
    """Whether some value over ``axis`` is true (nonzero)."""
    return _r.reduce_any(_cast(x, "bool"), axis=_axis_arg(axis), keepdims=keepdims)


def ptp(x, axis=None, keepdims=False):
    """The range (max - min) over ``axis``."""
    x = _tensor(x)
    ax = _axis_arg(axis)
    return _m.subtract(_r.reduce_max(x, axis=ax, keepdims=keepdims),
                       _r.reduce_min(x, axis=ax, keepdims=keepdims))


def logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x)))`` over ``axis``, stably."""
    return _r.reduce_logsumexp(_tensor(x), axis=_axis_arg(axis), keepdims=keepdims)


def count_nonzero(x, axis=None):
    """The number of nonzero values over ``axis`` (int32)."""
    return _r.count_nonzero(_tensor(x), axis=_axis_arg(axis), dtype="int32")


def _keepdims_shape(x, axis):
    if axis is None:
        return [1] * x._value.ndim
    shape_ = list(x._value.shape)
    for a in _axes(axis, x._value.ndim):
        shape_[a] = 1
    return shape_


def _arg_extreme(x, axis, keepdims, fn):
    x = _tensor(x)
    d = _dn(x)
    if _is_float(d) and x._value.ndim:
        x = _cast(x, _result_type(d, "float32"))
        tiny = np.finfo(_dn(x)).tiny
        x = _m.where(_m.logical_and(_m.equal(x, 0), _signbit(x)), _const(x, -tiny), x)
    orig = x
    if axis is None:
        x = _sh.reshape(x, [-1])
    y = fn(x, axis=0 if axis is None else axis, output_type=np.int32)
    return _sh.reshape(y, _keepdims_shape(orig, axis)) if keepdims else y


def argmax(x, axis=None, keepdims=False):
    """The index of the maximum (int32; over the flattened tensor without ``axis``)."""
    return _arg_extreme(x, axis, keepdims, _r.argmax)


def argmin(x, axis=None, keepdims=False):
    """The index of the minimum (int32; over the flattened tensor without ``axis``)."""
    return _arg_extreme(x, axis, keepdims, _r.argmin)


def _nan_arg(x, axis, keepdims, fill, fn):
    x = _tensor(x)
    if not _is_float(_dn(x)):
        return fn(x, axis=axis, keepdims=keepdims)
    nan = _m.is_nan(x)
    idx = fn(_m.where(nan, _const(x, fill), x), axis=axis, keepdims=keepdims)
    return _m.where(_r.reduce_all(nan, axis=_axis_arg(axis), keepdims=keepdims),
                    _const(idx, -1), idx)


def nanargmax(x, axis=None, keepdims=False):
    """:func:`argmax` ignoring NaNs (-1 where every value is NaN)."""
    return _nan_arg(x, axis, keepdims, -np.inf, argmax)


def nanargmin(x, axis=None, keepdims=False):
    """:func:`argmin` ignoring NaNs (-1 where every value is NaN)."""
    return _nan_arg(x, axis, keepdims, np.inf, argmin)


def nansum(x, axis=None, keepdims=False):
    """The sum over ``axis``, NaNs counted as 0."""
    x = _tensor(x)
    d = _dn(x)
    if _is_float(d):
        x = _m.where(_m.is_nan(x), _core.zeros_like(x), x)
    d = _sum_dtype(d)
    return _cast(_r.reduce_sum(_cast(x, d), axis=_axis_arg(axis), keepdims=keepdims), d)


def nanprod(x, axis=None, keepdims=False):
    """The product over ``axis``, NaNs counted as 1."""
    x = _tensor(x)
    if _is_float(_dn(x)):
        x = _m.where(_m.is_nan(x), _core.ones_like(x), x)
    return prod(x, axis=axis, keepdims=keepdims)


def nanmean(x, axis=None, keepdims=False):
    """The mean over ``axis`` of the values that are not NaN."""
    x = _tensor(x)
    if axis == () or axis == []:
        return x
    ax = _axis_arg(axis)
    if not _is_float(_dn(x)):
        return _r.reduce_mean(_core.cast(x, "float32"), axis=ax, keepdims=keepdims)
    d = _result_type(_dn(x), _float)
    total = _cast(nansum(x, axis=axis, keepdims=keepdims), d)
    count = _r.reduce_sum(_core.cast(_m.logical_not(_m.is_nan(x)), d), axis=ax,
                          keepdims=keepdims)
    return _m.divide(total, count)


def nanvar(x, axis=None, keepdims=False):
    """The variance over ``axis`` of the values that are not NaN."""
    x = _tensor(x)
    x = _cast(x, _result_type(_dn(x), _float))
    m = nanmean(x, axis=axis, keepdims=True)
    valid = _m.logical_not(_m.is_nan(x))
    centered = _m.where(valid, _m.subtract(x, m), _core.zeros_like(x))
    ax = _axis_arg(axis)
    count = _r.reduce_sum(_core.cast(valid, _dn(x)), axis=ax, keepdims=keepdims)
    return _m.divide(_r.reduce_sum(_m.square(centered), axis=ax, keepdims=keepdims), count)


def nanstd(x, axis=None, keepdims=False):
    """The standard deviation over ``axis`` of the values that are not NaN."""
    return _m.sqrt(nanvar(x, axis=axis, keepdims=keepdims))


def _nan_extreme(x, axis, keepdims, is_max):
    x = _tensor(x)
    ax = _axis_arg(axis)
    if not _is_float(_dn(x)):
        if _dn(x) == "bool":
            return (_r.reduce_any if is_max else _r.reduce_all)(x, axis=ax, keepdims=keepdims)
        return (_r.reduce_max if is_max else _r.reduce_min)(x, axis=ax, keepdims=keepdims)
    nan = _m.is_nan(x)
    clean = _m.where(nan, _const(x, -np.inf if is_max else np.inf), x)
    red = (_r.reduce_max if is_max else _r.reduce_min)(clean, axis=ax, keepdims=keepdims)
    return _m.where(_r.reduce_all(nan, axis=ax, keepdims=keepdims), _const(red, np.nan), red)


def nanmax(x, axis=None, keepdims=False):
    """The maximum over ``axis`` ignoring NaNs (NaN where all are)."""
    return _nan_extreme(x, axis, keepdims, True)


def nanmin(x, axis=None, keepdims=False):
    """The minimum over ``axis`` ignoring NaNs (NaN where all are)."""
    return _nan_extreme(x, axis, keepdims, False)


def _cumulative(x, axis, dtype, fn):
    x = _tensor(x, None if dtype is None else _standardize(dtype))
    if _dn(x) == "bool":
        x = _core.cast(x, "int32")
    if axis is None:
        x, axis = _sh.reshape(x, [-1]), 0
    return fn(x, axis=axis)


def cumsum(x, axis=None, dtype=None):
    """The running sum along ``axis`` (of the flattened tensor without one)."""
    return _cumulative(x, axis, dtype, _r.cumsum)


def cumprod(x, axis=None, dtype=None):
    """The running product along ``axis`` (of the flattened tensor without one)."""
    return _cumulative(x, axis, dtype, _r.cumprod)


def nancumsum(x, axis=None, dtype=None):
    """:func:`cumsum` with NaNs counted as 0."""
    return cumsum(nan_to_num(x), axis=axis, dtype=dtype)


def nancumprod(x, axis=None, dtype=None):
    """:func:`cumprod` with NaNs counted as 1."""
    return cumprod(nan_to_num(x, nan=1.0), axis=axis, dtype=dtype)


def average(x, axis=None, weights=None):
    """The (``weights``-weighted) mean over ``axis``."""
    x = _tensor(x)
    if weights is None:
        x = _cast(x, _result_type(_dn(x), _float))
        return _r.reduce_mean(x, axis=_axis_arg(axis))
    w = _tensor(weights)
    d = _result_type(_dn(x), _dn(w), _float)
    x, w = _cast(x, d), _cast(w, d)
    if axis is None or x._value.ndim == w._value.ndim:
        ax = _axis_arg(axis)
        return _m.divide(_r.reduce_sum(_m.multiply(x, w), axis=ax), _r.reduce_sum(w, axis=ax))
    return _m.divide(_la.tensordot(x, w, [[axis], [0]]), _r.reduce_sum(w))


def _to_end(x, axis):
    """``x`` with the ``axis`` dims moved last and flattened together (all of them for
    ``None``): ``(rows, other_shape)`` where rows is ``[prod(other), n]``."""
    nd = x._value.ndim
    if axis is None:
        return _sh.reshape(x, [1, -1]), (), None
    axes = sorted(_axes(axis, nd))
    other = [i for i in _range(nd) if i not in axes]
    y = _sh.transpose(x, other + axes) if other + axes != list(_range(nd)) else x
    other_shape = tuple(x._value.shape[i] for i in other)
    n = _int(np.prod([x._value.shape[i] for i in axes]))
    return _sh.reshape(y, [_int(np.prod(other_shape)), n]), other_shape, axes


def _quantile(x, q, axis, method, keepdims, skip_nan):
    """Keras' quantile: ``q`` (float64) of ``x`` over ``axis``, the ``q`` dims first."""
    if method not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError(f"Invalid method: {method}")
    nd = x._value.ndim
    rows, other_shape, axes = _to_end(x, axis)
    srt = _so.sort(rows, axis=-1)          # NaNs sort last
    q_shape = tuple(q._value.shape)
    qf = _sh.reshape(q, [1, -1])
    if skip_nan:
        count = _r.reduce_sum(_core.cast(_m.logical_not(_m.is_nan(rows)), "float64"), axis=-1,
                              keepdims=True)
    else:
        count = _const(q, np.full((rows._value.shape[0], 1), rows._value.shape[1]), "float64")
    last = _m.maximum(_m.subtract(count, 1.0), 0.0)
    pos = _m.multiply(_m.subtract(count, 1.0), qf)

    def index(v):
        return _core.cast(_m.clip_by_value(v, 0.0, last), "int32")

    def take(i):
        return _sh.gather(srt, i, axis=1, batch_dims=1)
    if method == "lower":
        out = take(index(_m.floor(pos)))
    elif method == "higher":
        out = take(index(_m.ceil(pos)))
    elif method == "nearest":
        out = take(index(_m.round(pos)))
    elif method == "midpoint":
        out = _m.multiply(_m.add(take(index(_m.floor(pos))), take(index(_m.ceil(pos)))),
                          _const(srt, 0.5))
    else:
        hi = index(_m.ceil(pos))
        lo = _m.maximum(_m.subtract(hi, 1), 0)
        hi = _m.minimum(_m.add(lo, 1), _core.cast(last, "int32"))
        frac = _core.cast(_m.subtract(_core.cast(hi, "float64"), pos), _dn(srt))
        out = _m.add(_m.multiply(take(hi), _m.subtract(_const(frac, 1.0), frac)),
                     _m.multiply(take(lo), frac))
    if _is_float(_dn(x)):
        bad = _m.equal(count, 0.0) if skip_nan else \
            _r.reduce_any(_m.is_nan(rows), axis=-1, keepdims=True)
        out = _m.where(_core.broadcast_to(bad, tuple(out._value.shape)), _const(out, np.nan),
                       out)
    out = _sh.reshape(out, other_shape + q_shape)          # other..., q...
    if keepdims:
        if axis is None:
            out = _sh.reshape(out, (1,) * nd + q_shape)
        else:
            full = list(other_shape)
            for a in axes:
                full.insert(a, 1)
            out = _sh.reshape(out, tuple(full) + q_shape)
    k = len(q_shape)
    r = out._value.ndim
    if k and r > k:
        out = _sh.transpose(out, list(_range(r - k, r)) + list(_range(r - k)))
    return out


def quantile(x, q, axis=None, method="linear", keepdims=False):
    """The ``q``-th quantiles (in [0, 1]) of ``x`` over ``axis`` (``method``: ``"linear"``,
    ``"lower"``, ``"higher"``, ``"midpoint"``, ``"nearest"``); the ``q`` dims come first."""
    x = _tensor(x)
    q = _core.cast(_tensor(q), "float64")
    x = _cast(x, _result_type(_dn(x), _float))
    return _quantile(x, q, axis, method, keepdims, False)


def percentile(x, q, axis=None, method="linear", keepdims=False):
    """:func:`quantile` with ``q`` in percent."""
    q = _m.divide(_tensor(q, _floatx()), 100.0)
    return quantile(x, q, axis=axis, method=method, keepdims=keepdims)


def median(x, axis=None, keepdims=False):
    """The median over ``axis``."""
    return quantile(x, 0.5, axis=axis, keepdims=keepdims)


def nanquantile(x, q, axis=None, method="linear", keepdims=False):
    """:func:`quantile` of the values that are not NaN (NaN where all are)."""
    x = _tensor(x)
    q = _core.cast(_tensor(q, _floatx()), "float64")
    return _quantile(x, q, axis, method, keepdims, True)


def nanpercentile(x, q, axis=None, method="linear", keepdims=False):
    """:func:`nanquantile` with ``q`` in percent."""
    q = _m.divide(_tensor(q, _floatx()), 100.0)
    return nanquantile(x, q, axis=axis, method=method, keepdims=keepdims)


def nanmedian(x, axis=None, keepdims=False):
    """The median over ``axis`` of the values that are not NaN."""
    x = _tensor(x)
    if axis == () or axis == []:
        return x
    return nanquantile(x, 0.5, axis=axis, keepdims=keepdims)


def trace(x, offset=0, axis1=0, axis2=1):
    """The sum of the ``offset`` diagonal over ``axis1``, ``axis2``."""
    x = _tensor(x)
    x = _cast(x, _sum_dtype(_dn(x)))
    return sum(diagonal(x, offset=offset, axis1=axis1, axis2=axis2), axis=-1)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of ``y`` along ``axis`` by the trapezoidal rule (sample points ``x``,
    or spacing ``dx``)."""
    y = _tensor(y)
    d = _result_type(_dn(y), _float)
    y = moveaxis(_cast(y, d), axis, -1)
    if x is None:
        step = _const(y, dx)
    else:
        step = moveaxis(diff(_tensor(x, d), axis=axis), axis, -1)
    heights = _m.multiply(_m.add(y[..., 1:], y[..., :-1]), _const(y, 0.5))
    return _r.reduce_sum(_m.multiply(heights, step), axis=-1)


# --- numpy: shapes ------------------------------------------------------------------------------

def ndim(x):
    """The rank of ``x`` (an int)."""
    return len(shape(x))


def size(x):
    """The number of elements of ``x`` (an int32 scalar tensor)."""
    return _sh.size(_tensor(x))


def reshape(x, newshape):
    """``x`` with shape ``newshape`` (one ``-1`` is inferred)."""
    if not isinstance(newshape, Tensor):
        try:
            newshape = tuple(newshape)
        except TypeError:
            newshape = (newshape,)
        if _sum(1 for d in newshape if d == -1) > 1:
            raise ValueError(f"There must be at most one unknown dimension (-1) in newshape. "
                             f"Received: newshape={newshape}.")
    return _sh.reshape(_tensor(x), newshape)


def ravel(x):
    """``x`` flattened."""
    return _sh.reshape(_tensor(x), [-1])


def transpose(x, axes=None):
    """``x`` with its axes permuted (reversed by default)."""
    x = _tensor(x)
    if axes:
        axes = tuple(_int(a) % x._value.ndim for a in axes)
        if len(set(axes)) != len(axes):
            raise ValueError(f"`axes` must be a valid permutation of the input dimensions (no "
                             f"duplicates). Received: axes={list(axes)} for input of rank "
                             f"{x._value.ndim}.")
        return _sh.transpose(x, list(axes))
    return _sh.transpose(x)


def expand_dims(x, axis):
    """``x`` with length-1 axes inserted at ``axis`` (an int or a sequence)."""
    x = _tensor(x)
    axis = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    out_ndim = x._value.ndim + len(axis)
    for a in sorted(_int(a) % out_ndim for a in axis):
        x = _sh.expand_dims(x, a)
    return x


def squeeze(x, axis=None):
    """``x`` without its length-1 axes (those of ``axis`` only, when given)."""
    x = _tensor(x)
    if axis is None:
        return _sh.squeeze(x)
    axes = _axes(axis, x._value.ndim)
    for a in axes:
        if x._value.shape[a] != 1:
            raise ValueError(f"Cannot squeeze axis={a}, because the dimension is not 1.")
    return _sh.squeeze(x, axis=sorted(axes)) if axes else x


def broadcast_to(x, shape):
    """``x`` broadcast to ``shape``."""
    return _core.broadcast_to(_tensor(x), _shape_tuple(shape))


def moveaxis(x, source, destination):
    """``x`` with the axes ``source`` moved to positions ``destination``."""
    x = _tensor(x)
    nd = x._value.ndim
    src = [_int(a) % nd for a in (source if isinstance(source, (list, tuple)) else [source])]
    dst = [_int(a) % nd for a in
           (destination if isinstance(destination, (list, tuple)) else [destination])]
    if len(src) != len(dst):
        raise ValueError(f"Inconsistent number of `source` and `destination`. Received: "
                         f"source={source}, destination={destination}")
    if src == dst:
        return x
    perm = [i for i in _range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return _sh.transpose(x, perm)


def swapaxes(x, axis1, axis2):
    """``x`` with ``axis1`` and ``axis2`` swapped."""
    x = _tensor(x)
    nd = x._value.ndim
    a, b = _int(axis1) % nd, _int(axis2) % nd
    if a == b:
        return x
    perm = list(_range(nd))
    perm[a], perm[b] = b, a
    return _sh.transpose(x, perm)


def _same_dtype(xs):
    with _near(*xs):
        xs = [_tensor(x) for x in xs]
    names = {_dn(x) for x in xs}
    if len(names) > 1:
        d = _result_type(*names)
        xs = [_cast(x, d) for x in xs]
    return xs


def concatenate(xs, axis=0):
    """The tensors ``xs`` joined along ``axis`` (promoted to one dtype)."""
    return _sh.concat(_same_dtype(xs), axis=axis)


def append(x1, x2, axis=None):
    """``x2`` appended to ``x1`` along ``axis`` (both flattened without one)."""
    a, b, _ = _promote_tensors(x1, x2)
    if axis is None:
        return _sh.concat([_sh.reshape(a, [-1]), _sh.reshape(b, [-1])], axis=0)
    return _sh.concat([a, b], axis=axis)


def stack(x, axis=0):
    """The tensors ``x`` stacked along a new ``axis`` (promoted to one dtype)."""
    return _sh.stack(_same_dtype(x), axis=axis)


def hstack(xs):
    """The tensors joined along axis 1 (axis 0 for vectors)."""
    xs = _same_dtype(xs)
    return _sh.concat(xs, axis=0 if xs[0]._value.ndim == 1 else 1)


def vstack(xs):
    """The tensors joined along axis 0."""
    return _sh.concat(_same_dtype(xs), axis=0)


def dstack(xs):
    """The tensors (at least 3-D: ``(1, n, 1)`` for vectors) joined along axis 2."""
    out = []
    for x in _same_dtype(xs):
        nd = x._value.ndim
        if nd == 0:
            x = _sh.reshape(x, (1, 1, 1))
        elif nd == 1:
            x = _sh.reshape(x, (1, -1, 1))
        elif nd == 2:
            x = _sh.expand_dims(x, 2)
        out.append(x)
    return _sh.concat(out, axis=2)


def split(x, indices_or_sections, axis=0):
    """``x`` cut along ``axis`` into ``indices_or_sections`` equal parts, or at the given
    indices; a list."""
    x = _tensor(x)
    if isinstance(indices_or_sections, (_int, np.integer)):
        return list(_sh.split(x, _int(indices_or_sections), axis=axis))
    idx = _host_ints(indices_or_sections)
    total = x._value.shape[axis]
    sizes = [idx[0]] + [b - a for a, b in zip(idx[:-1], idx[1:])] + [total - idx[-1]]
    return list(_sh.split(x, sizes, axis=axis))


def array_split(x, indices_or_sections, axis=0):
    """``x`` cut along ``axis`` into ``indices_or_sections`` parts (the first ones one
    longer when it does not divide)."""
    if not isinstance(indices_or_sections, _int):
        raise TypeError(f"Argument `indices_or_sections` must be of type `int`. Received: "
                        f"indices_or_sections={indices_or_sections}")
    if indices_or_sections <= 0:
        raise ValueError(f"Argument `indices_or_sections` must be a positive integer. "
                         f"Received: indices_or_sections={indices_or_sections}")
    if not isinstance(axis, _int):
        raise TypeError(f"Argument `axis` must be of type `int`. Received: {axis}")
    x = _tensor(x)
    total = x._value.shape[axis]
    n = indices_or_sections
    sizes = [total // n + 1] * (total % n) + [total // n] * (n - total % n)
    return list(_sh.split(x, sizes, axis=axis))


def hsplit(x, indices_or_sections):
    """:func:`split` along axis 1 (axis 0 for vectors)."""
    x = _tensor(x)
    return split(x, indices_or_sections, axis=0 if x._value.ndim == 1 else 1)


def vsplit(x, indices_or_sections):
    """:func:`split` along axis 0."""
    return split(x, indices_or_sections, axis=0)


def dsplit(x, indices_or_sections):
    """:func:`split` along axis 2."""
    return split(x, indices_or_sections, axis=2)


def tile(x, repeats):
    """``x`` repeated ``repeats`` times along each axis."""
    x = _tensor(x)
    reps = _host_ints(repeats)
    if len(reps) < x._value.ndim:
        reps = [1] * (x._value.ndim - len(reps)) + reps
    while len(reps) > x._value.ndim:
        x = _sh.expand_dims(x, 0)
    return _sh.tile(x, reps)


def repeat(x, repeats, axis=None):
    """Each element of ``x`` repeated ``repeats`` times along ``axis`` (flattened without)."""
    return _sh.repeat(_tensor(x), repeats, axis=axis)


def flip(x, axis=None):
    """``x`` reversed along ``axis`` (all axes by default)."""
    x = _tensor(x)
    nd = x._value.ndim
    axes = list(_range(nd)) if axis is None else list(_axes(axis, nd))
    return _sh.reverse(x, axes) if axes else x


def fliplr(x):
    """``x`` reversed along axis 1."""
    return _sh.reverse(_tensor(x), [1])


def flipud(x):
    """``x`` reversed along axis 0."""
    return _sh.reverse(_tensor(x), [0])


def rot90(array, k=1, axes=(0, 1)):
    """``array`` rotated by ``k`` quarter turns in the plane of ``axes``."""
    x = _tensor(array)
    nd = x._value.ndim
    if nd < 2:
        raise ValueError(f"Input array must have at least 2 dimensions. Received: "
                         f"array.ndim={nd}")
    if len(axes) != 2 or axes[0] == axes[1]:
        raise ValueError(f"Invalid axes: {axes}. Axes must be a tuple of two different "
                         "dimensions.")
    k = k % 4
    a0, a1 = axes[0] % nd, axes[1] % nd
    if k == 0:
        return x
    if k == 2:
        return _sh.reverse(x, [a0, a1])
    perm = list(_range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return _sh.transpose(_sh.reverse(x, [a1]), perm)
    return _sh.reverse(_sh.transpose(x, perm), [a1])


def roll(x, shift, axis=None):
    """``x`` shifted cyclically by ``shift`` along ``axis`` (flattened without one)."""
    from .array_ops import roll as _roll
    x = _tensor(x)
    if axis is not None:
        return _roll(x, shift, axis)
    return _sh.reshape(_roll(_sh.reshape(x, [-1]), shift, 0), tuple(x._value.shape))


def pad(x, pad_width, mode="constant", constant_values=None):
    """``x`` padded by ``pad_width`` (``(before, after)`` per axis; one pair, or one int,
    for every axis); ``mode`` ``"constant"``, ``"reflect"`` or ``"symmetric"``."""
    x = _tensor(x)
    if constant_values is not None and mode != "constant":
        raise ValueError(f"Argument `constant_values` can only be provided when "
                         f"`mode == 'constant'`. Received: mode={mode}")
    if mode not in ("constant", "reflect", "symmetric"):
        raise ValueError(f'Value of argument `mode` expected to be one of "CONSTANT", '
                         f'"REFLECT", or "SYMMETRIC". Received `mode`: {mode.upper()}')
    pw = np.asarray(pad_width.numpy() if isinstance(pad_width, Tensor) else pad_width,
                    dtype=np.int64)
    nd = x._value.ndim
    if pw.ndim == 0:
        pw = np.full((nd, 2), pw)
    elif pw.ndim == 1:                  # one (before, after) pair (or one width) for all
        pw = np.broadcast_to(np.resize(pw, 2), (nd, 2))
    elif pw.shape[0] == 1:
        pw = np.broadcast_to(np.resize(pw[0], 2), (nd, 2))
    elif pw.ndim == 2 and pw.shape[1] == 1:
        pw = np.repeat(pw, 2, axis=1)
    if pw.shape != (nd, 2):
        raise ValueError(f"`pad_width` must have the same length as `x.shape`. Received: "
                         f"pad_width={pad_width} and x.shape={tuple(x._value.shape)}")
    return _sh.pad(x, pw.tolist(), mode=mode.upper(),
                   constant_values=0 if constant_values is None else constant_values)


def diagonal(x, offset=0, axis1=0, axis2=1):
    """The ``offset`` diagonal of the matrices in the plane ``axis1``, ``axis2`` (last)."""
    x = _tensor(x)
    nd = x._value.ndim
    if axis1 % nd == axis2 % nd:
        raise ValueError(f"`axis1` and `axis2` cannot be the same. Received: axis1={axis1}, "
                         f"axis2={axis2}")
    x = moveaxis(x, (axis1, axis2), (-2, -1))
    rows, cols = x._value.shape[-2:]
    if offset <= -rows or offset >= cols:
        return _sh.reshape(x[..., :0, 0], tuple(x._value.shape[:-2]) + (0,))
    return _la.diag_part(x, k=offset)


def diag(x, k=0):
    """The ``k`` diagonal of a matrix, or the matrix with the vector ``x`` on it."""
    x = _tensor(x)
    if x._value.ndim == 1:
        return _la.diag(x, k=k)
    if x._value.ndim == 2:
        return diagonal(x, offset=k)
    raise ValueError(f"`x` must be 1d or 2d. Received: x.shape={tuple(x._value.shape)}")


def diagflat(x, k=0):
    """The matrix with flattened ``x`` on its ``k`` diagonal."""
    return diag(_sh.reshape(_tensor(x), [-1]), k)


def _tri_mask(like, rows, cols, k, lower):
    i = np.arange(rows).reshape(-1, 1)
    j = np.arange(cols).reshape(1, -1)
    return _const(like, (i >= j - k) if lower else (i <= j - k), "bool")


def tril(x, k=0):
    """``x`` with the values above the ``k`` diagonal zeroed."""
    x = _tensor(x)
    mask = _tri_mask(x, *x._value.shape[-2:], k, True)
    return _m.where(_core.broadcast_to(mask, tuple(x._value.shape)), x, _core.zeros_like(x))


def triu(x, k=0):
    """``x`` with the values below the ``k`` diagonal zeroed."""
    x = _tensor(x)
    mask = _tri_mask(x, *x._value.shape[-2:], k, False)
    return _m.where(_core.broadcast_to(mask, tuple(x._value.shape)), x, _core.zeros_like(x))


def diff(a, n=1, axis=-1):
    """The ``n``-th discrete difference along ``axis`` (bools: not-equal)."""
    a = _tensor(a)
    if n == 0:
        return a
    if n < 0:
        raise ValueError(f"Order `n` must be non-negative. Received n={n}")
    if a._value.ndim == 0:
        raise ValueError(f"`diff` requires input that is at least one dimensional. "
                         f"Received: a={a}")
    axis = axis % a._value.ndim
    hi = tuple(_slice(1, None) if i == axis else _slice(None) for i in _range(a._value.ndim))
    lo = tuple(_slice(None, -1) if i == axis else _slice(None) for i in _range(a._value.ndim))
    for _ in _range(n):
        a = _m.not_equal(a[hi], a[lo]) if _dn(a) == "bool" else _m.subtract(a[hi], a[lo])
    return a


def get_item(x, key):
    """``x[key]``."""
    return _tensor(x)[key]


def take(x, indices, axis=None):
    """The values of ``x`` at ``indices`` along ``axis`` (the flattened ``x`` without one;
    negative indices count from the end)."""
    x = _tensor(x)
    if axis is None:
        x, axis = _sh.reshape(x, [-1]), 0
    idx = _tensor(indices)
    n = x._value.shape[axis]
    idx = _m.where(_m.less(idx, 0), _m.add(idx, _const(idx, n)), idx)
    return _sh.gather(x, idx, axis=axis)


def take_along_axis(x, indices, axis=None):
    """The values of ``x`` at ``indices`` along ``axis`` (broadcast against each other
    elsewhere; the flattened ``x`` and 1-D ``indices`` without ``axis``)."""
    x = _tensor(x)
    idx = _tensor(indices, "int64")
    if axis is None:
        if idx._value.ndim != 1:
            raise ValueError(f"`indices` must be 1D if axis=None. Received: "
                             f"indices.shape={tuple(idx._value.shape)}")
        return take_along_axis(_sh.reshape(x, [-1]), idx, 0)
    nd = x._value.ndim
    axis = axis % nd
    xs, js = list(x._value.shape), list(idx._value.shape)
    xs1, js1 = xs[:], js[:]
    xs1[axis] = js1[axis] = 1
    b = list(np.broadcast_shapes(tuple(xs1), tuple(js1)))
    xb, jb = b[:], b[:]
    xb[axis], jb[axis] = xs[axis], js[axis]
    x = _core.broadcast_to(x, tuple(xb))
    idx = _core.broadcast_to(idx, tuple(jb))
    idx = _m.where(_m.less(idx, 0), _m.add(idx, _const(idx, xs[axis])), idx)
    x = swapaxes(x, axis, -1)
    idx = swapaxes(idx, axis, -1)
    ishape = tuple(idx._value.shape)
    out = _sh.gather(_sh.reshape(x, [-1, x._value.shape[-1]]),
                     _sh.reshape(idx, [-1, ishape[-1]]), axis=1, batch_dims=1)
    return swapaxes(_sh.reshape(out, ishape), axis, -1)


def nonzero(x):
    """The indices of the nonzero values of ``x``, one int32 tensor per axis."""
    return list(_nonzero(_cast(x, "bool")))


def unravel_index(indices, shape):
    """The coordinates of the flat ``indices`` in an array of ``shape`` (a tuple)."""
    idx = _tensor(indices)
    dims = [_int(d) for d in shape]
    coords = []
    for d in reversed(dims):
        coords.append(_m.floormod(idx, _const(idx, d)))
        idx = _m.floordiv(idx, _const(idx, d))
    return tuple(reversed(coords))


def meshgrid(*x, indexing="xy"):
    """Coordinate grids of the vectors ``x`` (``indexing`` ``"xy"`` or ``"ij"``)."""
    from .array_ops import meshgrid as _mg
    return _mg(*[_tensor(v) for v in x], indexing=indexing)


def searchsorted(sorted_sequence, values, side="left"):
    """Where each of ``values`` goes in the 1-D ``sorted_sequence`` to keep it sorted
    (int32)."""
    seq, vals = _tensor(sorted_sequence), _tensor(values)
    if seq._value.ndim != 1:
        raise ValueError(f"`searchsorted` only supports 1-D sorted sequences. You can use "
                         f"`keras.ops.vectorized_map` to extend it to N-D sequences. Received: "
                         f"sorted_sequence.shape={tuple(seq._value.shape)}")
    if _dn(seq) != _dn(vals):
        from .registry import InvalidArgumentError
        raise InvalidArgumentError(f"searchsorted: sorted_sequence is {_dn(seq)} but values "
                                   f"are {_dn(vals)}; cast one")
    flat = _sh.reshape(vals, [1, -1])
    out = _extra.searchsorted(_sh.reshape(seq, [1, -1]), flat, side=side, out_type=np.int32)
    return _sh.reshape(out, tuple(vals._value.shape))


def digitize(x, bins):
    """The bin of each value (``i`` with ``bins[i-1] <= x < bins[i]``), int32."""
    x = _tensor(x)
    d = _dn(x) if _dn(x) in ("float32", "float64") else "float64"
    edges = _const(x, np.asarray([_float(b) for b in bins], np.float32), d)
    return _r.reduce_sum(_core.cast(_m.greater_equal(_sh.expand_dims(_cast(x, d), -1), edges),
                                    "int32"), axis=-1)


def sort(x, axis=-1):
    """``x`` sorted along ``axis`` (the flattened ``x`` for ``None``)."""
    x = _tensor(x)
    if axis is None:
        x, axis = _sh.reshape(x, [-1]), 0
    if _dn(x) == "bool":
        return _core.cast(_so.sort(_core.cast(x, "int8"), axis=axis), "bool")
    return _so.sort(x, axis=axis)


def argsort(x, axis=-1):
    """The indices that sort ``x`` along ``axis`` (int32, stable)."""
    x = _tensor(x)
    if _dn(x) == "bool":
        x = _core.cast(x, "uint8")
    if x._value.ndim == 0:
        return _const(x, [0], "int32")
    if axis is None:
        x, axis = _sh.reshape(x, [-1]), 0
    return _so.argsort(x, axis=axis, stable=True)


def argpartition(x, kth, axis=-1):
    """Indices that partition ``x`` along ``axis``: the ``kth + 1`` smallest first
    (ascending), then the others (descending)."""
    x = _tensor(x)
    if axis is None:
        x, axis = _sh.reshape(x, [-1]), 0
    x = swapaxes(x, axis, -1)
    n = x._value.shape[-1]
    k = _min(_max(_int(kth), 0), n - 1)
    order = _so.argsort(x, axis=-1, stable=True)
    out = _sh.concat([order[..., :k + 1], _sh.reverse(order[..., k + 1:], [-1])], axis=-1)
    return swapaxes(out, -1, axis)


def unique(x, sorted=True, return_index=False, return_inverse=False,  # noqa: A002
           return_counts=False, axis=None, size=None, fill_value=None):
    """The unique values of ``x`` (along ``axis``: unique slices), sorted (in order of first
    occurrence without ``sorted``), with the first indices, the inverse map and the counts on
    request; ``size`` pads (with ``fill_value``, default 0) or truncates to a fixed length."""
    x = _tensor(x)
    flat = axis is None
    vals, index, inverse, counts = _unique4(_sh.reshape(x, [-1]) if flat else x,
                                            axis=None if flat else axis % x._value.ndim)
    ax = 0 if flat else axis % x._value.ndim
    if not sorted:      # in order of first occurrence
        order = _so.argsort(index, stable=True)
        vals, index, counts = _sh.gather(vals, order, axis=ax), _sh.gather(index, order), \
            _sh.gather(counts, order)
        inverse = _sh.gather(_extra.invert_permutation(order), inverse)
    if size is not None:
        n = vals._value.shape[ax]
        keep = _min(n, size)
        key = tuple(_slice(0, keep) if i == ax else _slice(None)
                    for i in _range(vals._value.ndim))
        vals, index, counts = vals[key], index[:keep], counts[:keep]
        extra_ = size - keep
        if extra_:
            pads = [[0, extra_] if i == ax else [0, 0] for i in _range(vals._value.ndim)]
            vals = _sh.pad(vals, pads, constant_values=0 if fill_value is None else fill_value)
            index = _sh.pad(index, [[0, extra_]], constant_values=1)
            counts = _sh.pad(counts, [[0, extra_]])
    if flat:
        inverse = _sh.reshape(inverse, tuple(x._value.shape))
    out = [vals]
    if return_index:
        out.append(index)
    if return_inverse:
        out.append(inverse)
    if return_counts:
        out.append(counts)
    return tuple(out) if len(out) > 1 else out[0]


def histogram(x, bins=10, range=None):  # noqa: A002 (Keras' name)
    """The counts of ``x`` (1-D) in ``bins`` equal bins over ``range`` (its min and max by
    default), and the bin edges."""
    if not isinstance(bins, _int):
        raise TypeError(f"Argument `bins` must be of type `int`. Received: bins={bins}")
    if bins < 0:
        raise ValueError(f"Argument `bins` should be a non-negative integer. "
                         f"Received: bins={bins}")
    if range:
        if len(range) < 2 or not isinstance(range, tuple):
            raise ValueError(f"Argument `range` must be a tuple of two elements. "
                             f"Received: range={range}")
        if range[1] < range[0]:
            raise ValueError(f"The second element of `range` must be greater than the first. "
                             f"Received: range={range}")
    x = _tensor(x)
    if x._value.ndim > 1:
        raise ValueError(f"Input tensor must be 1-dimensional. Received: "
                         f"input.shape={tuple(x._value.shape)}")
    if range is None:
        lo, hi = _r.reduce_min(x), _r.reduce_max(x)
    else:
        lo, hi = _const(x, range[0]), _const(x, range[1])
    frac = _const(x, np.linspace(0.0, 1.0, bins + 1), "float64")
    lo64, hi64 = _core.cast(lo, "float64"), _core.cast(hi, "float64")
    edges = _cast(_m.add(lo64, _m.multiply(_m.subtract(hi64, lo64), frac)), _dn(x))
    inside = _m.logical_and(_m.greater_equal(x, lo), _m.less_equal(x, hi))
    idx = _r.reduce_sum(_core.cast(_m.greater_equal(_sh.expand_dims(x, -1),
                                                    _sh.expand_dims(edges[1:-1], 0)), "int32"),
                        axis=-1)
    hits = _m.logical_and(_sh.one_hot(idx, bins, dtype="bool", on_value=True, off_value=False),
                          _sh.expand_dims(inside, -1))
    return _core.cast(_r.reduce_sum(_core.cast(hits, "int32"), axis=0), _dn(x)), edges


def bincount(x, weights=None, minlength=0, sparse=False):
    """How often each value ``0, 1, ...`` occurs in ``x`` (each row of a 2-D ``x``),
    summing ``weights`` instead of ones when given."""
    if sparse:
        raise ValueError("bincount: sparse=True needs sparse tensors, which gradtape does not "
                         "have")
    x = _tensor(x)
    names = [_dn(x)]
    if _dn(x) not in ("int32", "int64"):
        x = _core.cast(x, "int32")
    if weights is not None:
        weights = _tensor(weights)
        names.append(_dn(weights))
        d = _result_type(*names)
        if _dn(weights) not in ("int32", "int64", "float32", "float64"):
            weights = _core.cast(weights, "int32" if _is_int(_dn(weights)) else "float32")
    else:
        d = "int32"
    out = _extra.bincount(x, weights=weights, minlength=minlength, axis=-1)
    return _cast(out, d)


# --- numpy: creation ----------------------------------------------------------------------------

def zeros(shape, dtype=None):
    """A tensor of zeros (floatx by default)."""
    return _core.zeros(_shape_tuple(shape), dtype=_standardize(dtype))


def ones(shape, dtype=None):
    """A tensor of ones (floatx by default)."""
    return _core.ones(_shape_tuple(shape), dtype=_standardize(dtype))


def empty(shape, dtype=None):
    """A tensor of ``shape`` (zeros; floatx by default)."""
    return _core.zeros(_shape_tuple(shape), dtype=_standardize(dtype))


def full(shape, fill_value, dtype=None):
    """A tensor of ``shape`` filled with ``fill_value`` (floatx by default)."""
    d = _standardize(dtype)
    return _core.broadcast_to(_tensor(fill_value, d), _shape_tuple(shape))


def zeros_like(x, dtype=None):
    """Zeros of ``x``'s shape (and dtype, unless ``dtype``)."""
    x = _tensor(x)
    return _core.zeros_like(x, dtype=None if dtype is None else _standardize(dtype))


def ones_like(x, dtype=None):
    """Ones of ``x``'s shape (and dtype, unless ``dtype``)."""
    x = _tensor(x)
    return _core.ones_like(x, dtype=None if dtype is None else _standardize(dtype))


def empty_like(x, dtype=None):
    """A tensor of ``x``'s shape (zeros; ``x``'s dtype unless ``dtype``)."""
    return zeros_like(x, dtype=dtype)


def full_like(x, fill_value, dtype=None):
    """A tensor of ``x``'s shape filled with ``fill_value`` (``x``'s dtype unless
    ``dtype``)."""
    x = _tensor(x)
    d = _result_type(_standardize(dtype) if dtype is not None else _dn(x))
    return _core.broadcast_to(_tensor(fill_value, d), tuple(x._value.shape))


def _host_int(v, what):
    if isinstance(v, Tensor):
        v = v.numpy()
    if isinstance(v, _float) or getattr(getattr(v, "dtype", None), "kind", "i") == "f":
        raise TypeError(f"Argument `{what}` must be an integer or an integer tensor.")
    return _int(v)


def eye(N, M=None, k=0, dtype=None):
    """A matrix with ones on the ``k`` diagonal (floatx by default)."""
    n = _host_int(N, "N")
    m = n if M is None else _host_int(M, "M")
    return _gt_convert(np.eye(n, m, _int(k), dtype=_standardize(dtype)))


def identity(n, dtype=None):
    """The ``n`` by ``n`` identity matrix (floatx by default)."""
    return eye(n, n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    """A matrix with ones at and below the ``k`` diagonal (floatx by default)."""
    n = _host_int(N, "N")
    m = n if M is None else _host_int(M, "M")
    return _gt_convert(np.tri(n, m, _int(k), dtype=_standardize(dtype)))


def arange(start, stop=None, step=None, dtype=None):
    """``start, start + step, ...`` up to ``stop`` (``range(start)`` without ``stop``);
    the dtype promotes the arguments' (Python ints give int32, floats float32)."""
    if dtype is None:
        names = [_dtype_of(start)] + [_dtype_of(v) for v in (stop, step) if v is not None]
        dtype = _result_type(*names)
    dtype = _standardize(dtype)
    return _sh.range(start, stop, 1 if step is None else step, dtype=dtype)


def _host_number(v):
    if isinstance(v, Tensor):
        return v.numpy()
    return v


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``num`` evenly spaced values from ``start`` to ``stop`` (arrays: along ``axis``);
    with ``retstep`` also the spacing."""
    if num < 0:
        raise ValueError(f"`num` must be a non-negative integer. Received: num={num}")
    if dtype is None:
        dtype = _result_type(_dtype_of(start), _dtype_of(stop), _float)
    else:
        dtype = _standardize(dtype)
    compute = dtype if _is_float(dtype) else "float64"
    a, b = _tensor(start, compute), _tensor(stop, compute)
    shape_ = np.broadcast_shapes(tuple(a._value.shape), tuple(b._value.shape))
    a, b = _core.broadcast_to(a, shape_), _core.broadcast_to(b, shape_)
    div = (num - 1 if endpoint else num)
    span = _m.subtract(b, a)
    step = _m.divide(span, _const(span, div)) if div > 0 else _const(span, np.nan)
    steps = np.arange(num, dtype=np.float64)
    frac = steps / div if div > 0 else steps * 0.0
    nd = len(shape_)
    ax = axis % (nd + 1)
    fshape = [1] * (nd + 1)
    fshape[ax] = num
    frac_t = _const(a, frac.reshape(fshape))
    out = _m.add(_sh.expand_dims(a, ax), _m.multiply(_sh.expand_dims(span, ax), frac_t))
    if endpoint and num > 1:
        is_last = _const(a, (np.arange(num) == num - 1).reshape(fshape), "bool")
        out = _m.where(_core.broadcast_to(is_last, tuple(out._value.shape)),
                       _core.broadcast_to(_sh.expand_dims(b, ax), tuple(out._value.shape)), out)
    if _is_int(dtype):
        out = _m.floor(out)
    out = _cast(out, dtype)
    return (out, step) if retstep else out


def logspace(start, stop, num=50, endpoint=True, base=10, dtype=None, axis=0):
    """``base ** linspace(start, stop, num)``."""
    out = linspace(start, stop, num=num, endpoint=endpoint, dtype=dtype, axis=axis)
    return _m.pow(_const(out, base), out)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``num`` values from ``start`` to ``stop`` evenly spaced on a log scale."""
    a, b = _tensor(start), _tensor(stop)
    d = dtype or _floatx()
    la = _m.log(_cast(_m.abs(a), _standardize(d)))
    lb = _m.log(_cast(_m.abs(b), _standardize(d)))
    lbase = _const(la, np.log(10.0))
    out = logspace(_m.divide(la, lbase), _m.divide(lb, lbase), num=num, endpoint=endpoint,
                   base=10, dtype=dtype, axis=axis)
    return _m.multiply(out, _cast(_m.sign(_cast(a, _dn(la))), _dn(out)))


def _window(n, values):
    n = _host_int(n, "x")
    return _gt_convert(np.asarray(values(n), dtype=np.float32))


def bartlett(x):
    """The Bartlett (triangular) window of ``x`` points."""
    return _window(x, np.bartlett)


def blackman(x):
    """The Blackman window of ``x`` points."""
    return _window(x, np.blackman)


def hamming(x):
    """The Hamming window of ``x`` points."""
    return _window(x, np.hamming)


def hanning(x):
    """The Hann window of ``x`` points."""
    return _window(x, np.hanning)


def kaiser(x, beta):
    """The Kaiser window of ``x`` points with shape ``beta``."""
    return _window(x, lambda n: np.kaiser(n, _float(_host_number(beta))))


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of the vector ``x``: columns ``x ** (N - 1)`` ... ``x ** 0``
    (increasing powers with ``increasing``)."""
    x = _tensor(x)
    if x._value.ndim != 1:
        raise ValueError(f"Input tensor must be 1-dimensional. Received: "
                         f"input.shape={tuple(x._value.shape)}")
    if N is not None:
        if not isinstance(N, _int):
            raise TypeError(f"Argument `N` must be of type `int`. Received: N={N} of type "
                            f"{type(N)}")
        if N < 0:
            raise ValueError(f"Argument 'N' must be nonnegative. Received: N={N}")
    if not isinstance(increasing, _bool):
        raise TypeError(f"Argument `increasing` must be of type `bool`. Received: "
                        f"increasing={increasing} of type {type(increasing)}")
    d = _dn(x)
    n = x._value.shape[0] if N is None else N
    powers = np.arange(n) if increasing else np.arange(n - 1, -1, -1)
    compute = _result_type(d, "float32")
    out = _m.pow(_sh.expand_dims(_cast(x, compute), -1), _const(x, powers, compute))
    return _cast(out, d)


# --- numpy: products ----------------------------------------------------------------------------

def matmul(x1, x2):
    """The matrix product of ``x1`` and ``x2`` (batched, broadcast; vectors as in NumPy;
    int8 by int8 gives int32)."""
    a, b = _tensor(x1), _tensor(x2)
    da, db = _dn(a), _dn(b)
    if da == db == "int8" and a._value.ndim != 1 and b._value.ndim != 1:
        compute, out_dtype = _floatx(), "int32"
    else:
        compute, out_dtype = _result_type(da, db, _float), _result_type(da, db)
    a, b = _cast(a, compute), _cast(b, compute)
    ra, rb = a._value.ndim, b._value.ndim
    if rb == 1:
        out = _la.tensordot(a, b, [[ra - 1], [0]])
    elif ra == 1:
        out = _la.tensordot(a, b, [[0], [rb - 2]])
    else:
        out = _la.matmul(a, b)
    return _cast(out, out_dtype)


def dot(x1, x2):
    """The dot product: scalars multiply, vectors contract, else the last axis of ``x1``
    with the second-to-last of ``x2``."""
    a, b = _tensor(x1), _tensor(x2)
    out_dtype = _result_type(_dn(a), _dn(b))
    compute = _result_type(out_dtype, _float)
    a, b = _cast(a, compute), _cast(b, compute)
    ra, rb = a._value.ndim, b._value.ndim
    if ra == 0 or rb == 0:
        out = _m.multiply(a, b)
    elif rb == 1:
        out = _la.tensordot(a, b, [[ra - 1], [0]])
    else:
        out = _la.tensordot(a, b, [[ra - 1], [rb - 2]])
    return _cast(out, out_dtype)


def tensordot(x1, x2, axes=2):
    """The sum of products over ``axes`` (a count, or two lists of axes)."""
    a, b = _tensor(x1), _tensor(x2)
    out_dtype = _result_type(_dn(a), _dn(b))
    compute = out_dtype if out_dtype in ("int32", "int64", "float16", "float32", "float64") \
        else _result_type(out_dtype, _float)
    return _cast(_la.tensordot(_cast(a, compute), _cast(b, compute), axes), out_dtype)


def inner(x1, x2):
    """The inner product over the last axes (scalars multiply)."""
    a, b = _tensor(x1), _tensor(x2)
    out_dtype = _result_type(_dn(a), _dn(b))
    compute = _result_type(out_dtype, _float)
    a, b = _cast(a, compute), _cast(b, compute)
    if a._value.ndim == 0 or b._value.ndim == 0:
        out = _m.multiply(a, b)
    else:
        out = _la.tensordot(a, b, [[a._value.ndim - 1], [b._value.ndim - 1]])
    return _cast(out, out_dtype)


def vdot(x1, x2):
    """The dot product of the flattened tensors."""
    a, b = _tensor(x1), _tensor(x2)
    out_dtype = _result_type(_dn(a), _dn(b))
    compute = _result_type(out_dtype, _float)
    a, b = _sh.reshape(_cast(a, compute), [-1]), _sh.reshape(_cast(b, compute), [-1])
    return _cast(_la.tensordot(a, b, 1), out_dtype)


def outer(x1, x2):
    """The outer product of the flattened tensors."""
    a, b, _ = _promote_tensors(x1, x2)
    return _m.multiply(_sh.reshape(a, [-1, 1]), _sh.reshape(b, [-1]))


def kron(x1, x2):
    """The Kronecker product."""
    a, b, _ = _promote_tensors(x1, x2)
    ra, rb = a._value.ndim, b._value.ndim
    if ra < rb:
        a = _sh.reshape(a, (1,) * (rb - ra) + tuple(a._value.shape))
    elif rb < ra:
        b = _sh.reshape(b, (1,) * (ra - rb) + tuple(b._value.shape))
    sa, sb = tuple(a._value.shape), tuple(b._value.shape)
    a = _sh.reshape(a, [v for d in sa for v in (d, 1)])
    b = _sh.reshape(b, [v for d in sb for v in (1, d)])
    return _sh.reshape(_m.multiply(a, b), [p * q for p, q in zip(sa, sb)])


def einsum(subscripts, *operands, **kwargs):
    """The Einstein sum ``subscripts`` of ``operands`` (integers are summed as floats and
    cast back; int8 operands give int32)."""
    ops_ = [_tensor(o) for o in operands]
    names = list({_dn(o) for o in ops_})
    if len(names) == 1 and names[0] == "int8":
        compute, out_dtype = _floatx(), "int32"
    else:
        out_dtype = _result_type(*names)
        compute = _floatx() if _is_int(out_dtype) else out_dtype
    out = _la.einsum(subscripts, *[_cast(o, compute) for o in ops_], **kwargs)
    return _cast(out, out_dtype)


def cross(x1, x2, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 2- or 3-vectors along the given axes (a scalar z for two
    2-vectors)."""
    a, b, _ = _promote_tensors(x1, x2)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    na, nb = a._value.shape[-1], b._value.shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"Incompatible dimensions for cross product (dimension must be 2 or "
                         f"3). Received: x1.shape[axisa]={na}, x2.shape[axisb]={nb}")
    ax, ay = a[..., 0], a[..., 1]
    bx, by = b[..., 0], b[..., 1]
    z = _m.subtract(_m.multiply(ax, by), _m.multiply(ay, bx))
    if na == 2 and nb == 2:
        return z
    az = a[..., 2] if na == 3 else _core.zeros_like(ax)
    bz = b[..., 2] if nb == 3 else _core.zeros_like(bx)
    cx = _m.subtract(_m.multiply(ay, bz), _m.multiply(az, by))
    cy = _m.subtract(_m.multiply(az, bx), _m.multiply(ax, bz))
    shape_ = np.broadcast_shapes(*(tuple(t._value.shape) for t in (cx, cy, z)))
    c = _sh.stack([_core.broadcast_to(t, shape_) for t in (cx, cy, z)], axis=-1)
    return moveaxis(c, -1, axisc)


def correlate(x1, x2, mode="valid"):
    """The cross-correlation of two vectors (``mode`` ``"valid"``, ``"same"`` or
    ``"full"``)."""
    a, b, d = _promote_tensors(x1, x2)
    d = "float64" if d == "int64" else d if d in ("bfloat16", "float16", "float64") \
        else "float32"
    a, b = _cast(a, d), _cast(b, d)
    n, m = a._value.shape[0], b._value.shape[0]
    if mode not in ("valid", "same", "full"):
        raise ValueError(f"Invalid mode: '{mode}'. Mode must be one of: 'full', 'same', "
                         f"'valid'.")
    if mode != "valid":
        a = _sh.pad(a, [[m - 1, m - 1]])
    out = _sh.reshape(_nn.conv1d(_sh.reshape(a, (1, -1, 1)), _sh.reshape(b, (m, 1, 1)), 1,
                                 "VALID"), [-1])
    if mode == "same":
        start = (n + m - 1 - _max(n, m)) // 2
        out = out[start:start + _max(n, m)]
    return out


def corrcoef(x):
    """The Pearson correlation coefficients of the rows of ``x``."""
    x = _tensor(x)
    d = _dn(x)
    if d in ("bool", "int8", "int16", "int32", "uint8", "uint16", "uint32"):
        x = _core.cast(x, _floatx())
    if x._value.ndim == 0:
        return _const(x, np.nan, _floatx())
    vec = x._value.ndim == 1
    if vec:
        x = _sh.reshape(x, (1, -1))
    xc = _m.subtract(x, _r.reduce_mean(x, axis=-1, keepdims=True))
    n = _const(x, x._value.shape[-1] - 1)
    cov = _m.divide(_la.matmul(xc, xc, transpose_b=True), n)
    sd = _m.sqrt(_la.diag_part(cov))
    out = _m.clip_by_value(_m.divide(cov, _m.multiply(_sh.expand_dims(sd, -1), sd)), -1.0, 1.0)
    return _sh.reshape(out, ()) if vec else out


def isin(x1, x2, assume_unique=False, invert=False):
    """Whether each value of ``x1`` occurs in ``x2`` (the opposite with ``invert``)."""
    a, b, _ = _promote_tensors(x1, x2)
    if a._value.size == 0 or b._value.size == 0:
        out = _core.zeros_like(a, dtype="bool")
    else:
        flat = _m.equal(_sh.reshape(a, [-1, 1]), _sh.reshape(b, [1, -1]))
        out = _sh.reshape(_r.reduce_any(flat, axis=1), tuple(a._value.shape))
    return _m.logical_not(out) if invert else out


def view(x, dtype=None):
    """``x``'s bytes read as ``dtype`` (the last axis rescaled by the itemsizes)."""
    x = _tensor(x)
    new = _standardize(dtype if dtype else _dn(x))
    old_size, new_size = x._value.dtype.itemsize, np.dtype(new).itemsize
    last = x._value.shape[-1] if x._value.ndim else -1
    if (last == -1 and old_size != new_size) or (last * old_size % new_size != 0):
        raise ValueError(f"Cannot view array of shape {tuple(x._value.shape)} and dtype "
                         f"{_dn(x)} as dtype {new} because the total number of bytes is not "
                         "divisible by the new itemsize.")
    return _bitcast(x, dtype=np.dtype(new))


def vectorize(pyfunc, *, excluded=None, signature=None):
    """``pyfunc`` applied over the broadcast leading axes of its arguments, as
    ``numpy.vectorize`` (``signature`` such as ``"(n),(n)->()"`` names the core axes;
    ``excluded``: positions of arguments passed through whole, as keyword arguments are)."""
    if not callable(pyfunc):
        raise ValueError(f"Expected argument `pyfunc` to be a callable. Received: "
                         f"pyfunc={pyfunc}")
    excluded = set(excluded or ())
    if signature is not None:
        ins, outs = re.match(r"^(.*)->(.*)$", signature.replace(" ", "")).groups()
        core_in = [tuple(a for a in g.split(",") if a) for g in re.findall(r"\((.*?)\)", ins)]
        multi_out = len(re.findall(r"\((.*?)\)", outs)) > 1
    else:
        core_in, multi_out = None, False

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        pos = [i for i in _range(len(args)) if i not in excluded]
        vals = [_tensor(args[i]) for i in pos]
        cores = core_in or [()] * len(vals)
        batch = np.broadcast_shapes(*[tuple(v._value.shape[:v._value.ndim - len(c)])
                                      for v, c in zip(vals, cores)])
        vals = [_core.broadcast_to(v, batch + tuple(v._value.shape[v._value.ndim - len(c):]))
                for v, c in zip(vals, cores)]
        n = _int(np.prod(batch)) if batch else 1
        flat = [_sh.reshape(v, (n,) + tuple(v._value.shape[len(batch):])) for v in vals]
        rows = [_sh.unstack(v, num=n) for v in flat]
        results = []
        for k in _range(n):
            call = list(args)
            for i, r in zip(pos, rows):
                call[i] = r[k]
            results.append(pyfunc(*call, **kwargs))
        if multi_out or isinstance(results[0], tuple):
            parts = list(zip(*results))
            return tuple(_sh.reshape(_sh.stack([_tensor(p) for p in part]),
                                     batch + tuple(_tensor(part[0])._value.shape))
                         for part in parts)
        return _sh.reshape(_sh.stack([_tensor(r) for r in results]),
                           batch + tuple(_tensor(results[0])._value.shape))
    return wrapped


# --- math ---------------------------------------------------------------------------------------

def _segment(data, segment_ids, num_segments, sorted_, unsorted_fn, by_unique=False):
    data, ids = _tensor(data), _tensor(segment_ids)
    if ids._value.ndim > 1:
        raise ValueError(f"Argument `segment_ids` should be an 1-D vector, got shape: "
                         f"{ids._value.ndim}. Consider either flatten input with "
                         "segment_ids.reshape((-1)) and data.reshape((-1, ) + "
                         "data.shape[len(segment_ids.shape):]) or vectorize with vmap.")
    if ids._value.shape[0] != data._value.shape[0]:
        raise ValueError(f"Argument `segment_ids` and `data` should have same leading "
                         f"dimension. Got {tuple(ids._value.shape)} v.s. "
                         f"{tuple(data._value.shape)}.")
    if sorted_:
        if num_segments is not None:
            raise ValueError(f"Argument `num_segments` cannot be set when sorted is True when "
                             f"using the tensorflow backend.Received: "
                             f"num_segments={num_segments}, sorted={sorted_}.")
    if num_segments is None:
        host = ids.numpy()        # the output length depends on the ids
        if sorted_ or not by_unique:
            num_segments = _int(host.max()) + 1 if host.size else 0
        else:
            num_segments = len(np.unique(host))
    return unsorted_fn(data, ids, _int(num_segments))


def _segment_prod(data, ids, n):
    # tf.math.(unsorted_)segment_prod, as Keras' TensorFlow backend: TF's gradient with zeros
    return _sc.unsorted_segment_prod(data, ids, n)


def _sorted_empty_zero(out, ids, n):
    """``out`` with the rows of empty segments 0 (the sorted segment ops' fill)."""
    empty = _m.equal(_sc.unsorted_segment_sum(_core.ones_like(ids), ids, n), 0)
    shape_ = (n,) + (1,) * (out._value.ndim - 1)
    return _m.where(_core.broadcast_to(_sh.reshape(empty, shape_), tuple(out._value.shape)),
                    _core.zeros_like(out), out)


def segment_sum(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    """The sum of the rows of ``data`` in each segment (``segment_ids`` per row)."""
    return _segment(data, segment_ids, num_segments, sorted, _sc.unsorted_segment_sum,
                    by_unique=True)


def segment_max(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    """The maximum of the rows of ``data`` in each segment."""
    def fn(d, i, n):
        out = _sc.unsorted_segment_max(d, i, n)
        return _sorted_empty_zero(out, i, n) if sorted else out
    return _segment(data, segment_ids, num_segments, sorted, fn)


def segment_min(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    """The minimum of the rows of ``data`` in each segment."""
    def fn(d, i, n):
        out = _sc.unsorted_segment_min(d, i, n)
        return _sorted_empty_zero(out, i, n) if sorted else out
    return _segment(data, segment_ids, num_segments, sorted, fn)


def segment_prod(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    """The product of the rows of ``data`` in each segment."""
    return _segment(data, segment_ids, num_segments, sorted, _segment_prod)


def top_k(x, k, sorted=True):  # noqa: A002
    """The ``k`` largest values along the last axis and their indices (int32)."""
    return _so.top_k(_tensor(x), k=k, sorted=sorted)


def in_top_k(targets, predictions, k):
    """Whether each target class is among the ``k`` largest predictions of its row."""
    return _nn.in_top_k(_tensor(targets), _tensor(predictions), k)


def cdist(x, y):
    """The Euclidean distances between the rows of ``x`` and of ``y`` (batched)."""
    x, y = _tensor(x), _tensor(y)
    if x._value.ndim < 2 or y._value.ndim < 2:
        raise ValueError("`cdist` inputs must have rank >= 2")
    if x._value.shape[-1] != y._value.shape[-1]:
        raise ValueError("Last dimension of inputs to `cdist` must match")
    d = _m.subtract(_sh.expand_dims(x, -2), _sh.expand_dims(y, -3))
    return _m.sqrt(_r.reduce_sum(_m.square(d), axis=-1))


def extract_sequences(x, sequence_length, sequence_stride):
    """The frames of ``sequence_length`` values, ``sequence_stride`` apart, along the last
    axis of ``x`` (``[..., num_frames, sequence_length]``)."""
    x = _tensor(x)
    n = x._value.shape[-1]
    frames = _max(0, (n - sequence_length) // sequence_stride + 1)
    idx = (np.arange(frames) * sequence_stride)[:, None] + np.arange(sequence_length)[None, :]
    return _sh.gather(x, _const(x, idx, "int32"), axis=x._value.ndim - 1)


def logdet(x):
    """The log determinant of symmetric positive-definite matrices."""
    return _la.logdet(_tensor(x))


# --- nn: activations ----------------------------------------------------------------------------

def relu(x):
    """``max(x, 0)``."""
    x = _tensor(x)
    return _nn.relu(x) if _is_float(_dn(x)) else _m.maximum(x, 0)


def relu6(x):
    """``min(max(x, 0), 6)``."""
    x = _tensor(x)
    return _nn.relu6(x) if _is_float(_dn(x)) else _m.clip_by_value(x, 0, 6)


def sigmoid(x):
    """``1 / (1 + exp(-x))``."""
    return _m.sigmoid(_tensor(x))


def sparse_sigmoid(x):
    """0 below -1, 1 above 1, ``(x + 1) / 2`` between."""
    x = _tensor(x)
    return _m.where(_m.less_equal(x, -1), _core.zeros_like(x),
                    _m.where(_m.greater_equal(x, 1), _core.ones_like(x),
                             _m.multiply(_m.add(x, 1.0), 0.5)))


def tanh_shrink(x):
    """``x - tanh(x)``."""
    x = _tensor(x)
    return _m.subtract(x, _m.tanh(x))


def softplus(x):
    """``log(1 + exp(x))``."""
    return _m.softplus(_tensor(x))


def softsign(x):
    """``x / (1 + |x|)``."""
    return _nn.softsign(_tensor(x))


def soft_shrink(x, threshold=0.5):
    """``x - threshold`` above ``threshold``, ``x + threshold`` below ``-threshold``, else 0."""
    x = _tensor(x)
    return _m.where(_m.greater(x, threshold), _m.subtract(x, threshold),
                    _m.where(_m.less(x, -threshold), _m.add(x, threshold),
                             _core.zeros_like(x)))


def hard_shrink(x, threshold=0.5):
    """``x`` where ``|x| > threshold``, else 0."""
    x = _tensor(x)
    return _m.where(_m.greater(_m.abs(x), threshold), x, _core.zeros_like(x))


def hard_tanh(x):
    """``x`` clipped to ``[-1, 1]``."""
    return _m.clip_by_value(_tensor(x), -1.0, 1.0)


def threshold(x, threshold, default_value):
    """``x`` where ``x > threshold``, else ``default_value``."""
    x = _tensor(x)
    return _m.where(_m.greater(x, threshold), x, _tensor(default_value, _dn(x)))


def sparse_plus(x):
    """0 below -1, ``x`` above 1, ``(x + 1)**2 / 4`` between."""
    x = _tensor(x)
    return _m.where(_m.less_equal(x, -1), _core.zeros_like(x),
                    _m.where(_m.less(x, 1), _m.multiply(_m.square(_m.add(x, 1.0)), 0.25), x))


def silu(x):
    """``x * sigmoid(x)``."""
    return _nn.silu(_tensor(x))


swish = _named(lambda x: silu(x), "swish", silu.__doc__)


def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``."""
    x = _tensor(x)
    return _m.divide(_m.add(x, _m.sqrt(_m.add(_m.square(x), _tensor(b, _dn(x))))), 2.0)


def log_sigmoid(x):
    """``log(sigmoid(x))``, stably."""
    return _m.log_sigmoid(_tensor(x))


def leaky_relu(x, negative_slope=0.2):
    """``x`` for positives, ``negative_slope * x`` below."""
    return _nn.leaky_relu(_tensor(x), alpha=negative_slope)


def hard_sigmoid(x):
    """``relu6(x + 3) / 6``."""
    x = _tensor(x)
    return _m.divide(_nn.relu6(_m.add(x, 3.0)), _const(x, 6.0))


def hard_silu(x):
    """``x * hard_sigmoid(x)``."""
    x = _tensor(x)
    return _m.multiply(x, hard_sigmoid(x))


hard_swish = _named(lambda x: hard_silu(x), "hard_swish", hard_silu.__doc__)


def elu(x, alpha=1.0):
    """``x`` for positives, ``alpha * (exp(x) - 1)`` below."""
    x = _tensor(x)
    res = _nn.elu(x)
    if alpha == 1:
        return res
    return _m.where(_m.greater(x, 0), res, _m.multiply(res, alpha))


def selu(x):
    """The scaled ELU (``scale * elu(x, alpha)`` with the self-normalizing constants)."""
    return _nn.selu(_tensor(x))


def gelu(x, approximate=True):
    """The Gaussian error linear unit (the tanh approximation by default)."""
    return _nn.gelu(_tensor(x), approximate=approximate)


def celu(x, alpha=1.0):
    """``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``."""
    x = _tensor(x)
    return _m.add(_m.maximum(x, 0.0),
                  _m.multiply(_m.expm1(_m.divide(_m.minimum(x, 0.0), alpha)), alpha))


def glu(x, axis=-1):
    """The first half of ``x`` along ``axis`` gated by the sigmoid of the second."""
    x = _tensor(x)
    if x._value.shape[axis] % 2:
        raise ValueError(f"axis size must be divisible by 2. Received: "
                         f"x.shape={tuple(x._value.shape)} with axis={axis}")
    a, b = _sh.split(x, 2, axis=axis)
    return _m.multiply(a, _m.sigmoid(b))


def _over_axes(fn, x, axis):
    """``fn(x, axis=-1)`` over several axes at once (they are moved last and merged)."""
    keep = [v for v in _range(x._value.ndim) if v not in axis]
    t = _sh.transpose(x, keep + list(axis))
    y = fn(_sh.reshape(t, [x._value.shape[v] for v in keep] + [-1]))
    y = _sh.reshape(y, tuple(t._value.shape))
    combined = keep + list(axis)
    return _sh.transpose(y, sorted(_range(len(combined)), key=combined.__getitem__))


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along ``axis`` (all axes for ``None``, several for a
    tuple)."""
    x = _tensor(x)
    if isinstance(axis, tuple):
        return _over_axes(lambda t: _nn.softmax(t, axis=-1), x, axis)
    if axis is None:
        return _sh.reshape(_nn.softmax(_sh.reshape(x, [-1]), axis=-1), tuple(x._value.shape))
    return _nn.softmax(x, axis=axis)


def log_softmax(x, axis=-1):
    """``x - logsumexp(x)`` along ``axis`` (all axes for ``None``, several for a tuple)."""
    x = _tensor(x)
    if isinstance(axis, tuple):
        return _over_axes(lambda t: _nn.log_softmax(t, axis=-1), x, axis)
    if axis is None:
        return _sh.reshape(_nn.log_softmax(_sh.reshape(x, [-1]), axis=-1),
                           tuple(x._value.shape))
    return _nn.log_softmax(x, axis=axis)


def sparsemax(x, axis=-1):
    """The Euclidean projection of ``x`` onto the simplex along ``axis`` (sparse
    probabilities)."""
    x = _tensor(x)
    ax = axis % x._value.ndim
    srt = _so.sort(x, axis=ax, direction="DESCENDING")
    csum = _r.cumsum(srt, axis=ax)
    rshape = [1] * x._value.ndim
    rshape[ax] = -1
    r = _const(x, np.arange(1, x._value.shape[ax] + 1).reshape(rshape))
    support = _m.greater(_m.subtract(srt, _m.divide(_m.subtract(csum, 1.0), r)), 0)
    k = _r.reduce_sum(_core.cast(support, _dn(x)), axis=ax, keepdims=True)
    tau = _m.divide(_m.subtract(_r.reduce_sum(_m.where(support, csum, _core.zeros_like(csum)),
                                              axis=ax, keepdims=True), 1.0), k)
    return _m.maximum(_m.subtract(x, tau), 0.0)


# --- nn: convolutions and pooling ---------------------------------------------------------------

def _data_format(data_format):
    value = "channels_last" if data_format is None else str(data_format).lower()
    if value not in ("channels_last", "channels_first"):
        raise ValueError(f"The `data_format` argument must be one of {{'channels_first', "
                         f"'channels_last'}}. Received: data_format={data_format}")
    return value


def _to_last(x):
    nd = x._value.ndim
    return _sh.transpose(x, [0] + list(_range(2, nd)) + [1])


def _to_first(x):
    nd = x._value.ndim
    return _sh.transpose(x, [0, nd - 1] + list(_range(1, nd - 1)))


def _tuple(v, n):
    if isinstance(v, (_int, np.integer)):
        return (_int(v),) * n
    return tuple(_int(a) for a in v)


def _padding(padding):
    p = str(padding).lower()
    if p not in ("valid", "same"):
        raise ValueError(f"The `padding` argument must be one of 'valid', 'same'. "
                         f"Received: padding={padding}")
    return p.upper()


def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """An N-D convolution (N = rank - 2: 1, 2 or 3) of ``inputs`` by ``kernel``
    (``[spatial..., in_channels / groups, out_channels]``; fewer kernel input channels
    than input channels make a grouped convolution)."""
    x, w = _tensor(inputs), _tensor(kernel)
    df = _data_format(data_format)
    pad_ = _padding(padding)
    nsp = x._value.ndim - 2
    if df == "channels_first":
        x = _to_last(x)
    channels, in_ch = x._value.shape[-1], w._value.shape[-2]
    strides, dilation_rate = _tuple(strides, nsp), _tuple(dilation_rate, nsp)
    if channels % in_ch:
        raise ValueError(f"The number of input channels must be evenly divisible by "
                         f"kernel.shape[-2]. Received: input.shape={tuple(inputs.shape)}, "
                         f"kernel.shape={tuple(w._value.shape)}")
    groups = channels // in_ch
    parts = zip(_sh.split(x, groups, axis=-1), _sh.split(w, groups, axis=-1)) \
        if groups > 1 else [(x, w)]
    outs = [_nn.convolution(a, b, list(strides), pad_, dilations=list(dilation_rate))
            for a, b in parts]
    out = outs[0] if len(outs) == 1 else _sh.concat(outs, axis=-1)
    if _any(d == 0 for d in out._value.shape) and x._value.size:
        raise ValueError(f"The convolution operation resulted in an empty output. Output "
                         f"shape: {tuple(out._value.shape)}. This can happen if the input is "
                         "too small for the given kernel size, strides, dilation rate, and "
                         "padding mode. Please check the input shape and convolution "
                         "parameters.")
    return _to_first(out) if df == "channels_first" else out


def _same_pad(x, ksize, strides, dilations):
    pads = [[0, 0]]
    for n, k, s, d in zip(x._value.shape[1:-1], ksize, strides, dilations):
        eff = (k - 1) * d + 1
        total = _max((-(-n // s) - 1) * s + eff - n, 0)
        pads.append([total // 2, total - total // 2])
    return _sh.pad(x, pads + [[0, 0]])


def _depthwise(x, w, strides, pad_, dilations):
    """A 2-D depthwise convolution, channels last; strides > 1 with dilations > 1 run as a
    dilated convolution at stride 1, subsampled."""
    if _any(s > 1 for s in strides) and _any(d > 1 for d in dilations):
        if pad_ == "SAME":
            x = _same_pad(x, w._value.shape[:2], strides, dilations)
        out = _nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID", dilations=list(dilations))
        return out[:, ::strides[0], ::strides[1], :]
    return _nn.depthwise_conv2d(x, w, [1, strides[0], strides[1], 1], pad_,
                                dilations=list(dilations))


def _depthwise_call(inputs, kernel, strides, padding, data_format, dilation_rate, pointwise):
    x, w = _tensor(inputs), _tensor(kernel)
    df = _data_format(data_format)
    pad_ = _padding(padding)
    nsp = x._value.ndim - 2
    if nsp not in (1, 2):
        raise ValueError(f"`inputs` rank must be 3 (1D conv) or 4 (2D conv). Received: "
                         f"{x._value.ndim}.")
    if df == "channels_first":
        x = _to_last(x)
    strides, dilation_rate = _tuple(strides, nsp), _tuple(dilation_rate, nsp)
    if nsp == 1:
        x, w = _sh.expand_dims(x, 1), _sh.expand_dims(w, 0)
        strides, dilation_rate = (1,) + strides, (1,) + dilation_rate
        if pointwise is not None:
            pointwise = _sh.expand_dims(_tensor(pointwise), 0)
    out = _depthwise(x, w, strides, pad_, dilation_rate)
    if pointwise is not None:
        out = _nn.convolution(out, _tensor(pointwise), [1, 1], "VALID")
    if nsp == 1:
        out = _sh.squeeze(out, [1])
    return _to_first(out) if df == "channels_first" else out


def depthwise_conv(inputs, kernel, strides=1, padding="valid", data_format=None,
                   dilation_rate=1):
    """A 1-D or 2-D depthwise convolution (``kernel``: ``[spatial..., channels,
    multiplier]``)."""
    return _depthwise_call(inputs, kernel, strides, padding, data_format, dilation_rate, None)


def separable_conv(inputs, depthwise_kernel, pointwise_kernel, strides=1, padding="valid",
                   data_format=None, dilation_rate=1):
    """A depthwise convolution followed by a 1x1 convolution by ``pointwise_kernel``."""
    return _depthwise_call(inputs, depthwise_kernel, strides, padding, data_format,
                           dilation_rate, pointwise_kernel)


def conv_transpose(inputs, kernel, strides=1, padding="valid", output_padding=None,
                   data_format=None, dilation_rate=1):
    """The transposed N-D convolution (``kernel``: ``[spatial..., out_channels,
    in_channels]``); the output size is Keras' (``(n - 1) * s + max(k, s)`` for "valid",
    ``n * s`` for "same", adjusted by ``output_padding``)."""
    x, w = _tensor(inputs), _tensor(kernel)
    df = _data_format(data_format)
    pad_ = _padding(padding)
    nsp = x._value.ndim - 2
    if df == "channels_first":
        x = _to_last(x)
    strides, dilation_rate = _tuple(strides, nsp), _tuple(dilation_rate, nsp)
    opad = [None] * nsp if output_padding is None else _tuple(output_padding, nsp)
    out_shape = [x._value.shape[0]]
    for n, k, s, d, op in zip(x._value.shape[1:-1], w._value.shape[:-2], strides,
                              dilation_rate, opad):
        k = (k - 1) * d + 1
        if pad_ == "VALID":
            out_shape.append((n - 1) * s + k + (_max(k, s) - k if op is None else op))
        else:
            out_shape.append(n * s if op is None else (n - 1) * s + k % 2 + op)
    out_shape.append(w._value.shape[-2])
    out = _nn.conv_transpose(x, w, out_shape, list(strides), pad_,
                             dilations=list(dilation_rate))
    return _to_first(out) if df == "channels_first" else out


def _pool(fn, inputs, pool_size, strides, padding, data_format, fn3d):
    x = _tensor(inputs)
    df = _data_format(data_format)
    pad_ = _padding(padding)
    nsp = x._value.ndim - 2
    if nsp not in (1, 2, 3):
        raise ValueError(f"Pooling inputs's shape must be 3, 4 or 5, corresponding to 1D, 2D "
                         f"and 3D inputs. But received shape: {tuple(x._value.shape)}.")
    if df == "channels_first":
        x = _to_last(x)
    size = _tuple(pool_size, nsp)
    strides = size if strides is None else _tuple(strides, nsp)
    out = (fn3d if nsp == 3 else fn)(x, list(size), list(strides), pad_)
    return _to_first(out) if df == "channels_first" else out


def max_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """N-D max pooling (``strides`` default to ``pool_size``)."""
    return _pool(_nn.max_pool, inputs, pool_size, strides, padding, data_format,
                 _nn.max_pool3d)


def average_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """N-D average pooling (``strides`` default to ``pool_size``; "same" padding averages
    the valid values)."""
    return _pool(_nn.avg_pool, inputs, pool_size, strides, padding, data_format,
                 _nn.avg_pool3d)


def _adaptive_pool(inputs, output_size, data_format, is_max):
    x = _tensor(inputs)
    df = _data_format(data_format)
    nsp = x._value.ndim - 2
    if nsp not in (1, 2, 3):
        raise ValueError(f"adaptive_{'max' if is_max else 'average'}_pool supports 1D, 2D, "
                         "or 3D inputs only.")
    if df == "channels_first":
        x = _to_last(x)
    sizes = _tuple(output_size, nsp)
    for i, out_n in enumerate(sizes):
        ax = 1 + i
        n = x._value.shape[ax]
        starts = np.floor(np.arange(out_n) * n / out_n).astype(np.int64)
        ends = np.ceil(np.arange(1, out_n + 1) * n / out_n).astype(np.int64)
        width = _int((ends - starts).max())
        idx = starts[:, None] + np.arange(width)[None, :]
        valid = idx < ends[:, None]
        idx = np.minimum(idx, n - 1)
        g = _sh.gather(x, _const(x, idx, "int32"), axis=ax)       # [..., out, width, ...]
        mshape = [1] * g._value.ndim
        mshape[ax], mshape[ax + 1] = out_n, width
        mask = _core.broadcast_to(_const(x, valid.reshape(mshape), "bool"), tuple(g.shape))
        if is_max:
            x = _r.reduce_max(_m.where(mask, g, _const(g, -np.inf)), axis=ax + 1)
        else:
            cnt = _const(x, (ends - starts).reshape(mshape[:ax + 1] + mshape[ax + 2:]))
            x = _m.divide(_r.reduce_sum(_m.where(mask, g, _core.zeros_like(g)), axis=ax + 1),
                          cnt)
    return _to_first(x) if df == "channels_first" else x


def adaptive_average_pool(inputs, output_size, data_format=None):
    """Average pooling to a fixed ``output_size`` (window ``i`` of an axis of length ``n``
    covers ``[floor(i n / out), ceil((i + 1) n / out))``)."""
    return _adaptive_pool(inputs, output_size, data_format, False)


def adaptive_max_pool(inputs, output_size, data_format=None):
    """Max pooling to a fixed ``output_size`` (windows as :func:`adaptive_average_pool`)."""
    return _adaptive_pool(inputs, output_size, data_format, True)


def depth_to_space(x, block_size, data_format="channels_last"):
    """Channels moved into ``block_size`` by ``block_size`` spatial blocks."""
    if block_size < 2:
        raise ValueError(f"`block_size` must be at least 2. Received: block_size={block_size}")
    x = _tensor(x)
    if _data_format(data_format) == "channels_first":
        return _to_first(_nn.depth_to_space(_to_last(x), block_size))
    return _nn.depth_to_space(x, block_size)


def space_to_depth(x, block_size, data_format="channels_last"):
    """``block_size`` by ``block_size`` spatial blocks moved into channels."""
    if block_size < 2:
        raise ValueError(f"`block_size` must be at least 2. Received: block_size={block_size}")
    x = _tensor(x)
    if _data_format(data_format) == "channels_first":
        return _to_first(_nn.space_to_depth(_to_last(x), block_size))
    return _nn.space_to_depth(x, block_size)


def unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    """The sliding ``kernel_size`` blocks of the NCHW ``x`` as columns:
    ``[N, C * kh * kw, L]`` (as ``torch.nn.functional.unfold``)."""
    from .image import extract_patches as _patches
    x = _tensor(x)
    if x._value.ndim != 4:
        raise ValueError(f"Input must be a 4D tensor. Received: "
                         f"input.shape={tuple(x._value.shape)}")
    k, d, p, s = (_tuple(v, 2) for v in (kernel_size, dilation, padding, stride))
    n, c = x._value.shape[:2]
    if _any(p):
        x = _sh.pad(x, [[0, 0], [0, 0], [p[0], p[0]], [p[1], p[1]]])
    patches = _patches(_sh.transpose(x, [0, 2, 3, 1]), [1, k[0], k[1], 1], [1, s[0], s[1], 1],
                       [1, d[0], d[1], 1], "VALID")
    nh, nw = patches._value.shape[1:3]
    patches = _sh.reshape(patches, [n, nh, nw, k[0], k[1], c])
    patches = _sh.transpose(patches, [0, 5, 3, 4, 1, 2])
    return _sh.reshape(patches, [n, c * k[0] * k[1], nh * nw])


def fold(x, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The columns of sliding blocks ``[N, C * kh * kw, L]`` summed back into an NCHW image
    of ``output_size`` (the inverse placement of :func:`unfold`)."""
    x = _tensor(x)
    if x._value.ndim != 3:
        raise ValueError(f"Input must be a 3D tensor. Received: "
                         f"input.shape={tuple(x._value.shape)}")
    k, o, d, p, s = (_tuple(v, 2) for v in (kernel_size, output_size, dilation, padding,
                                              stride))
    n, ckk = x._value.shape[:2]
    c = ckk // (k[0] * k[1])
    nh = (o[0] + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    nw = (o[1] + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    x = _sh.reshape(x, [n, c, k[0], k[1], nh, nw])
    oh, ow = o[0] + 2 * p[0], o[1] + 2 * p[1]
    out = None
    for i in _range(k[0]):
        for j in _range(k[1]):
            part = _sh.reshape(x[:, :, i, j], [n, c, nh, 1, nw, 1])
            part = _sh.pad(part, [[0, 0], [0, 0], [0, 0], [0, s[0] - 1], [0, 0], [0, s[1] - 1]])
            part = _sh.reshape(part, [n, c, nh * s[0], nw * s[1]])
            part = part[:, :, :(nh - 1) * s[0] + 1, :(nw - 1) * s[1] + 1]
            top, left = i * d[0], j * d[1]
            part = _sh.pad(part, [[0, 0], [0, 0],
                                  [top, oh - top - part._value.shape[2]],
                                  [left, ow - left - part._value.shape[3]]])
            out = part if out is None else _m.add(out, part)
    return out[:, :, p[0]:oh - p[0], p[1]:ow - p[1]]


# --- nn: normalization, losses, attention -------------------------------------------------------

def one_hot(x, num_classes, axis=-1, dtype=None, sparse=False):
    """One-hot vectors of ``num_classes`` for the integer ``x`` (negative or too large
    indices give zeros), floatx by default."""
    if sparse:
        raise ValueError("one_hot: sparse=True needs sparse tensors, which gradtape does not "
                         "have")
    x = _tensor(x, "int64")
    d = _standardize(dtype)
    if d == "bool":
        return _sh.one_hot(x, num_classes, on_value=True, off_value=False, axis=axis,
                           dtype="bool")
    return _sh.one_hot(x, num_classes, axis=axis, dtype=d)


def multi_hot(inputs, num_classes=None, axis=-1, dtype=None, sparse=False, **kwargs):
    """Multi-hot vectors: the one-hot vectors of each row of ``inputs`` combined (floatx by
    default; ``num_tokens`` is accepted for ``num_classes``)."""
    if num_classes is None and "num_tokens" in kwargs:
        num_classes = kwargs.pop("num_tokens")
    if num_classes is None:
        raise ValueError("Argument `num_classes` must be specified.")
    if sparse:
        raise ValueError("multi_hot: sparse=True needs sparse tensors, which gradtape does not "
                         "have")
    x = _tensor(inputs)
    red = 1 if x._value.ndim > 1 else 0
    d = _standardize(dtype)
    out = one_hot(x, num_classes, axis=axis, dtype=d)
    return (_r.reduce_any if d == "bool" else _r.reduce_max)(out, axis=red)


def moments(x, axes, keepdims=False, synchronized=False):
    """The mean and (population) variance of ``x`` over ``axes`` (float16 computed in
    float32)."""
    x = _tensor(x)
    d = _dn(x)
    half = d in ("float16", "bfloat16")
    if half:
        x = _core.cast(x, "float32")
    mean_, var_ = _nn.moments(x, _axis_arg(axes) if not isinstance(axes, _int) else [axes],
                              keepdims=keepdims)
    if half:
        hi = _float(np.finfo(np.float16).max)
        mean_ = _core.cast(_m.clip_by_value(mean_, -hi, hi), d)
        var_ = _core.cast(_m.clip_by_value(var_, -hi, hi), d)
    return mean_, var_


def batch_normalization(x, mean, variance, axis, offset=None, scale=None, epsilon=1e-3):
    """``(x - mean) / sqrt(variance + epsilon) * scale + offset``, the 1-D statistics
    along ``axis``."""
    x = _tensor(x)
    mean, variance = _tensor(mean), _tensor(variance)
    if axis != -1:
        shape_ = [1] * x._value.ndim
        shape_[axis] = mean._value.shape[0]
        mean, variance = _sh.reshape(mean, shape_), _sh.reshape(variance, shape_)
        offset = None if offset is None else _sh.reshape(_tensor(offset), shape_)
        scale = None if scale is None else _sh.reshape(_tensor(scale), shape_)
    return _nn.batch_normalization(x, mean, variance, offset, scale, epsilon)


def layer_normalization(x, gamma=None, beta=None, axis=-1, epsilon=None, **kwargs):
    """``x`` normalized over ``axis`` to zero mean and unit variance, then scaled by
    ``gamma`` and shifted by ``beta`` (computed in at least float32)."""
    rms_scaling = kwargs.pop("rms_scaling", False)
    eps = _epsilon() if epsilon is None else epsilon
    x = _tensor(x)
    orig = _dn(x)
    x = _cast(x, _result_type(orig, "float32"))
    nd = x._value.ndim
    axes = sorted(a % nd for a in ([axis] if isinstance(axis, _int) else axis))
    bshape = [1] * nd
    for a in axes:
        bshape[a] = x._value.shape[a]

    def bcast(v):
        if v is None:
            return None
        v = _cast(v, _dn(x))
        if v._value.ndim != nd and axes != [nd - 1]:
            v = _sh.reshape(v, bshape)
        return v
    gamma, beta = bcast(gamma), bcast(beta)
    if rms_scaling:
        inv = _m.rsqrt(_m.add(_r.reduce_variance(x, axis=axes, keepdims=True), eps))
        out = _m.multiply(x, inv)
        if gamma is not None:
            out = _m.multiply(out, gamma)
        return _cast(out, orig)
    mean_, var_ = _nn.moments(x, axes, keepdims=True)
    inv = _m.rsqrt(_m.add(var_, eps))
    if gamma is not None:
        inv = _m.multiply(inv, gamma)
    res = _m.multiply(_m.negative(mean_), inv)
    if beta is not None:
        res = _m.add(res, beta)
    return _cast(_m.add(_m.multiply(x, inv), res), orig)


def rms_normalization(x, scale=None, axis=-1, epsilon=None):
    """``x / sqrt(mean(x**2) + epsilon)`` over ``axis``, times ``scale``."""
    eps = _epsilon() if epsilon is None else epsilon
    x = _tensor(x)
    orig = _dn(x)
    x = _cast(x, _result_type(orig, "float32"))
    if x._value.ndim == 0:
        x = _sh.expand_dims(x, 0)
    ax = sorted(axis) if isinstance(axis, (list, tuple)) else axis
    rrms = _m.rsqrt(_m.add(_r.reduce_mean(_m.square(x), axis=ax, keepdims=True), eps))
    out = _m.multiply(x, rrms)
    if scale is not None:
        out = _m.multiply(out, _cast(scale, _dn(x)))
    return _cast(out, orig)


def normalize(x, axis=-1, order=2, epsilon=None):
    """``x`` divided by its ``order``-norm over ``axis`` (at least ``epsilon``)."""
    if not isinstance(order, _int) or order < 1:
        raise ValueError(f"Argument `order` must be an int >= 1. Received: order={order}")
    x = _tensor(x)
    if x._value.ndim == 0:
        x = _sh.expand_dims(x, 0)
    eps = _epsilon() if epsilon is None else epsilon
    if order == 2:
        ssum = _r.reduce_sum(_m.square(x), axis=axis, keepdims=True)
        return _m.multiply(x, _m.minimum(_m.rsqrt(ssum), 1.0 / eps))
    n = norm(x, ord=order, axis=axis, keepdims=True)
    return _m.divide(x, _m.maximum(n, eps))


def binary_crossentropy(target, output, from_logits=False):
    """Elementwise binary cross-entropy of probabilities ``output`` (clipped to
    ``[epsilon, 1 - epsilon]``) or, with ``from_logits``, logits."""
    t, o = _tensor(target), _tensor(output)
    if t._value.shape != o._value.shape:
        raise ValueError(f"Arguments `target` and `output` must have the same shape. Received: "
                         f"target.shape={tuple(t._value.shape)}, "
                         f"output.shape={tuple(o._value.shape)}")
    if from_logits:
        return _nn.sigmoid_cross_entropy_with_logits(labels=t, logits=o)
    eps = _epsilon()
    o = _m.clip_by_value(o, eps, 1.0 - eps)
    bce = _m.add(_m.multiply(t, _m.log(o)),
                 _m.multiply(_m.subtract(1.0, t), _m.log(_m.subtract(1.0, o))))
    return _m.negative(bce)


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Cross-entropy of one-hot (or soft) ``target`` and probabilities ``output``
    (renormalized, clipped) or, with ``from_logits``, logits, along ``axis``."""
    t, o = _tensor(target), _tensor(output)
    if t._value.ndim < 1:
        raise ValueError(f"Arguments `target` and `output` must be at least rank 1. Received: "
                         f"target.shape={tuple(t._value.shape)}, "
                         f"output.shape={tuple(o._value.shape)}")
    if t._value.shape != o._value.shape:
        raise ValueError(f"Arguments `target` and `output` must have the same shape. Received: "
                         f"target.shape={tuple(t._value.shape)}, "
                         f"output.shape={tuple(o._value.shape)}")
    if from_logits:
        return _nn.softmax_cross_entropy_with_logits(t, o, axis=axis)
    o = _m.divide(o, _r.reduce_sum(o, axis=axis, keepdims=True))
    eps = _epsilon()
    o = _m.clip_by_value(o, eps, 1.0 - eps)
    return _m.negative(_r.reduce_sum(_m.multiply(t, _m.log(o)), axis=axis))


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Cross-entropy of integer ``target`` classes and probabilities ``output`` (clipped)
    or, with ``from_logits``, logits, along the last axis."""
    o = _tensor(output)
    if axis != -1 and axis != o._value.ndim - 1:
        raise ValueError(f"Only axis=-1 is currently supported. Received: axis={axis}")
    t = _tensor(target, "int64")
    if t._value.ndim == o._value.ndim and t._value.shape[-1] == 1:
        t = _sh.squeeze(t, [-1])
    if o._value.ndim < 1:
        raise ValueError(f"Argument `output` must be at least rank 1. Received: "
                         f"output.shape={tuple(o._value.shape)}")
    if tuple(t._value.shape) != tuple(o._value.shape[:-1]):
        raise ValueError(f"Arguments `target` and `output` must have the same shape up until "
                         f"the last dimension: target.shape={tuple(t._value.shape)}, "
                         f"output.shape={tuple(o._value.shape)}")
    if not from_logits:
        eps = _epsilon()
        o = _m.log(_m.clip_by_value(o, eps, 1.0 - eps))
    return _nn.sparse_softmax_cross_entropy_with_logits(t, o)


def _large_negative(dt):
    return (65500.0 if dt == "float16" else 3.38953e38) * -0.7


def dot_product_attention(query, key, value, bias=None, mask=None, scale=None,
                          is_causal=False, flash_attention=None, attn_logits_soft_cap=None):
    """Scaled dot-product attention of ``[batch, time, heads, dim]`` tensors
    (``softmax(q k^T * scale + bias)`` masked by ``mask``/``is_causal``, times ``v``);
    fewer key/value heads are shared among the query heads."""
    if attn_logits_soft_cap is not None:
        raise ValueError("attn_logits_soft_cap is only supported for JAX on TPU. Set "
                         "attn_logits_soft_cap=None when not using JAX on TPU.")
    if flash_attention:
        raise ValueError("Flash attention is not supported in tensorflow backend.")
    q, k, v = _tensor(query), _tensor(key), _tensor(value)
    if q._value.ndim != 4:
        raise ValueError(f"`dot_product_attention` only supports 4D inputs. Received: "
                         f"query.shape={tuple(q._value.shape)}, key.shape="
                         f"{tuple(k._value.shape)}, value.shape={tuple(v._value.shape)}.")
    d = _result_type(_dn(q), _dn(k), _dn(v))
    q, k, v = _cast(q, d), _cast(k, d), _cast(v, d)
    hq, hk = q._value.shape[2], k._value.shape[2]
    if hq > hk:
        k = _sh.repeat(k, hq // hk, axis=2)
        v = _sh.repeat(v, hq // hk, axis=2)
    if scale is None:
        scale = 1.0 / _pymath.sqrt(_float(k._value.shape[-1]))
    ld = _result_type(_dn(q), "float32")
    logits = _cast(_la.einsum("BTNH,BSNH->BNTS", q, k), ld)
    logits = _m.multiply(logits, _const(logits, np.float32(scale)))
    if bias is not None:
        logits = _m.add(logits, _cast(_tensor(bias, d), ld))
    if mask is not None or is_causal:
        full = tuple(logits._value.shape)
        keep = _core.ones(full, dtype="bool") if mask is None else \
            _core.broadcast_to(_cast(mask, "bool"), full)
        if is_causal:
            t_, s_ = full[2], full[3]
            causal = _const(logits, np.tril(np.ones((t_, s_), np.bool_)), "bool")
            keep = _m.logical_and(keep, _core.broadcast_to(causal, full))
        logits = _m.where(keep, logits, _const(logits, _large_negative(_dn(logits))))
    probs = _cast(_nn.softmax(_cast(logits, _result_type(_dn(logits), "float32")), axis=-1),
                  _dn(k))
    return _la.einsum("BNTS,BSNH->BTNH", probs, v)


def psnr(x1, x2, max_val):
    """The peak signal-to-noise ratio of ``x1`` against ``x2`` (in dB)."""
    a, b = _tensor(x1), _tensor(x2)
    if a._value.shape != b._value.shape:
        raise ValueError(f"Input shapes {tuple(a._value.shape)} and {tuple(b._value.shape)} "
                         "must match for PSNR calculation. ")
    mx = _tensor(max_val, _dn(b))
    mse = _r.reduce_mean(_m.square(_m.subtract(a, b)))
    log10_ = globals()["log10"]
    return _m.subtract(_m.multiply(log10_(mx), 20.0), _m.multiply(log10_(mse), 10.0))


def ctc_loss(target, output, target_length, output_length, mask_index=0):
    """The CTC loss (negative log-likelihood) of each batch entry's label sequence
    ``target`` (``[batch, max_label_length]``, ``target_length`` used) under the logits
    ``output`` (``[batch, time, classes]``, ``output_length`` steps used), the blank
    class ``mask_index``: Keras' TF backend, ``tf.nn.ctc_loss`` (:func:`gt.nn.ctc_loss`)
    computed in float32 for float64 logits and cast back."""
    from . import ctc as _ctc
    logits = _tensor(output)
    with _near(logits):
        labels = _tensor(target, "int32")
    rdt = _result_type(_dn(logits), "float32")
    cdt = "float32" if rdt == "float64" else rdt
    loss = _ctc.ctc_loss(labels, _cast(logits, cdt), target_length, output_length,
                         logits_time_major=False, blank_index=mask_index)
    return _cast(loss, rdt)


def ctc_decode(inputs, sequence_lengths, strategy="greedy", beam_width=100, top_paths=1,
               merge_repeated=True, mask_index=0):
    """CTC decoding of ``inputs`` (``[batch, time, classes]``), as Keras' TF backend.
    ``"greedy"``: the best class per step, repeats merged (``merge_repeated``), blanks
    (``mask_index``; ``None``: the last class) dropped; ``(decoded [1, batch, time] padded
    with -1, scores [batch, 1])``, computed on the device. ``"beam_search"``: TF's beam
    search (:func:`gt.nn.ctc_beam_search_decoder`, the ``mask_index`` column moved last and
    the labels shifted back; ``merge_repeated`` unused, as in Keras), read on the host;
    ``(decoded [top_paths, batch, time] padded with -1, log-probabilities [batch,
    top_paths])``."""
    if strategy not in ("greedy", "beam_search"):
        raise ValueError(f"Invalid strategy {strategy}. Supported values are 'greedy' and "
                         "'beam_search'.")
    if strategy == "beam_search":
        return _ctc_beam_decode(inputs, sequence_lengths, beam_width, top_paths, mask_index)
    x = _tensor(inputs)
    x = _cast(x, _result_type(_dn(x), "float32"))
    b, t_max, n_cls = x._value.shape
    blank = n_cls - 1 if mask_index is None else mask_index % n_cls
    lens = _tensor(sequence_lengths, "int32")
    t_idx = _const(lens, np.arange(t_max).reshape(1, -1))
    valid = _m.less(t_idx, _sh.expand_dims(lens, 1))
    best = _r.argmax(x, axis=-1, output_type=np.int32)                      # [b, t]
    score = _m.negative(_r.reduce_sum(_m.where(valid, _r.reduce_max(x, axis=-1),
                                               _core.zeros((b, t_max), _dn(x))), axis=1,
                                      keepdims=True))
    prev = _sh.concat([_const(best, np.full((b, 1), -1)), best[:, :-1]], axis=1)
    keep = _m.logical_and(valid, _m.not_equal(best, blank))
    if merge_repeated:
        keep = _m.logical_and(keep, _m.not_equal(best, prev))
    pos = _m.subtract(_r.cumsum(_core.cast(keep, "int32"), axis=1), 1)
    slot = _m.logical_and(_sh.expand_dims(keep, 2),
                          _m.equal(_sh.expand_dims(pos, 2), _const(pos, np.arange(t_max))))
    filled = _r.reduce_any(slot, axis=1)                                   # [b, t]
    vals = _r.reduce_sum(_m.where(slot, _core.broadcast_to(_sh.expand_dims(best, 2),
                                                           (b, t_max, t_max)),
                                  _core.zeros((b, t_max, t_max), "int32")), axis=1)
    decoded = _m.where(filled, vals, _const(vals, -1))
    return _sh.expand_dims(decoded, 0), score


def _ctc_beam_decode(inputs, sequence_lengths, beam_width, top_paths, mask_index):
    from . import ctc as _ctc
    from .sparse import SparseTensor, to_dense
    x = _tensor(inputs)
    b, t_max, n_cls = x._value.shape
    x = _cast(_sh.transpose(x, (1, 0, 2)), _result_type(_dn(x), "float32"))
    if mask_index is not None:    # (Keras' slicing, negative indices included)
        x = _sh.concat([x[..., :mask_index], x[..., mask_index + 1:],
                        x[..., mask_index:mask_index + 1]], axis=-1)
    with _near(x):
        lens = _tensor(sequence_lengths, "int32")
    decoded, scores = _ctc.ctc_beam_search_decoder(x, lens, beam_width=beam_width,
                                                   top_paths=top_paths)
    dense = _sh.stack([to_dense(SparseTensor._make(st.indices, st.values, (b, t_max)),
                                default_value=-1) for st in decoded], axis=0)
    dense = _cast(dense, "int32")
    if mask_index is not None:
        m = mask_index + n_cls if mask_index < 0 else mask_index
        dense = _m.where(_m.greater_equal(dense, m), _m.add(dense, 1), dense)
    return dense, scores


# --- linalg -------------------------------------------------------------------------------------

def cholesky(x, upper=False):
    """The Cholesky factor of symmetric positive-definite matrices (lower, or its
    transpose with ``upper``)."""
    try:
        out = _la.cholesky(_tensor(x))
    except Exception as exc:
        raise ValueError(f"Cholesky decomposition failed: {exc}") from None
    return _mT(out) if upper else out


def cholesky_inverse(x, upper=False):
    """The inverse of ``L L^T`` (``U^T U`` with ``upper``) from its Cholesky factor ``x``."""
    x = _tensor(x)
    n = x._value.shape[-1]
    eye_ = _core.broadcast_to(_const(x, np.eye(n)), tuple(x._value.shape))
    inv_chol = _la.triangular_solve(x, eye_, lower=not upper)
    if upper:
        return _la.matmul(inv_chol, inv_chol, transpose_b=True)
    return _la.matmul(inv_chol, inv_chol, transpose_a=True)


def det(x):
    """The determinant of square matrices."""
    return _la.det(_tensor(x))


def eigh(x):
    """The eigenvalues (ascending) and eigenvectors of symmetric matrices."""
    return tuple(_la.eigh(_tensor(x)))


def _assert_matrices(x):
    if x._value.ndim < 2:
        raise ValueError(f"Expected input to have rank >= 2. Received input with shape "
                         f"{tuple(x._value.shape)}.")


def _assert_square(x):
    m, n = x._value.shape[-2:]
    if m != n:
        raise ValueError(f"Expected a square matrix. Received non-square input with shape "
                         f"{tuple(x._value.shape)}")


def eig(x):
    """The eigenvalues and eigenvectors (complex) of square matrices, as Keras' TensorFlow
    backend (``tf.linalg.eig``)."""
    x = _tensor(x)
    _assert_matrices(x)
    _assert_square(x)
    return tuple(_la.eig(x))


def lu_factor(x):
    """``(lu, pivots)`` of square matrices, as Keras' TensorFlow backend: ``tf.linalg.lu``'s
    packed factors and the inverse of its row permutation (``tf.math.invert_permutation``,
    which takes a single matrix's permutation only)."""
    x = _tensor(x)
    _assert_matrices(x)
    try:
        _assert_square(x)
    except ValueError as e:
        raise ValueError(f"LU decomposition failed: {e}. LU decomposition is only supported "
                         "for square matrices in Tensorflow.") from None
    lu_, p = _la.lu(x)
    return lu_, _extra.invert_permutation(p)


def inv(x):
    """The inverse of square matrices."""
    return _la.inv(_tensor(x))


def slogdet(x):
    """The sign and the log absolute value of the determinant of square matrices."""
    return tuple(_la.slogdet(_tensor(x)))


def solve(a, b):
    """``x`` with ``a @ x = b`` (``b`` a matrix, or a vector for each matrix)."""
    a, b = _tensor(a), _tensor(b)
    if b._value.ndim == a._value.ndim - 1:
        return _sh.squeeze(_la.solve(a, _sh.expand_dims(b, -1)), [-1])
    return _la.solve(a, b)


def solve_triangular(a, b, lower=False):
    """``x`` with ``a @ x = b`` for triangular ``a`` (upper unless ``lower``)."""
    a, b = _tensor(a), _tensor(b)
    if b._value.ndim == a._value.ndim - 1:
        return _sh.squeeze(_la.triangular_solve(a, _sh.expand_dims(b, -1), lower=lower), [-1])
    return _la.triangular_solve(a, b, lower=lower)


def svd(x, full_matrices=True, compute_uv=True):
    """``(u, s, vh)`` with ``x = u @ diag(s) @ vh`` (only ``s`` without
    ``compute_uv``)."""
    x = _tensor(x)
    if not compute_uv:
        return _la.svd(x, full_matrices=full_matrices, compute_uv=False)
    s, u, v = _la.svd(x, full_matrices=full_matrices, compute_uv=True)
    return u, s, _mT(v)


def qr(x, mode="reduced"):
    """``(q, r)`` with ``x = q @ r`` (``mode`` ``"reduced"`` or ``"complete"``)."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"`mode` argument value not supported. Expected one of "
                         f"{{'reduced', 'complete'}}. Received: mode={mode}")
    return tuple(_la.qr(_tensor(x), full_matrices=mode == "complete"))


def pinv(x, rcond=None):
    """The Moore-Penrose pseudo-inverse (singular values below ``rcond`` times the largest
    are dropped)."""
    return _la.pinv(_tensor(x), rcond=rcond)


def matrix_rank(x, tol=None):
    """The number of singular values above ``tol`` (by default ``max(m, n) * eps`` times
    the largest)."""
    x = _tensor(x)
    s = _la.svd(x, compute_uv=False)
    if tol is None:
        eps = np.finfo(_dn(x)).eps
        tol_t = _m.multiply(_r.reduce_max(s, axis=-1, keepdims=True),
                            _float(_max(x._value.shape[-2:])) * _float(eps))
    else:
        tol_t = _sh.expand_dims(_tensor(tol, _dn(s)), -1) if isinstance(tol, Tensor) \
            else _const(s, tol)
    return _r.reduce_sum(_core.cast(_m.greater(s, tol_t), "int32"), axis=-1)


def lstsq(a, b, rcond=None):
    """The least-squares solution ``x`` of ``a @ x = b`` (``a`` a matrix), by SVD."""
    a, b = _tensor(a), _tensor(b)
    if a._value.shape[0] != b._value.shape[0]:
        raise ValueError("Leading dimensions of input arrays must match")
    vec = b._value.ndim == 1
    if vec:
        b = _sh.expand_dims(b, 1)
    if a._value.ndim != 2:
        raise TypeError(f"{a._value.ndim}-dimensional array given. Array must be "
                        "two-dimensional")
    if b._value.ndim != 2:
        raise TypeError(f"{b._value.ndim}-dimensional array given. Array must be one or "
                        "two-dimensional")
    m, n = a._value.shape
    eps = np.finfo(_dn(a)).eps
    rc = eps * _max(n, m) if rcond is None else (eps if rcond < 0 else rcond)
    u, s, vt = svd(a, full_matrices=False)
    keep = _m.greater_equal(s, _m.multiply(s[0], _float(rc)))
    safe = _m.where(keep, s, _core.ones_like(s))
    s_inv = _sh.expand_dims(_m.where(keep, _m.reciprocal(safe), _core.zeros_like(s)), 1)
    x = _la.matmul(vt, _m.multiply(s_inv, _la.matmul(u, b, transpose_a=True)),
                   transpose_a=True)
    return _sh.reshape(x, [-1]) if vec else x


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002
    """The vector norm (one axis) or matrix norm (two axes) of ``x``: ``ord`` ``None``/2,
    ``inf``, ``-inf``, 0 or any p for vectors; ``"fro"``, ``"nuc"``, 1, -1, 2, -2, ``inf``,
    ``-inf`` for matrices (integers give floatx)."""
    x = _tensor(x)
    nd = x._value.ndim
    if axis is None:
        axis = tuple(_range(nd))
    elif isinstance(axis, _int):
        axis = (axis,)
    if _any(a < -nd or a >= nd for a in axis):
        raise ValueError(f"All `axis` values must be in the range [-ndim, ndim). Received "
                         f"inputs with ndim={nd}, while axis={axis}")
    x = _cast(x, _float_dtype(x))
    if len(axis) == 1:
        ax = axis[0]
        if ord is None or ord == 2:
            return _m.sqrt(_r.reduce_sum(_m.square(x), axis=ax, keepdims=keepdims))
        if ord == np.inf:
            return _r.reduce_max(_m.abs(x), axis=ax, keepdims=keepdims)
        if ord == -np.inf:
            return _r.reduce_min(_m.abs(x), axis=ax, keepdims=keepdims)
        if ord == 0:
            return _r.reduce_sum(_core.cast(_m.not_equal(x, 0), _dn(x)), axis=ax,
                                 keepdims=keepdims)
        if isinstance(ord, str):
            raise ValueError(f"Invalid `ord` argument for vector norm. Received: ord={ord}")
        p = _const(x, ord)
        return _m.pow(_r.reduce_sum(_m.pow(_m.abs(x), p), axis=ax, keepdims=keepdims),
                      _m.divide(1.0, p))
    if len(axis) != 2:
        raise ValueError(f"Invalid axis values. Received: axis={axis}")
    row, col = axis[0] % nd, axis[1] % nd
    if ord is None or ord == "fro":
        return _m.sqrt(_r.reduce_sum(_m.square(x), axis=[row, col], keepdims=keepdims))
    if ord in (1, -1):
        c = col - 1 if not keepdims and col > row else col
        sums = _r.reduce_sum(_m.abs(x), axis=row, keepdims=keepdims)
        return (_r.reduce_max if ord == 1 else _r.reduce_min)(sums, axis=c, keepdims=keepdims)
    if ord in (np.inf, -np.inf):
        r = row - 1 if not keepdims and row > col else row
        sums = _r.reduce_sum(_m.abs(x), axis=col, keepdims=keepdims)
        return (_r.reduce_max if ord == np.inf else _r.reduce_min)(sums, axis=r,
                                                                   keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        s = _la.svd(moveaxis(x, axis, (-2, -1)), compute_uv=False)
        out = (_r.reduce_min if ord == -2 else _r.reduce_max if ord == 2
               else _r.reduce_sum)(s, axis=-1)
        if keepdims:
            for a in sorted((row, col)):
                out = _sh.expand_dims(out, a)
        return out
    raise ValueError(f"Invalid `ord` argument for matrix norm. Received: ord={ord}")


# --- image --------------------------------------------------------------------------------------

def _images_batched(images, what="images"):
    x = _tensor(images)
    if x._value.ndim not in (3, 4):
        raise ValueError(f"Invalid {what} rank: expected rank 3 (single image) or rank 4 "
                         f"(batch of images). Received input with shape: "
                         f"{what}.shape={tuple(x._value.shape)}")
    single = x._value.ndim == 3
    return (_sh.expand_dims(x, 0) if single else x), single


def _image_in(images, data_format, what="images"):
    """4-D channels-last images, whether they were one image, whether channels first."""
    x, single = _images_batched(images, what)
    cf = _data_format(data_format) == "channels_first"
    return (_to_last(x) if cf else x), single, cf


def _image_out(x, single, cf):
    if cf:
        x = _to_first(x)
    return _sh.squeeze(x, [0]) if single else x


def resize(images, size, interpolation="bilinear", antialias=False,
           crop_to_aspect_ratio=False, pad_to_aspect_ratio=False, fill_mode="constant",
           fill_value=0.0, data_format=None):
    """``images`` resized to ``size`` (height, width) by ``interpolation`` (``"bilinear"``,
    ``"nearest"``, ``"bicubic"``, ``"area"``, ``"lanczos3"``, ``"lanczos5"``), first
    centre-cropped or padded (with ``fill_value``) to the target aspect ratio on request."""
    from .image import resize as _resize
    if len(size) != 2:
        raise ValueError(f"Expected `size` to be a tuple of 2 integers. Received: size={size}")
    if size[0] <= 0 or size[1] <= 0:
        raise ValueError(f"`size` must have positive height and width. Received: size={size}")
    if pad_to_aspect_ratio and crop_to_aspect_ratio:
        raise ValueError("Only one of `pad_to_aspect_ratio` & `crop_to_aspect_ratio` can be "
                         "`True`.")
    if interpolation not in ("bilinear", "nearest", "lanczos3", "lanczos5", "bicubic", "area"):
        raise ValueError(f"Invalid value for argument `interpolation`. Expected of one "
                         f"('bilinear', 'nearest', 'lanczos3', 'lanczos5', 'bicubic', 'area'). "
                         f"Received: interpolation={interpolation}")
    if fill_mode != "constant":
        raise ValueError(f"Invalid value for argument `fill_mode`. Only `'constant'` is "
                         f"supported. Received: fill_mode={fill_mode}")
    x, single, cf = _image_in(images, data_format)
    h, w = x._value.shape[1:3]
    th, tw = _int(size[0]), _int(size[1])
    f32 = np.float32
    if crop_to_aspect_ratio:
        ch = _max(_min(h, _int(f32(w * th) / f32(tw))), 1)
        cw = _max(_min(w, _int(f32(h * tw) / f32(th))), 1)
        top, left = _int(f32(h - ch) / f32(2)), _int(f32(w - cw) / f32(2))
        x = x[:, top:top + ch, left:left + cw, :]
    elif pad_to_aspect_ratio:
        ph = _max(h, _int(f32(w * th) / f32(tw)))
        pw = _max(w, _int(f32(h * tw) / f32(th)))
        top, left = _int(f32(ph - h) / f32(2)), _int(f32(pw - w) / f32(2))
        if top > 0:
            x = _sh.pad(x, [[0, 0], [top, top], [0, 0], [0, 0]], constant_values=fill_value)
        if left > 0:
            x = _sh.pad(x, [[0, 0], [0, 0], [left, left], [0, 0]], constant_values=fill_value)
    out = _resize(x, (th, tw), method=interpolation, antialias=antialias)
    d = _dn(x)
    if _dn(out) != d:
        out = saturate_cast(_m.round(out) if _is_int(d) else out, d)
    return _image_out(out, single, cf)


def _transform_dtype(out, d):
    if _is_float(d):
        return _cast(out, d)
    return _core.cast(_m.round(out), d)


def affine_transform(images, transform, interpolation="bilinear", fill_mode="constant",
                     fill_value=0, data_format=None):
    """``images`` mapped by the projective ``transform`` ``[a0, a1, a2, b0, b1, b2, c0,
    c1]`` (one, or one per image): output pixel ``(x, y)`` samples the input at
    ``((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k)``, ``k = c0 x + c1 y + 1``;
    ``fill_mode`` ``"constant"``, ``"nearest"``, ``"wrap"`` or ``"reflect"``."""
    from .layers_preprocessing import affine_transform as _affine
    x = _tensor(images)
    t = _tensor(transform)
    if t._value.ndim not in (1, 2):
        raise ValueError(f"Invalid transform rank: expected rank 1 (single transform) or rank "
                         f"2 (batch of transforms). Received input with shape: "
                         f"transform.shape={tuple(t._value.shape)}")
    d = _dn(x)
    out = _affine(x, _core.cast(t, "float32"), interpolation=interpolation,
                  fill_mode=fill_mode, fill_value=fill_value,
                  data_format=_data_format(data_format))
    return _transform_dtype(out, d)


_image_affine = affine_transform


def _homography(start, end):
    """The 8 projective coefficients mapping ``end`` points onto ``start`` points."""
    sx, sy = [start[:, i, 0] for i in _range(4)], [start[:, i, 1] for i in _range(4)]
    ex, ey = [end[:, i, 0] for i in _range(4)], [end[:, i, 1] for i in _range(4)]
    zero, one = _core.zeros_like(ex[0]), _core.ones_like(ex[0])
    rows = []
    for i in _range(4):
        rows.append(_sh.stack([ex[i], ey[i], one, zero, zero, zero,
                               _m.negative(_m.multiply(sx[i], ex[i])),
                               _m.negative(_m.multiply(sx[i], ey[i]))], axis=-1))
        rows.append(_sh.stack([zero, zero, zero, ex[i], ey[i], one,
                               _m.negative(_m.multiply(sy[i], ex[i])),
                               _m.negative(_m.multiply(sy[i], ey[i]))], axis=-1))
    a = _sh.stack(rows, axis=1)
    b = _sh.expand_dims(_sh.stack([v for i in _range(4) for v in (sx[i], sy[i])], axis=-1), -1)
    return _sh.reshape(_la.solve(a, b), [-1, 8])


def perspective_transform(images, start_points, end_points, interpolation="bilinear",
                          fill_value=0, data_format=None):
    """``images`` warped so that the four ``start_points`` (``[4, 2]`` x, y pairs, or one
    set per image) land on ``end_points``."""
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError(f"Invalid value for argument `interpolation`. Expected of one "
                         f"('nearest', 'bilinear'). Received: interpolation={interpolation}")
    x = _tensor(images)
    sp, ep = _tensor(start_points, "float32"), _tensor(end_points, "float32")
    for name_, p in (("start_points", sp), ("end_points", ep)):
        if p._value.ndim not in (2, 3) or tuple(p._value.shape[-2:]) != (4, 2):
            raise ValueError(f"Invalid {name_} shape: expected (4,2) for a single image or "
                             f"(N,4,2) for a batch. Received shape: {tuple(p._value.shape)}")
    if sp._value.shape != ep._value.shape:
        raise ValueError(f"start_points and end_points must have the same shape. Received "
                         f"start_points.shape={tuple(sp._value.shape)}, "
                         f"end_points.shape={tuple(ep._value.shape)}")
    if sp._value.ndim == 2:
        sp, ep = _sh.expand_dims(sp, 0), _sh.expand_dims(ep, 0)
    return _image_affine(x, _homography(sp, ep), interpolation=interpolation,
                            fill_mode="constant", fill_value=fill_value,
                            data_format=data_format)


def map_coordinates(inputs, coordinates, order, fill_mode="constant", fill_value=0):
    """``inputs`` sampled at ``coordinates`` (``[rank(inputs), ...]``) by nearest
    (``order=0``) or linear (``order=1``) interpolation; outside points follow
    ``fill_mode`` (``"constant"``: ``fill_value``, ``"nearest"``, ``"wrap"``, ``"mirror"``,
    ``"reflect"``)."""
    x = _tensor(inputs)
    coords = _tensor(coordinates)
    if coords._value.shape[0] != x._value.ndim:
        raise ValueError(f"First dim of `coordinates` must be the same as the rank of "
                         f"`inputs`. Received inputs with shape: {tuple(x._value.shape)} and "
                         f"coordinate leading dim of {coords._value.shape[0]}")
    if coords._value.ndim < 2:
        raise ValueError(f"Invalid coordinates rank: expected at least rank 2. Received input "
                         f"with shape: {tuple(coords._value.shape)}")
    if fill_mode not in ("constant", "nearest", "wrap", "mirror", "reflect"):
        raise ValueError(f"Invalid value for argument `fill_mode`. Expected one of "
                         f"{{'constant', 'nearest', 'wrap', 'mirror', 'reflect'}}. Received: "
                         f"fill_mode={fill_mode}")
    if order not in (0, 1):
        raise NotImplementedError("map_coordinates currently requires order<=1")
    fill = _tensor(fill_value, _dn(x))

    def nodes(c):
        if order == 0:
            c = c if _is_int(_dn(c)) else _m.round(c)
            return [(_core.cast(c, "int32"), None)]
        lower = _m.floor(c)
        upper_w = _m.subtract(c, lower)
        idx = _core.cast(lower, "int32")
        return [(idx, _m.subtract(1.0, upper_w)), (_m.add(idx, 1), upper_w)]

    def fix(i, n):
        if fill_mode == "constant":
            return _m.clip_by_value(i, 0, n - 1), _m.logical_and(_m.greater_equal(i, 0),
                                                                  _m.less(i, n))
        if fill_mode == "nearest":
            return _m.clip_by_value(i, 0, n - 1), None
        if fill_mode == "wrap":
            return _m.floormod(i, n), None
        i = _m.abs(i)
        mod_ = _m.floormod(i, 2 * n)
        under = _m.less(mod_, n)
        i = _m.where(under, mod_, _m.subtract(2 * n, mod_))
        if fill_mode == "reflect":
            i = _m.where(under, i, _m.subtract(i, 1))
        return i, None
    axes_nodes = []
    for c, n in zip(_sh.unstack(coords, axis=0), x._value.shape):
        axes_nodes.append([(fix(i, n), w) for i, w in nodes(c)])
    out = None
    wdt = None
    for combo in itertools.product(*axes_nodes):
        idx = _sh.stack([i for (i, _), _ in combo], axis=-1)
        val = _sh.gather_nd(x, idx)
        weights = [w for _, w in combo if w is not None]
        wdt = _dn(weights[0]) if weights else _dn(x)
        val = _cast(val, wdt)
        valid = [v for (_, v), _ in combo if v is not None]
        if valid:
            ok = valid[0]
            for v in valid[1:]:
                ok = _m.logical_and(ok, v)
            val = _m.where(ok, val, _cast(fill, wdt))
        for w in weights:
            val = _m.multiply(w, val)
        out = val if out is None else _m.add(out, val)
    if _is_int(_dn(x)) and _is_float(wdt):
        out = _m.round(out)
    return _cast(out, _dn(x))


def gaussian_blur(images, kernel_size=(3, 3), sigma=(1.0, 1.0), data_format=None):
    """``images`` convolved ("same" padding, per channel) with a Gaussian of
    ``kernel_size`` and ``sigma``."""
    x, single, cf = _image_in(images, data_format)
    d = _dn(x)
    ks = _tuple(kernel_size, 2)
    sg = [_float(s) for s in (sigma if isinstance(sigma, (list, tuple)) else (sigma, sigma))]

    def g1(n, s):
        v = np.arange(n, dtype=np.float64) - (n - 1) / 2.0
        k = np.exp(-0.5 * (v / s) ** 2)
        return k / k.sum()
    kernel = np.outer(g1(ks[1], sg[1]), g1(ks[0], sg[0])).reshape(ks[0], ks[1], 1, 1)
    c = x._value.shape[-1]
    kernel = _const(x, np.tile(kernel, (1, 1, c, 1)), d)
    out = _nn.depthwise_conv2d(x, kernel, [1, 1, 1, 1], "SAME")
    return _image_out(out, single, cf)


def _color(images, data_format, fn):
    x, single, cf = _image_in(images, data_format)
    if not _is_float(_dn(x)):
        raise ValueError(f"Invalid images dtype: expected float dtype. Received: "
                         f"images.dtype={_dn(x)}")
    return _image_out(fn(x), single, cf)


def rgb_to_hsv(images, data_format=None):
    """RGB images (floats in [0, 1]) to hue, saturation, value."""
    from .image import rgb_to_hsv as _f
    return _color(images, data_format, _f)


def hsv_to_rgb(images, data_format=None):
    """Hue, saturation, value images to RGB."""
    from .image import hsv_to_rgb as _f
    return _color(images, data_format, _f)


def rgb_to_grayscale(images, data_format=None):
    """RGB images to one channel (``0.2989 R + 0.587 G + 0.114 B``), in their dtype."""
    x = _tensor(images)
    if x._value.ndim not in (3, 4):
        raise ValueError(f"Invalid images rank: expected rank 3 (single image) or rank 4 "
                         f"(batch of images). Received input with shape: "
                         f"images.shape={tuple(x._value.shape)}")
    axis = -1 if _data_format(data_format) == "channels_last" else -3
    if x._value.shape[axis] not in (1, 3):
        raise ValueError(f"Invalid channel size: expected 3 (RGB) or 1 (Grayscale). Received "
                         f"input with shape: images.shape={tuple(x._value.shape)}")
    if x._value.shape[axis] == 1:
        return _core.identity(x)
    d = _dn(x)
    y = _cast(x, _result_type(d, _float))
    w = _const(y, [0.2989, 0.5870, 0.1140])
    y = _la.tensordot(y, w, [[axis % y._value.ndim], [0]])
    return _cast(_sh.expand_dims(y, axis), d)


def sobel_edges(images, data_format=None):
    """The Sobel gradients of 4-D images: ``[..., channels, 2]`` (dy, dx)."""
    from .image import sobel_edges as _sobel
    x = _tensor(images)
    cf = _data_format(data_format) == "channels_first"
    if cf:
        x = _to_last(x)
    out = _sobel(x)
    return _sh.transpose(out, [0, 3, 1, 2, 4]) if cf else out


def extract_patches(images, size, strides=None, dilation_rate=1, padding="valid",
                    data_format=None):
    """The ``size`` patches of ``images`` flattened into channels (``strides`` default to
    ``size``); a 3-tuple ``size`` extracts 3-D patches of volumes."""
    if not isinstance(size, _int):
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"Invalid `size` argument. Expected an int or a tuple. Received: "
                            f"size={size} of type {type(size).__name__}")
        if len(size) not in (2, 3):
            raise ValueError(f"Invalid `size` argument. Expected a tuple of length 2 or 3. "
                             f"Received: size={size} with length {len(size)}")
        if len(size) == 3:
            return _patches(images, size, _tuple(strides or size, 3), dilation_rate, padding,
                            data_format, 3)
    return _patches(images, _tuple(size, 2), strides if strides else size, dilation_rate,
                    padding, data_format, 2)


def extract_patches_3d(volumes, size, strides=None, dilation_rate=1, padding="valid",
                       data_format=None):
    """The ``size`` 3-D patches of ``volumes`` flattened into channels (``strides`` default
    to ``size``)."""
    size = _tuple(size, 3)
    strides = size if strides is None else _tuple(strides, 3)
    return _patches(volumes, size, strides, dilation_rate, padding, data_format, 3)


def _patches(x, size, strides, dilation_rate, padding, data_format, nsp):
    x = _tensor(x)
    df = _data_format(data_format)
    c = x._value.shape[-1] if df == "channels_last" else x._value.shape[-nsp - 1]
    out_dim = _int(np.prod(size)) * c
    kernel = _const(x, np.eye(out_dim).reshape(tuple(size) + (c, out_dim)))
    single = x._value.ndim == nsp + 1
    if single:
        x = _sh.expand_dims(x, 0)
    out = conv(x, kernel, strides=strides, padding=padding, data_format=df,
               dilation_rate=dilation_rate)
    return _sh.squeeze(out, [0]) if single else out


def _image_sides(images, data_format, kind, heights, widths):
    """The checks pad_images and crop_images share: ``images`` as a tensor of rank 3 or 4,
    exactly two of ``(top_<kind>, bottom_<kind>, target_height)`` given, and two of
    ``(left_<kind>, right_<kind>, target_width)``; returns ``(x, channels_last, height,
    width)``."""
    x = _tensor(images)
    if x._value.ndim not in (3, 4):
        raise ValueError(f"Invalid images rank: expected rank 3 (single image) or rank 4 "
                         f"(batch of images). Received: images.shape={tuple(x._value.shape)}")
    _check_two(*zip((f"top_{kind}", f"bottom_{kind}", "target_height"), heights))
    _check_two(*zip((f"left_{kind}", f"right_{kind}", "target_width"), widths))
    cl = _data_format(data_format) == "channels_last"
    h, w = x._value.shape[-3:-1] if cl else x._value.shape[-2:]
    return x, cl, h, w


def pad_images(images, top_padding=None, left_padding=None, bottom_padding=None,
               right_padding=None, target_height=None, target_width=None, data_format=None):
    """``images`` padded with zeros (two of ``top_padding``, ``bottom_padding``,
    ``target_height`` given, and two of the width ones)."""
    x, cl, h, w = _image_sides(images, data_format, "padding",
                               (top_padding, bottom_padding, target_height),
                               (left_padding, right_padding, target_width))
    if top_padding is None:
        top_padding = target_height - bottom_padding - h
    if bottom_padding is None:
        bottom_padding = target_height - top_padding - h
    if left_padding is None:
        left_padding = target_width - right_padding - w
    if right_padding is None:
        right_padding = target_width - left_padding - w
    for name_, v in (("top_padding", top_padding), ("left_padding", left_padding),
                     ("right_padding", right_padding), ("bottom_padding", bottom_padding)):
        if v < 0:
            raise ValueError(f"{name_} must be >= 0. Received: {name_}={v}")
    pads = [[top_padding, bottom_padding], [left_padding, right_padding]]
    pads = pads + [[0, 0]] if cl else [[0, 0]] + pads
    if x._value.ndim == 4:
        pads = [[0, 0]] + pads
    return _sh.pad(x, pads)


def _check_two(*named):
    if [v for _, v in named].count(None) != 1:
        listing = ", ".join(n for n, _ in named)
        got = ", ".join(f"{n}={v}" for n, v in named)
        raise ValueError(f"Must specify exactly two of {listing}. Received: {got}")
    for n, v in named:
        if v is not None and v < 0:
            raise ValueError(f"{n} must be >= 0. Received: {n}={v}")


def crop_images(images, top_cropping=None, left_cropping=None, bottom_cropping=None,
                right_cropping=None, target_height=None, target_width=None, data_format=None):
    """``images`` cropped (two of ``top_cropping``, ``bottom_cropping``, ``target_height``
    given, and two of the width ones)."""
    x, cl, h, w = _image_sides(images, data_format, "cropping",
                               (top_cropping, bottom_cropping, target_height),
                               (left_cropping, right_cropping, target_width))
    if top_cropping is None:
        top_cropping = h - target_height - bottom_cropping
    if target_height is None:
        target_height = h - bottom_cropping - top_cropping
    if left_cropping is None:
        left_cropping = w - target_width - right_cropping
    if target_width is None:
        target_width = w - right_cropping - left_cropping
    for name_, v in (("top_cropping", top_cropping), ("target_height", target_height),
                     ("left_cropping", left_cropping), ("target_width", target_width)):
        if v < 0:
            raise ValueError(f"{name_} must be >= 0. Received: {name_}={v}")
    rows = _slice(top_cropping, top_cropping + target_height)
    cols = _slice(left_cropping, left_cropping + target_width)
    key = (rows, cols, _slice(None)) if cl else (_slice(None), rows, cols)
    if x._value.ndim == 4:
        key = (_slice(None),) + key
    return x[key]


def ssim(image1, image2, max_val=1.0, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03,
         data_format=None):
    """The structural similarity of two images (a Gaussian ``filter_size`` window, "valid"
    positions, averaged over the image and its channels; one value per image)."""
    a, b = _tensor(image1), _tensor(image2)
    orig = _dn(a)
    d = _result_type(orig, _float)
    a, b = _cast(a, d), _cast(b, d)
    for name_, t in (("image1", a), ("image2", b)):
        if t._value.ndim not in (3, 4):
            raise ValueError(f"Invalid {name_} rank: expected rank 3 (single image) or rank 4 "
                             f"(batch of images). Received input with shape: "
                             f"{name_}.shape={tuple(t._value.shape)}")
    single = a._value.ndim == 3
    if single:
        a, b = _sh.expand_dims(a, 0), _sh.expand_dims(b, 0)
    if _data_format(data_format) == "channels_first":
        a, b = _to_last(a), _to_last(b)
    n, h, w, c = a._value.shape
    v = np.arange(filter_size, dtype=np.float64) - (filter_size - 1) / 2.0
    g = np.exp(-v ** 2 / (2.0 * filter_sigma ** 2))
    g /= g.sum()
    kernel = _const(a, np.outer(g, g).reshape(filter_size, filter_size, 1, 1))
    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2

    def per_channel(t):
        return _sh.reshape(_sh.transpose(t, [0, 3, 1, 2]), [-1, h, w, 1])

    def blur(t):
        return _nn.convolution(t, kernel, [1, 1], "VALID")
    a, b = per_channel(a), per_channel(b)
    mu1, mu2 = blur(a), blur(b)
    mu1_sq, mu2_sq, mu12 = _m.multiply(mu1, mu1), _m.multiply(mu2, mu2), _m.multiply(mu1, mu2)
    s1 = _m.subtract(blur(_m.multiply(a, a)), mu1_sq)
    s2 = _m.subtract(blur(_m.multiply(b, b)), mu2_sq)
    s12 = _m.subtract(blur(_m.multiply(a, b)), mu12)
    num = _m.multiply(_m.add(_m.multiply(mu12, 2.0), c1), _m.add(_m.multiply(s12, 2.0), c2))
    den = _m.multiply(_m.add(_m.add(mu1_sq, mu2_sq), c1), _m.add(_m.add(s1, s2), c2))
    val = _r.reduce_mean(_m.divide(num, den), axis=[1, 2, 3])
    out = _r.reduce_mean(_sh.reshape(val, [n, c]), axis=-1)
    if single:
        out = _sh.squeeze(out, [0])
    return _cast(out, orig)


def scale_and_translate(images, output_shape, scale, translation, spatial_dims, method,
                        antialias=True):
    """``images`` resampled along ``spatial_dims`` to ``output_shape``: output position
    ``o`` reads input position ``(o + 0.5 - translation) / scale - 0.5`` through the
    ``method`` kernel (``"linear"``, ``"cubic"``, ``"lanczos3"``, ``"lanczos5"`` and their
    aliases), widened by ``1 / scale`` when downsampling with ``antialias``."""
    methods = {"linear": "linear", "bilinear": "linear", "trilinear": "linear",
               "cubic": "cubic", "bicubic": "cubic", "tricubic": "cubic",
               "lanczos3": "lanczos3", "lanczos5": "lanczos5"}
    if method not in methods:
        raise ValueError(f"Invalid value for argument `method`. Expected of one "
                         f"{set(methods)}. Received: method={method}")
    kind = methods[method]
    x = _tensor(images)
    sc, tr = _tensor(scale), _tensor(translation)
    d = _result_type(_dn(sc), _dn(tr))
    sc, tr = _cast(sc, d), _cast(tr, d)
    if not spatial_dims:
        return x
    integer = _is_int(_dn(x))
    out = _core.cast(x, "float32") if integer else x

    def kernel(v):
        v = _m.abs(v)
        if kind == "linear":
            return _m.maximum(_m.subtract(1.0, v), 0.0)
        if kind == "cubic":
            near = _m.add(_m.multiply(_m.multiply(_m.subtract(_m.multiply(v, 1.5), 2.5), v), v),
                          1.0)
            far = _m.add(_m.multiply(_m.subtract(_m.multiply(
                _m.add(_m.multiply(v, -0.5), 2.5), v), 4.0), v), 2.0)
            return _m.where(_m.greater_equal(v, 2.0), _core.zeros_like(v),
                            _m.where(_m.greater_equal(v, 1.0), far, near))
        radius = 3.0 if kind == "lanczos3" else 5.0
        y = _m.multiply(_m.multiply(_m.sin(_m.multiply(v, np.pi)),
                                    _m.sin(_m.multiply(v, np.pi / radius))), radius)
        safe = _m.where(_m.not_equal(v, 0), _m.multiply(_m.square(v), np.pi ** 2),
                        _core.ones_like(v))
        val = _m.where(_m.greater(v, 1e-3), _m.divide(y, safe), _core.ones_like(v))
        return _m.where(_m.greater(v, radius), _core.zeros_like(v), val)
    for i, ax in enumerate(spatial_dims):
        ax = ax % x._value.ndim
        m, n = x._value.shape[ax], _int(output_shape[ax])
        inv = _m.divide(1.0, sc[i])
        kscale = _m.maximum(inv, 1.0) if antialias else _const(inv, 1.0)
        sample = _m.subtract(_m.subtract(_m.multiply(_const(inv, np.arange(n) + 0.5), inv),
                                         _m.multiply(tr[i], inv)), 0.5)
        dist = _m.divide(_m.abs(_m.subtract(_sh.expand_dims(sample, 0),
                                            _const(inv, np.arange(m).reshape(-1, 1)))),
                         kscale)
        wts = kernel(dist)
        total = _r.reduce_sum(wts, axis=0, keepdims=True)
        wts = _m.where(_m.greater(_m.abs(total), 1000.0 * _float(np.finfo(np.float32).eps)),
                       _m.divide(wts, _m.where(_m.not_equal(total, 0), total,
                                               _core.ones_like(total))),
                       _core.zeros_like(wts))
        inside = _m.logical_and(_m.greater_equal(sample, -0.5), _m.less_equal(sample, m - 0.5))
        wts = _m.where(_core.broadcast_to(_sh.expand_dims(inside, 0), (m, n)), wts,
                       _core.zeros_like(wts))
        out = moveaxis(_la.tensordot(out, _cast(wts, _dn(out)), [[ax], [0]]), -1, ax)
    if integer:
        out = _core.cast(_m.clip_by_value(_m.round(out), _cast(_r.reduce_min(x), "float32"),
                                          _cast(_r.reduce_max(x), "float32")), _dn(x))
    return out


# --- einops -------------------------------------------------------------------------------------

def rearrange(tensor, pattern, **axes_lengths):
    """``tensor``'s axes rearranged by an einops ``pattern`` (``"b h w c -> b (h w) c"``;
    grouped input axes are split using ``axes_lengths``)."""
    x = _tensor(tensor)
    left, right = re.split(r"\s*->\s*", pattern)
    in_axes = re.findall(r"\w+|\(.*?\)", left)
    out_axes = re.findall(r"\w+|\(.*?\)", right)
    lengths = dict(axes_lengths)
    sizes = {}
    for ax, dim in zip(in_axes, x._value.shape):
        group = re.match(r"\(([\w\s]+)\)", ax)
        if group:
            inner_ = group.group(1).split()
            known = [a for a in inner_ if a in lengths]
            unknown = [a for a in inner_ if a not in lengths]
            if unknown:
                lengths[unknown[0]] = dim // _int(np.prod([lengths[a] for a in known]))
            sizes.update({a: lengths[a] for a in inner_})
        else:
            sizes[ax] = dim
    groups = [re.match(r"\(([\w\s]+)\)", a).group(1).split() if a.startswith("(") else [a]
              for a in out_axes]
    flat_in = [a for ax in in_axes for a in (re.findall(r"\w+", ax) if "(" in ax else [ax])]
    decomposed = [sizes[a] for a in flat_in]
    if tuple(decomposed) != tuple(x._value.shape):
        x = _sh.reshape(x, decomposed)
    x = _sh.transpose(x, [flat_in.index(a) for g in groups for a in g])
    return _sh.reshape(x, [_int(np.prod([sizes[a] for a in g])) for g in groups])


# --- namespaces and symbolic calls --------------------------------------------------------------

def _scan_args(values, kt):
    """(whether ``values`` hold a symbolic tensor, the first tensor among them)."""
    first = None
    for v in values:
        if isinstance(v, Tensor):
            if first is None:
                first = v
        elif isinstance(v, kt):
            return True, None
        elif isinstance(v, (list, tuple, dict)):
            symbolic, inner = _scan_args(v.values() if isinstance(v, dict) else v, kt)
            if symbolic:
                return True, None
            if first is None:
                first = inner
    return False, first


def _symbolic_call(fn, args, kwargs):
    """``fn(*args, **kwargs)`` recorded as a node of a functional model (some arguments are
    symbolic tensors): an op layer whose inputs are the symbolic tensors."""
    from .keras_graph import KerasTensor, _unique
    from .layers import TFOpLambda
    structure = (tuple(args), dict(kwargs))
    flat = _nest.flatten(structure)
    slots = [i for i, v in enumerate(flat) if isinstance(v, KerasTensor)]

    def call(inputs):
        vals = list(flat)
        for i, v in zip(slots, inputs):
            vals[i] = v
        a, k = _nest.pack_sequence_as(structure, vals)
        return fn(*a, **k)
    return TFOpLambda(call, name=_unique(fn.__name__))([flat[i] for i in slots])


def _graph_aware(fn):
    """``fn`` that records a model node when called on symbolic tensors, and runs on the
    device of its tensor arguments."""
    from .keras_graph import KerasTensor

    from .backend import current_device, device_scope

    @functools.wraps(fn)
    def op(*args, **kwargs):
        symbolic, first = _scan_args((args, kwargs) if kwargs else args, KerasTensor)
        if symbolic:
            return _symbolic_call(fn, args, kwargs)
        if first is not None and first._device is not current_device():
            with device_scope(first._device):       # new tensors join the inputs' device
                return fn(*args, **kwargs)
        return fn(*args, **kwargs)
    return op


# --- complex values and spectra: Keras represents a complex tensor as (real, imag) -----------

def _complex_pair(x):
    """The complex tensor of a ``(real, imag)`` pair, with Keras' checks."""
    from .ops.math import complex as _complex
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise ValueError(f"Input `x` should be a tuple of two tensors - real and imaginary."
                         f"Received: x={x}")
    real, imag = _tensor(x[0]), _tensor(x[1])
    if tuple(real.shape) != tuple(imag.shape):
        raise ValueError(f"Input `x` should be a tuple of two tensors - real and imaginary."
                         f"Both the real and imaginary parts should have the same shape. "
                         f"Received: x[0].shape = {tuple(real.shape)}, "
                         f"x[1].shape = {tuple(imag.shape)}")
    if real._value.dtype.kind != "f" or imag._value.dtype.kind != "f":
        raise ValueError(f"At least one tensor in input `x` is not of type float."
                         f"Received: x={x}.")
    return _complex(real, imag)


def _parts(z):
    return _m.real(z), _m.imag(z)


def fft(x):
    """The FFT of the last axis of a ``(real, imag)`` pair, as a pair."""
    from . import signal
    return _parts(signal.fft(_complex_pair(x)))


def fft2(x):
    """The 2-D FFT of the last two axes of a ``(real, imag)`` pair, as a pair."""
    from . import signal
    return _parts(signal.fft2d(_complex_pair(x)))


def ifft2(x):
    """The inverse 2-D FFT of a ``(real, imag)`` pair, as a pair (Keras' conjugate form)."""
    real, imag = _tensor(x[0]), _tensor(x[1])
    hw = float(real.shape[-2] * real.shape[-1])
    fr, fi = fft2((real, -imag))
    return fr / hw, -fi / hw


def rfft(x, fft_length=None):
    """The real-input FFT of the last axis, as a ``(real, imag)`` pair."""
    from . import signal
    return _parts(signal.rfft(_tensor(x), None if fft_length is None else [fft_length]))


def irfft(x, fft_length=None):
    """The inverse of :func:`rfft` from a ``(real, imag)`` pair."""
    from . import signal
    return signal.irfft(_complex_pair(x), None if fft_length is None else [fft_length])


def _stft_window(window, sequence_length, fft_length, dtype):
    from . import signal
    if isinstance(window, str):
        make = signal.hann_window if window == "hann" else signal.hamming_window
        win = make(sequence_length, periodic=True, dtype=dtype)
    else:
        win = _tensor(window, dtype=dtype)
    if win.ndim != 1 or win.shape[-1] != sequence_length:
        raise ValueError(f"The shape of `window` must be equal to [sequence_length]."
                         f"Received: window shape={tuple(win.shape)}")
    left = (fft_length - sequence_length) // 2
    return _sh.pad(win, [[left, fft_length - sequence_length - left]])


def _check_window(window):
    if isinstance(window, str) and window not in ("hann", "hamming"):
        raise ValueError(f'If a string is passed to `window`, it must be one of `"hann"`, '
                         f'`"hamming"`. Received: window={window}')


def stft(x, sequence_length, sequence_stride, fft_length, window="hann", center=True):
    """The short-time Fourier transform of the last axis, as a ``(real, imag)`` pair
    (``center`` reflect-pads by ``fft_length // 2`` on both sides)."""
    from . import signal
    x = _tensor(x)
    if x.dtype.name not in ("float32", "float64"):
        raise TypeError(f"Invalid input type. Expected `float32` or `float64`. Received: "
                        f"input type={x.dtype.name}")
    if fft_length < sequence_length:
        raise ValueError(f"`fft_length` must equal or larger than `sequence_length`. "
                         f"Received: sequence_length={sequence_length}, "
                         f"fft_length={fft_length}")
    _check_window(window)
    if center:
        pads = [[0, 0]] * (x.ndim - 1) + [[fft_length // 2, fft_length // 2]]
        x = _sh.pad(x, pads, mode="REFLECT")
    win = None if window is None else _stft_window(window, sequence_length, fft_length,
                                                   x.dtype)
    out = signal.stft(x, frame_length=fft_length, frame_step=sequence_stride,
                      fft_length=fft_length,
                      window_fn=None if win is None else (lambda n, dtype: win))
    return _parts(out)


def istft(x, sequence_length, sequence_stride, fft_length, length=None, window="hann",
          center=True):
    """The inverse of :func:`stft` from a ``(real, imag)`` pair."""
    from . import signal
    z = _complex_pair(x)
    _check_window(window)
    frames = int(z.shape[-2])
    expected = fft_length + sequence_stride * (frames - 1)
    win_fn = None
    if window is not None:
        win = _stft_window(window, sequence_length, fft_length, _m.real(z).dtype)
        win_fn = signal.inverse_stft_window_fn(sequence_stride, lambda n, dtype: win)
    out = signal.inverse_stft(z, frame_length=fft_length, frame_step=sequence_stride,
                              fft_length=fft_length, window_fn=win_fn)
    start = 0 if not center else fft_length // 2
    if length is not None:
        end = start + length
    elif center:
        end = int(out.shape[-1]) - fft_length // 2
    else:
        end = expected
    return out[..., start:end]


def view_as_complex(x):
    """A real tensor of shape ``(..., 2)`` as a complex64 tensor of shape ``(...)``."""
    from .ops.core import cast
    x = _tensor(x)
    if x.ndim < 1 or x.shape[-1] != 2:
        raise ValueError(f"Last dimension of input must be size 2 (real and imaginary). "
                         f"Received shape: {tuple(x.shape)}")
    from .ops.math import complex as _complex
    return _complex(cast(x[..., 0], "float32"), cast(x[..., 1], "float32"))


def view_as_real(x):
    """A complex tensor as a real one with a trailing axis of (real, imag)."""
    z = _tensor(x)
    return _sh.stack([_m.real(z), _m.imag(z)], axis=-1)


def polar(abs_, angle):
    """The complex number of magnitude ``abs_`` and angle ``angle``."""
    a, t = _tensor(abs_), _tensor(angle)
    return _complex_pair((a * _m.cos(t), a * _m.sin(t)))


_NUMPY = """abs absolute add all allclose amax amin angle any append arange arccos arccosh arcsin
arcsinh arctan arctan2 arctanh argmax argmin argpartition argsort array array_split average
bartlett bincount bitwise_and bitwise_invert bitwise_left_shift bitwise_not bitwise_or
bitwise_right_shift bitwise_xor blackman broadcast_to cbrt ceil clip concatenate conj conjugate
copy corrcoef correlate cos cosh count_nonzero cross cumprod cumsum deg2rad diag diagflat
diagonal diff digitize divide divide_no_nan dot dsplit dstack einsum empty empty_like equal exp
exp2 expand_dims expm1 eye fabs flip fliplr flipud floor floor_divide fmax fmin fmod full
full_like gcd geomspace get_item greater greater_equal hamming hanning heaviside histogram
hsplit hstack hypot i0 identity imag inner isclose isfinite isin isinf isnan isneginf isposinf
isreal kaiser kron lcm ldexp left_shift less less_equal linspace log log10 log1p log2 logaddexp
logaddexp2 logical_and logical_not logical_or logical_xor logspace matmul max maximum mean
median meshgrid min minimum mod moveaxis multiply nan_to_num nanargmax nanargmin nancumprod
nancumsum nanmax nanmean nanmedian nanmin nanpercentile nanprod nanquantile nanstd nansum nanvar
ndim negative nextafter nonzero not_equal ones ones_like outer pad percentile power prod ptp
quantile rad2deg ravel real reciprocal repeat reshape right_shift roll rot90 round searchsorted
select sign signbit sin sinc sinh size slogdet sort split sqrt square squeeze stack std subtract
sum swapaxes take take_along_axis tan tanh tensordot tile trace transpose trapezoid tri tril
triu true_divide trunc unique unravel_index vander var vdot vectorize view vsplit vstack where
zeros zeros_like""".split()
_NN = """polar adaptive_average_pool adaptive_max_pool average_pool batch_normalization
binary_crossentropy categorical_crossentropy celu conv conv_transpose ctc_decode ctc_loss
depth_to_space depthwise_conv dot_product_attention elu fold gelu glu hard_shrink hard_sigmoid
hard_silu hard_swish hard_tanh layer_normalization leaky_relu log_sigmoid log_softmax max_pool
moments multi_hot normalize one_hot psnr relu relu6 rms_normalization selu separable_conv
sigmoid silu soft_shrink softmax softplus softsign space_to_depth
sparse_categorical_crossentropy sparse_plus sparse_sigmoid sparsemax squareplus swish
tanh_shrink threshold unfold""".split()
_LINALG = """cholesky cholesky_inverse det eig eigh inv jvp lstsq lu_factor matrix_rank norm pinv
qr solve solve_triangular svd""".split()
_IMAGE = """affine_transform crop_images extract_patches extract_patches_3d gaussian_blur
hsv_to_rgb map_coordinates pad_images perspective_transform resize rgb_to_grayscale rgb_to_hsv
scale_and_translate sobel_edges ssim""".split()
_CORE = """fft fft2 ifft2 rfft irfft stft istft view_as_complex view_as_real associative_scan cast cdist cond convert_to_numpy convert_to_tensor custom_gradient
dtype erf erfc erfinv extract_sequences fori_loop in_top_k is_tensor logdet logsumexp map
rearrange rsqrt saturate_cast scan scatter scatter_update segment_max segment_min segment_prod
segment_sum shape slice slice_update stop_gradient switch top_k unstack vectorized_map
while_loop""".split()

array = _named(lambda x, dtype=None: convert_to_tensor(x, dtype=dtype), "array",
               "``x`` as a tensor (of ``dtype`` when given).")

for _name in _NUMPY + _NN + _LINALG + _CORE + _IMAGE:
    if _name not in ("shape", "ndim", "dtype", "is_tensor", "convert_to_numpy", "vectorize",
                     "custom_gradient"):
        globals()[_name] = _graph_aware(globals()[_name])


def _namespace(name, doc, names):
    mod = types.ModuleType(f"{__name__}.{name}", doc)
    mod.__package__ = __name__
    for n in names:
        setattr(mod, n, globals()[n])
    mod.__all__ = sorted(names)
    sys.modules[mod.__name__] = mod
    return mod


numpy = _namespace("numpy", "Keras' NumPy-style ops (``keras.ops.numpy``).", _NUMPY)
nn = _namespace("nn", "Keras' neural-network ops (``keras.ops.nn``).", _NN)
linalg = _namespace("linalg", "Keras' linear algebra ops (``keras.ops.linalg``).", _LINALG)
image = _namespace("image", "Keras' image ops (``keras.ops.image``).", _IMAGE)
for _name in _IMAGE:          # (only under ops.image, as in Keras)
    del globals()[_name]
__all__ = sorted(set(_NUMPY + _NN + _LINALG + _CORE)) + ["image", "linalg", "nn", "numpy"]
del _name, _fn


def __dir__():
    return list(__all__)
